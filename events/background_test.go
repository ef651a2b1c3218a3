package events_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestStartStop: the service under the server's background contract
// (internal/startstop). A second Start changes nothing; Stop returns once
// the service has stopped, and its subscriptions end with ErrClosed; a
// second Stop changes nothing.
func TestStartStop(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ev, err := events.New(db.Gorm, events.Options{Logger: slog.New(slog.DiscardHandler), Poll: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := ev.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		sub := ev.Subscribe(t.Context(), events.Filter{}, nil)
		(&env{ev: ev}).waitLive(t, 1)
		ev.Stop()
		select {
		case _, open := <-sub.C:
			if open || !errors.Is(sub.Err(), events.ErrClosed) {
				t.Errorf("after Stop the subscription got an event (%v) or ended with %v; want ErrClosed", open, sub.Err())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a subscription still open 5s after Stop returned")
		}
		ev.Stop()
	})
}
