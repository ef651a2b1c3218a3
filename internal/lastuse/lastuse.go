// Package lastuse writes when something a request presents (an API token,
// a staff session) was last used beside the request, not on its path: the
// write is best-effort, so a database slow to take it (a lock another
// process holds, an I/O stall) delays and fails no request.
package lastuse

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// DefaultTimeout bounds one write. A healthy database takes milliseconds;
// past a second it is stalled or locked (on SQLite, another process
// holding the write lock), and since the server's SQLite has one
// connection, a write waiting there keeps every other query of this
// server waiting too.
const DefaultTimeout = time.Second

// Config tunes a Writer.
type Config struct {
	// Every is how stale a stored last use may get before a use writes it
	// again. After a failed write the id's uses write nothing until Every
	// after that write's Start (not its failure, up to the timeout later),
	// the most the stored use may lag anyway: a database that refuses
	// writes is not asked again on every request, each holding SQLite's
	// one connection for up to the timeout.
	Every time.Duration
	// Keep is how long after a use whose write failed Unwritten still
	// gives it; zero means Every.
	Keep time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger takes the failed writes; nil means slog.Default().
	Logger *slog.Logger
	// What is the first failure's log message ("record an API token's
	// last use (requests go on; a later use records it)").
	What string
}

// Writer runs the writes of last uses in the background. At most one
// write per id is in flight; a use that comes while one is leaves it to
// that one. Failures are logged through logrepeat: the first, then a line
// a minute while they go on, then one when a write works again.
type Writer struct {
	// Timeout bounds each write: DefaultTimeout, unless a test sets
	// another (between Starts, from the goroutine that calls them).
	Timeout time.Duration

	every, keep time.Duration
	now         func() time.Time
	fails       *logrepeat.Failures

	mu sync.Mutex
	// pending are the ids with a write in flight or, for a while, failed.
	pending map[string]pending
	closed  bool
	wg      sync.WaitGroup
	// ctx ends at Close, ending the writes in flight.
	ctx    context.Context
	cancel context.CancelFunc
}

// pending is an id's use the database may not show yet.
type pending struct {
	at time.Time // the use being written, or whose write failed
	// retry is zero while the write is in flight; after it failed, the
	// time from which a use may write again.
	retry time.Time
}

// New returns a Writer; Close stops it.
func New(cfg Config) *Writer {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{Timeout: DefaultTimeout, every: cfg.Every, keep: cfg.Keep, now: cfg.Now,
		pending: map[string]pending{}, ctx: ctx, cancel: cancel,
		fails: &logrepeat.Failures{Logger: cfg.Logger, What: cfg.What}}
	if w.keep <= 0 {
		w.keep = w.every
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// Start runs write, which records id's use at at, in the background
// within the Timeout, unless a write of id is in flight, one started less
// than Every ago failed, or Close has been called.
func (w *Writer) Start(id string, at time.Time, write func(ctx context.Context) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if p, ok := w.pending[id]; w.closed || ok && (p.retry.IsZero() || now.Before(p.retry)) {
		return
	}
	w.pending[id] = pending{at: at}
	retry, timeout := now.Add(w.every), w.Timeout
	w.wg.Go(func() {
		ctx, cancel := context.WithTimeout(w.ctx, timeout)
		err := write(ctx)
		cancel()
		if w.ctx.Err() == nil {
			w.fails.Report(err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err == nil {
			delete(w.pending, id)
			return
		}
		w.pending[id] = pending{at: at, retry: retry}
		w.forget(w.now())
	})
}

// forget drops the failed writes' uses older than Keep, which Unwritten
// no longer gives and which block no write. It runs after each failure,
// so the map holds no more than the ids that failed within Keep of the
// last one. Called with mu held.
func (w *Writer) forget(now time.Time) {
	for id, p := range w.pending {
		if !p.retry.IsZero() && now.Sub(p.at) >= w.keep && !now.Before(p.retry) {
			delete(w.pending, id)
		}
	}
}

// Unwritten is id's use the database may not show yet: the one whose write
// is in flight, or whose write failed less than Keep ago. ok is false when
// there is none.
func (w *Writer) Unwritten(id string) (at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[id]
	if !ok || !p.retry.IsZero() && w.now().Sub(p.at) >= w.keep {
		return time.Time{}, false
	}
	return p.at, true
}

// Close ends the writes in flight, waits for them, and starts no more.
func (w *Writer) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// Wait returns once no write is in flight (tests).
func (w *Writer) Wait() { w.wg.Wait() }
