package events_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/deliverytest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/webhooks"
)

// TestResendRacesTheKeepsEnd: support resends FAILED deliveries at the
// moment the sweep deletes them, their keep over. Each one goes one way
// whole: the resend says there is no failed delivery and the delivery is
// gone with its attempts, or the resend armed it and it stays, pending,
// with every attempt it had.
func TestResendRacesTheKeepsEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		base := time.Now().UTC().Truncate(time.Microsecond).Add(-10 * time.Hour)
		quiet := slog.New(slog.DiscardHandler)
		ev, err := events.New(db.Gorm, events.Options{Retention: time.Hour, FailedKeep: 2 * time.Hour, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wh, err := webhooks.New(db.Gorm, ev, webhooks.Config{AllowPrivate: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Create(&models.WebhookEndpoint{ID: "we_all", URL: "https://a.test/", Secret: "s", CreatedAt: base}).Error; err != nil {
			t.Fatal(err)
		}
		// Made 10 h ago, last tried 9 h ago: past the keep of 2 h.
		const n = 200
		last, body := base.Add(time.Hour), `{"id":"1"}`
		rows := make([]models.WebhookDelivery, n)
		for i := range rows {
			id := int64(i + 1)
			rows[i] = models.WebhookDelivery{ID: id, EventID: id, EventSeq: id, EndpointID: "we_all", Status: "FAILED",
				EventAt: base, CreatedAt: base, NextAttemptAt: last, LastAttemptAt: &last, Attempts: 2, Body: &body}
		}
		if err := db.Gorm.CreateInBatches(rows, 100).Error; err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			for range 2 {
				if err := db.Gorm.Create(&models.WebhookAttempt{DeliveryID: rows[i].ID, At: last, Status: 500, DurationMS: 1}).Error; err != nil {
					t.Fatal(err)
				}
			}
		}

		resent := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			if _, err := ev.Sweep(t.Context()); err != nil {
				t.Error(err)
			}
		})
		for w := range 4 {
			wg.Go(func() {
				<-start
				// Each worker resends every fourth delivery, from the
				// newest, while the sweep deletes from the oldest.
				for i := n - 1 - w; i >= 0; i -= 4 {
					resent[i] = wh.Resend(t.Context(), int64(i+1), nil)
				}
			})
		}
		close(start)
		wg.Wait()

		var kept, gone int
		for i, err := range resent {
			id := int64(i + 1)
			var ds []models.WebhookDelivery
			var attempts int64
			db.Gorm.Where("id = ?", id).Find(&ds)
			db.Gorm.Model(&models.WebhookAttempt{}).Where("delivery_id = ?", id).Count(&attempts)
			switch {
			case err == nil:
				kept++
				if len(ds) != 1 || ds[0].Status != "PENDING" || attempts != 2 {
					t.Errorf("delivery %d resent: %d rows, %d attempts; want it pending with its 2 attempts", id, len(ds), attempts)
				}
			case errors.Is(err, webhooks.ErrNotFailed):
				gone++
				if len(ds) != 0 || attempts != 0 {
					t.Errorf("delivery %d not resent (%v), yet %d rows and %d attempts are left", id, err, len(ds), attempts)
				}
			default:
				t.Errorf("resend of delivery %d: %v", id, err)
			}
		}
		t.Logf("%d resent, %d swept first", kept, gone)
	})
}

// TestResendOfABodilessDeliveryDuringTheEventsSweep: a FAILED delivery
// stored before failed deliveries kept their body, its keep over but not
// yet expired by the deliveries sweep, is resent between the events sweep
// reading which events are old and its deleting them. The resend finds
// the event and arms the delivery, so the sweep must leave that event:
// the delivery is then delivered, its body built from it, instead of
// failing again for want of an event.
func TestResendOfABodilessDeliveryDuringTheEventsSweep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newKeepEnv(t, db)
		p := e.Create(t, "shop-fail", "race-1")
		e.made(t, 1)
		e.Create(t, "shop-ok", "race-2") // the newest pass, which no sweep takes
		e.made(t, 2)
		d := e.failedBeforeBodies(t, p)
		e.Receiver.Failing.Store(false)

		resent := errors.New("no resend: the sweep read no old event")
		var once sync.Once
		e.Events.OnSweepRead(func() {
			once.Do(func() { resent = e.Webhooks.Resend(t.Context(), d.ID, nil) })
		})
		// 269 h on: past the retention of the event and the keep (168 h)
		// of the delivery's last attempt.
		if _, err := e.Events.SweepEventsAsOf(t.Context(), time.Now().Add(269*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if resent != nil {
			t.Fatalf("resend during the sweep: %v", resent)
		}
		var left int64
		db.Gorm.Model(&models.PaymentEvent{}).Where("seq = ?", d.EventSeq).Count(&left)
		if left != 1 {
			t.Errorf("the event of delivery %d, resent during the sweep, was deleted", d.ID)
		}
		if got := e.settled(t, d.ID); got.Status != "DELIVERED" {
			t.Errorf("delivery %d resent during the sweep ended %s (%s); want DELIVERED", d.ID, got.Status, got.LastError)
		}
	})
}

// failedBeforeBodies waits for the first delivery of payment p to fail,
// and drops the body it stored, as a delivery that failed before schema
// version 12 has none.
func (e *keepEnv) failedBeforeBodies(t *testing.T, p string) models.WebhookDelivery {
	t.Helper()
	deliverytest.Poll(t, "the delivery to fail", func() bool { return e.byPayment(t)[p].Status == "FAILED" })
	d := e.byPayment(t)[p]
	if err := e.DB.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", d.ID).Update("body", nil).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

// settled waits for the delivery id to be delivered or failed, and
// returns it.
func (e *keepEnv) settled(t *testing.T, id int64) models.WebhookDelivery {
	t.Helper()
	var d models.WebhookDelivery
	deliverytest.Poll(t, "the delivery to be delivered or fail", func() bool {
		if err := e.DB.Gorm.Where("id = ?", id).Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		return d.Status == "DELIVERED" || d.Status == "FAILED"
	})
	return d
}
