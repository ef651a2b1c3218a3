package events

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// The store's suite: every test runs each method of the interface on
// both databases, through newStore, as the Service does.

func openStore(t *testing.T, db dbtest.DB) store {
	t.Helper()
	st, err := newStore(db.Gorm)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// recorder is what a sequencer tells, as a test sees it.
type recorder struct {
	top  atomic.Int64
	led  atomic.Bool // it led at some point
	told atomic.Bool // a pass created deliveries
}

// run runs st's sequencer until the test ends, its passes dated by now.
func (r *recorder) run(t *testing.T, st store, now func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	to := sequencing{
		numbered: func(top int64, deliveries bool) {
			for old := r.top.Load(); top > old && !r.top.CompareAndSwap(old, top); old = r.top.Load() {
			}
			if deliveries {
				r.told.Store(true)
			}
		},
		missed: func() {},
		leading: func(b bool) {
			if b {
				r.led.Store(true)
			}
		},
		poll: 20 * time.Millisecond, // SQLite's: no wake channel here
		now:  now,
		log:  slog.New(slog.DiscardHandler),
	}
	go func() { st.sequence(ctx, to); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func waitLastID(t *testing.T, st store, want int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("event %d to be numbered", want), func() bool {
		n, err := st.lastID(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return n >= want
	})
}

var fixtures atomic.Int64

// write commits a payment of client and its PAYMENT_CREATED event at at,
// in one transaction and in that order, as package payments does: the
// change first, so that its transaction has its xid before the event its
// seq (sequencer_postgres.go relies on it).
func write(t *testing.T, db *gorm.DB, client string, at time.Time) models.PaymentEvent {
	t.Helper()
	return writeTogether(t, db, client, at, 1)[0]
}

// writeTogether commits n payments of client and their events as write
// does, all in one transaction: on PostgreSQL one pass numbers them.
func writeTogether(t *testing.T, db *gorm.DB, client string, at time.Time, n int) []models.PaymentEvent {
	t.Helper()
	var out []models.PaymentEvent
	if err := db.Transaction(func(tx *gorm.DB) error {
		for range n {
			id := fmt.Sprintf("pay_%d", fixtures.Add(1))
			p := models.Payment{ID: id, ClientID: client, IdempotencyKey: "key-" + id, AmountMinor: 1000, Currency: "BRL",
				Method: "PIX", CreatedAt: at, Status: "CAPTURED", CapturedMinor: 1000, CapturedAt: &at}
			e := models.PaymentEvent{Type: string(payments.EventCreated), At: at, IdempotencyKey: p.IdempotencyKey,
				PaymentID: id, ClientID: client, PaymentKey: p.IdempotencyKey, AmountMinor: 1000, Currency: "BRL", Method: "PIX",
				PaymentCreatedAt: at, Status: "CAPTURED", CapturedMinor: 1000, CapturedAt: &at}
			if err := tx.Create(&p).Error; err != nil {
				return err
			}
			if err := tx.Create(&e).Error; err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// refund commits a refund of 4.00 of created's payment and its
// PAYMENT_REFUNDED event.
func refund(t *testing.T, db *gorm.DB, created models.PaymentEvent, at time.Time) (models.PaymentEvent, models.Refund) {
	t.Helper()
	reason := "broken"
	r := models.Refund{ID: fmt.Sprintf("ref_%d", fixtures.Add(1)), PaymentID: created.PaymentID, AmountMinor: 400,
		Reason: &reason, IdempotencyKey: "refund-key", CreatedAt: at}
	e := created
	e.Seq, e.Type, e.At, e.IdempotencyKey, e.RefundID = 0, string(payments.EventRefunded), at, r.IdempotencyKey, &r.ID
	e.Status, e.RefundedMinor = "PARTIALLY_REFUNDED", 400
	if err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&r).Error; err != nil {
			return err
		}
		return tx.Create(&e).Error
	}); err != nil {
		t.Fatal(err)
	}
	return e, r
}

func ids(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// TestStoreReads: lastID, numbered (ranges and filters) and bySeq read
// what the sequencer numbered, with the refund of a refund event.
func TestStoreReads(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		if n, err := st.lastID(ctx); err != nil || n != 0 {
			t.Fatalf("lastID of an empty outbox = %d, %v", n, err)
		}
		if evs, err := st.numbered(ctx, 0, 10, Filter{}); err != nil || len(evs) != 0 {
			t.Fatalf("numbered of an empty outbox = %v, %v", evs, err)
		}
		at := now()
		e1 := write(t, db.Gorm, "client-1", at)
		e2 := write(t, db.Gorm, "client-2", at)
		e3, r := refund(t, db.Gorm, e1, at.Add(time.Second))
		var rec recorder
		rec.run(t, st, now)
		waitLastID(t, st, 3)
		waitFor(t, "the sequencer to tell of event 3", func() bool { return rec.top.Load() == 3 })

		all, err := st.numbered(ctx, 0, 3, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(all)) != "[1 2 3]" || all[0].Payment.ID != e1.PaymentID || all[1].Payment.ID != e2.PaymentID ||
			all[2].Type != payments.EventRefunded || all[0].Refund != nil {
			t.Fatalf("numbered(0, 3) = %+v", all)
		}
		got := all[2]
		if got.Refund == nil || got.Refund.ID != r.ID || got.Refund.Amount.String() != "4.00" || *got.Refund.Reason != "broken" ||
			got.Refund.IdempotencyKey != "refund-key" || !got.Refund.CreatedAt.Equal(r.CreatedAt) ||
			got.Payment.Refunded.String() != "4.00" || !got.At.Equal(e3.At) || got.IdempotencyKey != "refund-key" {
			t.Errorf("the refund event = %+v, refund %+v", got, got.Refund)
		}
		for _, c := range []struct {
			after, upTo int64
			f           Filter
			want        string
		}{
			{1, 2, Filter{}, "[2]"},
			{0, 3, Filter{ClientID: "client-2"}, "[2]"},
			{0, 3, Filter{PaymentID: e1.PaymentID}, "[1 3]"},
			{0, 3, Filter{ClientID: "client-2", PaymentID: e1.PaymentID}, "[]"},
			{1, 3, Filter{ClientID: "client-1", PaymentID: e1.PaymentID}, "[3]"},
		} {
			evs, err := st.numbered(ctx, c.after, c.upTo, c.f)
			if err != nil || fmt.Sprint(ids(evs)) != c.want {
				t.Errorf("numbered(%d, %d, %+v) = %v, %v; want %s", c.after, c.upTo, c.f, ids(evs), err, c.want)
			}
		}

		bySeq, err := st.bySeq(ctx, []int64{e3.Seq, e1.Seq, e3.Seq + 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(bySeq) != 2 || bySeq[e1.Seq].Payment.ID != e1.PaymentID || bySeq[e1.Seq].ID != 0 ||
			bySeq[e3.Seq].Refund == nil || bySeq[e3.Seq].Refund.ID != r.ID {
			t.Errorf("bySeq = %+v", bySeq)
		}
	})
}

// TestStoreSequencersAtOnce: two sequencers over one database (two
// instances) number events written concurrently without a gap or an id
// given twice, and create each event's deliveries once, for exactly the
// endpoints that receive it, each with the event's payment and client.
func TestStoreSequencersAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		a, b := openStore(t, db), openStore(t, db)
		ctx := t.Context()
		gone := now()
		endpoints := []models.WebhookEndpoint{
			{ID: "we_all", URL: "https://a.test/", Secret: "s", CreatedAt: gone},
			{ID: "we_refunds", URL: "https://r.test/", Secret: "s", EventTypes: ",PAYMENT_REFUNDED,", CreatedAt: gone},
			{ID: "we_client2", URL: "https://c.test/", Secret: "s", ClientID: "client-2", CreatedAt: gone},
			{ID: "we_gone", URL: "https://g.test/", Secret: "s", CreatedAt: gone, DeletedAt: &gone},
		}
		if err := db.Gorm.Create(&endpoints).Error; err != nil {
			t.Fatal(err)
		}
		var ra, rb recorder
		ra.run(t, a, now)
		rb.run(t, b, now)

		const writers, each = 4, 10
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for range each {
					e := write(t, db.Gorm, fmt.Sprintf("client-%d", w%2+1), now())
					if w == 0 {
						refund(t, db.Gorm, e, now())
					}
				}
			})
		}
		wg.Wait()
		const total = writers*each + each
		waitLastID(t, a, total)
		waitFor(t, "a sequencer to tell of the last event", func() bool { return max(ra.top.Load(), rb.top.Load()) == total })

		evs, err := b.numbered(ctx, 0, total, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, e := range evs {
			if e.ID != int64(i+1) {
				t.Fatalf("event %d has id %d: %v", i, e.ID, ids(evs))
			}
			seen[e.Payment.ID+string(e.Type)] = true
		}
		if len(evs) != total || len(seen) != total {
			t.Fatalf("%d events numbered, %d distinct; want %d", len(evs), len(seen), total)
		}
		var rows []models.WebhookDelivery
		if err := db.Gorm.Order("id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, d := range rows {
			got[fmt.Sprintf("%d %s %s %s", d.EventID, d.EndpointID, d.EventPaymentID, d.EventClientID)]++
		}
		want := map[string]int{}
		for _, e := range evs {
			// Each delivery carries its event's payment and client, for the
			// admin's filters.
			of := " " + e.Payment.ID + " " + e.Payment.ClientID
			want[fmt.Sprintf("%d we_all", e.ID)+of] = 1
			if e.Type == payments.EventRefunded {
				want[fmt.Sprintf("%d we_refunds", e.ID)+of] = 1
			}
			if e.Payment.ClientID == "client-2" {
				want[fmt.Sprintf("%d we_client2", e.ID)+of] = 1
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("deliveries by event, endpoint, payment and client:\n got %v\nwant %v", got, want)
		}
		if !ra.led.Load() && !rb.led.Load() {
			t.Error("neither sequencer led")
		}
		if !ra.told.Load() && !rb.told.Load() {
			t.Error("no sequencer told of the deliveries it created")
		}
	})
}

// TestStoreSweep: sweepDeliveries deletes the finished deliveries older
// than the cutoff, and their attempts, up to the first young one;
// sweepEvents deletes the old events up to the first young one but those
// a delivery is pending for, and never the newest.
func TestStoreSweep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		young := now()
		old := young.Add(-2 * time.Hour)
		cutoff := young.Add(-time.Hour)
		if err := db.Gorm.Create(&models.WebhookEndpoint{ID: "we_all", URL: "https://a.test/", Secret: "s", CreatedAt: old}).Error; err != nil {
			t.Fatal(err)
		}
		// Events 1 to 6, each numbered in a pass of its own, and their
		// deliveries: event 4 is young, and so is its delivery, the first
		// young ones of each; 6 is young and the newest.
		var passAt atomic.Pointer[time.Time]
		var rec recorder
		rec.run(t, st, func() time.Time { return *passAt.Load() })
		for i, isYoung := range []bool{false, false, false, true, false, true} {
			at := old
			if isYoung {
				at = young
			}
			passAt.Store(&at)
			write(t, db.Gorm, "client-1", at)
			waitFor(t, "the pass", func() bool { return rec.top.Load() == int64(i+1) })
		}
		for id, status := range map[int64]string{1: "DELIVERED", 3: "FAILED", 4: "DELIVERED", 5: "DELIVERED"} {
			if err := db.Gorm.Model(&models.WebhookDelivery{}).Where("event_id = ?", id).Update("status", status).Error; err != nil {
				t.Fatal(err)
			}
		}
		var rows []models.WebhookDelivery
		db.Gorm.Order("id").Find(&rows)
		for _, d := range rows {
			db.Gorm.Create(&models.WebhookAttempt{DeliveryID: d.ID, At: old, Status: 500, DurationMS: 1})
		}
		// left says which events' deliveries, attempts and events are left
		// (an attempt whose delivery is gone shows as event 0).
		left := func() string {
			var ds []models.WebhookDelivery
			var as []models.WebhookAttempt
			db.Gorm.Order("event_id").Find(&ds)
			db.Gorm.Find(&as)
			eventOf := map[int64]int64{}
			var dEvents, aEvents []int64
			for _, d := range ds {
				eventOf[d.ID] = d.EventID
				dEvents = append(dEvents, d.EventID)
			}
			for _, a := range as {
				aEvents = append(aEvents, eventOf[a.DeliveryID])
			}
			slices.Sort(aEvents)
			evs, err := st.numbered(ctx, 0, 6, Filter{})
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("deliveries %v, attempts %v, events %v", dEvents, aEvents, ids(evs))
		}

		// A FAILED delivery last tried before the cutoff goes too (the keep
		// of failed ones is TestSweepKeepsFailedDeliveries').
		if _, err := st.sweepDeliveries(ctx, cutoffs{old: cutoff, failed: cutoff}); err != nil {
			t.Fatal(err)
		}
		if got, want := left(), "deliveries [2 4 5 6], attempts [2 4 5 6], events [1 2 3 4 5 6]"; got != want {
			t.Errorf("after sweeping deliveries: %s; want %s", got, want)
		}
		n, err := st.sweepEvents(ctx, cutoffs{old: cutoff, failed: cutoff})
		if err != nil || n != 2 {
			t.Errorf("sweepEvents = %d, %v; want 2 (events 1 and 3)", n, err)
		}
		if got, want := left(), "deliveries [2 4 5 6], attempts [2 4 5 6], events [2 4 5 6]"; got != want {
			t.Errorf("after sweeping events: %s; want %s", got, want)
		}

		// Everything finished and old: the newest event stays all the same.
		db.Gorm.Model(&models.WebhookDelivery{}).Where("status = ?", "PENDING").Update("status", "DELIVERED")
		later := young.Add(2 * time.Hour)
		if _, err := st.sweepDeliveries(ctx, cutoffs{old: later, failed: later}); err != nil {
			t.Fatal(err)
		}
		if n, err := st.sweepEvents(ctx, cutoffs{old: later, failed: later}); err != nil || n != 3 {
			t.Errorf("second sweepEvents = %d, %v; want 3 (events 2, 4 and 5)", n, err)
		}
		if got, want := left(), "deliveries [], attempts [], events [6]"; got != want {
			t.Errorf("after sweeping everything: %s; want %s", got, want)
		}
		if n, err := st.lastID(ctx); err != nil || n != 6 {
			t.Errorf("lastID after the sweep = %d, %v; want 6", n, err)
		}
	})
}

// TestStatements: every statement loads and is run by the package.
func TestStatements(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t,
		sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/postgres.sql"),
		sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/sqlite.sql"))
}
