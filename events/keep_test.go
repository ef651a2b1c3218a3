package events

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// TestSweepKeepsFailedDeliveries: past the retention, a FAILED delivery
// last tried within FailedKeep is kept with its attempts and its event,
// measured from its last attempt, not its creation; past the keep it goes
// with its event. DELIVERED and CANCELED deliveries of the same age go as
// before. On PostgreSQL, whose sweep deletes whole passes, a pass with one
// kept delivery keeps all its events; SQLite keeps only that event.
func TestSweepKeepsFailedDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		base := now()
		var mu sync.Mutex
		clock := base
		setClock := func(at time.Time) { mu.Lock(); defer mu.Unlock(); clock = at }
		s, err := New(db.Gorm, Options{Retention: time.Hour, FailedKeep: 5 * time.Hour, SweepInterval: time.Hour,
			Poll: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		if err := db.Gorm.Create(&models.WebhookEndpoint{ID: "we_all", URL: "https://a.test/", Secret: "s", CreatedAt: base}).Error; err != nil {
			t.Fatal(err)
		}
		// Events 1, 2, 3 in passes of their own; 4 and 5 together (one
		// pass on PostgreSQL); 6, the newest. All made at base, and so are
		// their deliveries.
		for i, n := range []int{1, 1, 1, 2, 1} {
			writeTogether(t, db.Gorm, "client-1", base, n)
			want := int64([]int{1, 2, 3, 5, 6}[i])
			waitFor(t, fmt.Sprintf("the deliveries of event %d", want), func() bool {
				var made int64
				db.Gorm.Model(&models.WebhookDelivery{}).Count(&made)
				return made == want
			})
		}
		// Each delivery: its end, and its last attempt (one attempt each).
		for id, d := range map[int64]struct {
			status string
			last   time.Duration
		}{
			1: {"FAILED", 2 * time.Hour}, 2: {"DELIVERED", 2 * time.Hour}, 3: {"CANCELED", 2 * time.Hour},
			4: {"FAILED", 30 * time.Minute}, 5: {"DELIVERED", 30 * time.Minute}, 6: {"DELIVERED", 0},
		} {
			at := base.Add(d.last)
			var row models.WebhookDelivery
			if err := db.Gorm.Where("event_id = ?", id).First(&row).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Model(&row).Updates(map[string]any{"status": d.status, "last_attempt_at": at}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Gorm.Create(&models.WebhookAttempt{DeliveryID: row.ID, At: at, Status: 500, DurationMS: 1}).Error; err != nil {
				t.Fatal(err)
			}
		}

		// keptOnPG lists what only PostgreSQL keeps: the events that share
		// a pass with a kept delivery's.
		check := func(at time.Duration, deliveries, events, keptOnPG []int64) {
			t.Helper()
			setClock(base.Add(at))
			if _, err := s.Sweep(t.Context()); err != nil {
				t.Fatal(err)
			}
			if db.Dialect == "postgres" {
				events = append(events, keptOnPG...)
				slices.Sort(events)
			}
			want := fmt.Sprintf("deliveries %v, attempts %v, events %v", deliveries, deliveries, events)
			if got := sweepLeft(t, s, db); got != want {
				t.Errorf("at base+%s: %s; want %s", at, got, want)
			}
		}
		// Past the retention (the events are 3 h old, the deliveries made 3
		// h ago): the FAILED ones were last tried 1 h and 2.5 h ago.
		check(3*time.Hour, []int64{1, 4}, []int64{1, 4, 6}, []int64{5})
		// The delivery of 4 was last tried 5.5 h ago, made 6 h ago; that of
		// 1 was made 6 h ago too, but last tried 4 h ago.
		check(6*time.Hour, []int64{1}, []int64{1, 6}, nil)
		// Past the keep of 1 too; the newest event stays, as always.
		check(7*time.Hour+time.Microsecond, nil, []int64{6}, nil)
	})
}

// TestFailedKeepDefault: without FailedKeep (WEBHOOK_FAILED_KEEP unset) a
// FAILED delivery is kept a week after its last attempt, so that a resend
// after a weekend finds it: the keep costs the sweep nothing until it is
// over (TestSweepDoesNotReadKeptDeliveries).
func TestFailedKeepDefault(t *testing.T) {
	t.Parallel()
	s, err := New(dbtest.SQLite(t).Gorm, Options{Retention: 73 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if s.failedKeep != 168*time.Hour || DefaultFailedKeep != 168*time.Hour {
		t.Errorf("failed keep %s with a retention of 73h, default %s; want 168h", s.failedKeep, DefaultFailedKeep)
	}
}

// TestFailedKeepAtLeastTheRetention: a keep shorter than the retention
// counts as the retention, so that no FAILED delivery made after the
// retention's cutoff outlives the event it would resend.
func TestFailedKeepAtLeastTheRetention(t *testing.T) {
	t.Parallel()
	s, err := New(dbtest.SQLite(t).Gorm, Options{Retention: 73 * time.Hour, FailedKeep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if s.failedKeep != 73*time.Hour {
		t.Errorf("failed keep %s with a retention of 73h, want 73h", s.failedKeep)
	}
}

// sweepLeft says which events' deliveries and attempts are left, and
// which events (an attempt whose delivery is gone shows as event 0).
func sweepLeft(t *testing.T, s *Service, db dbtest.DB) string {
	t.Helper()
	var ds []models.WebhookDelivery
	var as []models.WebhookAttempt
	if err := db.Gorm.Order("event_id").Find(&ds).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Find(&as).Error; err != nil {
		t.Fatal(err)
	}
	eventOf := map[int64]int64{}
	dEvents, aEvents := []int64{}, []int64{}
	for _, d := range ds {
		eventOf[d.ID] = d.EventID
		dEvents = append(dEvents, d.EventID)
	}
	for _, a := range as {
		aEvents = append(aEvents, eventOf[a.DeliveryID])
	}
	slices.Sort(aEvents)
	evs, err := s.Since(t.Context(), 0, Filter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("deliveries %v, attempts %v, events %v", dEvents, aEvents, ids(evs))
}
