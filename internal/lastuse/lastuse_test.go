package lastuse

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newWriter(t *testing.T, logs *logtest.Buffer) (*Writer, *stripedouble.ManualClock) {
	t.Helper()
	c := stripedouble.NewManualClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	w := New(Config{Every: time.Minute, Keep: 30 * time.Minute, Now: c.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), What: "record a thing's last use"})
	t.Cleanup(w.Close)
	return w, c
}

// One write per id is in flight; a use meanwhile is left to it, and
// Unwritten gives the use being written until it lands.
func TestWriterOneInFlight(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	w, c := newWriter(t, &logs)
	release, started := make(chan struct{}), make(chan struct{}, 10)
	write := func(context.Context) error { started <- struct{}{}; <-release; return nil }
	at := c.Now()
	w.Start("a", at, write)
	<-started
	c.Add(2 * time.Minute)
	w.Start("a", c.Now(), write) // in flight: not started
	if got, ok := w.Unwritten("a"); !ok || !got.Equal(at) {
		t.Errorf("Unwritten while the write is in flight = %v, %v; want %v", got, ok, at)
	}
	if _, ok := w.Unwritten("b"); ok {
		t.Error("Unwritten gives a use of an id never started")
	}
	close(release)
	w.Wait()
	if n := len(started); n != 0 {
		t.Errorf("%d more writes started while one was in flight", n)
	}
	if _, ok := w.Unwritten("a"); ok {
		t.Error("Unwritten gives a use that was written")
	}
	if logs.String() != "" {
		t.Errorf("logged without a failure: %q", logs.String())
	}
}

// A failed write is logged; the id's uses write nothing for Every, and
// Unwritten gives the use for Keep, after which it is forgotten.
func TestWriterFailure(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	w, c := newWriter(t, &logs)
	var n int
	fail := func(context.Context) error { n++; return sql.ErrConnDone }
	at := c.Now()
	w.Start("a", at, fail)
	w.Wait()
	if !strings.Contains(logs.String(), "record a thing's last use") || !strings.Contains(logs.String(), sql.ErrConnDone.Error()) {
		t.Errorf("the failure was not logged: %q", logs.String())
	}
	c.Add(59 * time.Second)
	w.Start("a", c.Now(), fail)
	w.Wait()
	if n != 1 {
		t.Errorf("%d writes, want 1: none within Every of a failure", n)
	}
	if got, ok := w.Unwritten("a"); !ok || !got.Equal(at) {
		t.Errorf("Unwritten after the failure = %v, %v; want %v", got, ok, at)
	}
	c.Add(time.Second)
	w.Start("a", c.Now(), fail)
	w.Wait()
	if n != 2 {
		t.Errorf("%d writes, want 2: one Every after a failure", n)
	}
	c.Add(30 * time.Minute)
	if _, ok := w.Unwritten("a"); ok {
		t.Error("Unwritten gives a failed use older than Keep")
	}
	// The next failure, of another id, drops it.
	w.Start("b", c.Now(), fail)
	w.Wait()
	w.mu.Lock()
	_, kept := w.pending["a"]
	w.mu.Unlock()
	if kept {
		t.Error("a failed use older than Keep is still held after another failure")
	}
	w.Start("b", c.Now(), func(context.Context) error { return nil })
	w.Wait()
	if _, ok := w.Unwritten("b"); !ok {
		t.Error("a write within Every of a failure ran")
	}
}

// A write is given up after the Timeout; Close ends one in flight,
// unlogged, and starts none after.
func TestWriterTimeoutAndClose(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	w, c := newWriter(t, &logs)
	w.Timeout = time.Millisecond
	wait := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	w.Start("a", c.Now(), wait)
	w.Wait() // returns: the write was given up
	if !strings.Contains(logs.String(), "deadline exceeded") {
		t.Errorf("the timeout was not logged: %q", logs.String())
	}
	w.Timeout = time.Hour
	started := make(chan struct{})
	w.Start("b", c.Now(), func(ctx context.Context) error { close(started); return wait(ctx) })
	<-started
	w.Close() // returns only once the waiting write has ended
	if strings.Contains(logs.String(), "canceled") {
		t.Errorf("a write ended by Close was logged: %q", logs.String())
	}
	c.Add(time.Hour)
	ran := false
	w.Start("c", c.Now(), func(context.Context) error { ran = true; return nil })
	w.Wait()
	if ran {
		t.Error("a write started after Close")
	}
}
