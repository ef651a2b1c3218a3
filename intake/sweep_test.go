package intake_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// clock is a settable clock shared by a Service and its Sweeper.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// receiveAt stores an event of payment ref received at the clock's time.
func receiveAt(t *testing.T, s *intake.Service, id, ref string) {
	t.Helper()
	body := fmt.Sprintf(`{"id":%q,"object":"event","created":%d,"type":"payment_intent.succeeded",`+
		`"data":{"object":{"id":%q,"object":"payment_intent","status":"succeeded"}}}`, id, time.Now().Unix(), ref)
	if _, err := s.Receive(t.Context(), []byte(body), "signed"); err != nil {
		t.Fatal(err)
	}
}

// Stored events, whole payloads that may carry a payer's billing details,
// are swept once they are older than intake.Retention, in batches, applied
// or not; younger ones stay for the dedupe and the admin's page.
func TestSweepDeletesEventsPastRetention(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		start := time.Now().UTC()
		c := &clock{now: start}
		s, err := intake.New(db.Gorm, intake.Options{Processor: "stripe", Apply: &applier{notYet: map[string]bool{"pi_wait": true}},
			Decode: stripe.DecodeEvent, Now: c.Now,
			Verify: func(p []byte, _ string, _ time.Time) (processor.Event, error) { return stripe.DecodeEvent(p) }})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 { // old: 3 applied, 2 never applicable
			ref := "pi_old"
			if i >= 3 {
				ref = "pi_wait"
			}
			receiveAt(t, s, fmt.Sprintf("evt_old_%d", i), ref)
		}
		c.Set(start.Add(2 * 24 * time.Hour))
		receiveAt(t, s, "evt_young", "pi_old")

		sw, err := intake.NewSweeper(db.Gorm, c.Now)
		if err != nil {
			t.Fatal(err)
		}
		c.Set(start.Add(intake.Retention - time.Minute)) // nothing is old enough yet
		if n, err := sw.Sweep(t.Context(), 2); err != nil || n != 0 {
			t.Fatalf("sweep before any is past retention: %d, %v; want 0", n, err)
		}
		c.Set(start.Add(intake.Retention + time.Minute)) // the five are, the young one is not
		if n, err := sw.Sweep(t.Context(), 2); err != nil || n != 5 {
			t.Fatalf("sweep in batches of 2: %d deleted, %v; want 5", n, err)
		}
		got, err := s.EventsOf(t.Context(), "pi_old")
		if err != nil || len(got) != 1 || got[0].ID != "evt_young" {
			t.Errorf("events left of pi_old: %+v, %v; want evt_young only", got, err)
		}
		if got, err := s.EventsOf(t.Context(), "pi_wait"); err != nil || len(got) != 0 {
			t.Errorf("events left of pi_wait: %+v, %v; want none", got, err)
		}
	})
}

// The background sweeper sweeps by itself, every interval, until stopped.
func TestSweeperRunner(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	c := &clock{now: time.Now().UTC()}
	s, err := intake.New(db.Gorm, intake.Options{Processor: "stripe", Decode: stripe.DecodeEvent, Now: c.Now,
		Verify: func(p []byte, _ string, _ time.Time) (processor.Event, error) { return stripe.DecodeEvent(p) }})
	if err != nil {
		t.Fatal(err)
	}
	receiveAt(t, s, "evt_1", "pi_1")
	c.Set(c.Now().Add(intake.Retention + time.Hour))
	sw, err := intake.NewSweeper(db.Gorm, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	r := sw.Runner(10*time.Millisecond, nil)
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := s.EventsOf(t.Context(), "pi_1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the event is still stored 5 s after it was past retention")
		}
	}
}
