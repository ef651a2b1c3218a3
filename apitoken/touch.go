package apitoken

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// touchTimeout bounds the write of a token's last use. A healthy database
// takes milliseconds; past a second it is stalled or locked (on SQLite,
// another process holding the write lock), and since the server's SQLite
// has one connection, a write waiting there keeps every other query of
// this server waiting too.
const touchTimeout = time.Second

// touches writes tokens' last uses off the requests that make them: the
// write is best-effort, so a database slow to take it delays and fails no
// request. At most one write per token is in flight; a use that comes
// while one is leaves it to that one. After a write that failed, the
// token's uses write nothing for TouchEvery, the most lastUsedAt may lag
// anyway: a database that refuses writes is not asked again on every
// lookup, each holding SQLite's one connection for up to touchTimeout.
type touches struct {
	every   time.Duration // Options.TouchEvery
	timeout time.Duration // touchTimeout; tests set another
	now     func() time.Time
	fails   *logrepeat.Failures

	mu sync.Mutex
	// held are the token ids whose uses write nothing now: zero while a
	// write is in flight, else until when, after a failed one.
	held   map[string]time.Time
	closed bool
	wg     sync.WaitGroup
	// ctx ends at close, ending the writes in flight.
	ctx    context.Context
	cancel context.CancelFunc
}

func newTouches(every time.Duration, now func() time.Time, log *slog.Logger) *touches {
	ctx, cancel := context.WithCancel(context.Background())
	return &touches{every: every, timeout: touchTimeout, now: now, held: map[string]time.Time{}, ctx: ctx, cancel: cancel,
		fails: &logrepeat.Failures{Logger: log, What: "record an API token's last use (requests go on; a later use records it)"}}
}

// start runs write for token id in the background, within the timeout,
// unless id is held or close has been called. A failure is logged
// (logrepeat: the first, then a line a minute while they go on).
func (t *touches) start(id string, write func(ctx context.Context) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if until, ok := t.held[id]; t.closed || ok && (until.IsZero() || now.Before(until)) {
		return
	}
	t.held[id] = time.Time{}
	retry := now.Add(t.every)
	t.wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.ctx, t.timeout)
		err := write(ctx)
		cancel()
		if t.ctx.Err() == nil {
			t.fails.Report(err)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if err != nil {
			t.held[id] = retry
		} else {
			delete(t.held, id)
		}
	})
}

// close ends the writes in flight, waits for them, and starts no more.
func (t *touches) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}

// wait returns once no write is in flight (tests).
func (t *touches) wait() { t.wg.Wait() }
