package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
	"github.com/cmpay/cmpay/models"
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

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// addDeliveries stores an endpoint created at due and n deliveries to
// it, for the events 1 to n, due a millisecond apart from due, and
// returns their ids.
func addDeliveries(t *testing.T, db dbtest.DB, endpoint string, n int, due time.Time) []int64 {
	t.Helper()
	if err := db.Gorm.Create(&models.WebhookEndpoint{ID: endpoint, URL: "https://" + endpoint + ".test/", Secret: "secret-" + endpoint,
		CreatedAt: due}).Error; err != nil {
		t.Fatal(err)
	}
	rows := make([]models.WebhookDelivery, n)
	for i := range rows {
		rows[i] = models.WebhookDelivery{EventID: int64(i + 1), EventSeq: int64(i + 1), EndpointID: endpoint, Status: "PENDING",
			EventAt: due, CreatedAt: due, NextAttemptAt: due.Add(time.Duration(i) * time.Millisecond)}
	}
	if err := db.Gorm.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

func delivery(t *testing.T, db dbtest.DB, id int64) models.WebhookDelivery {
	t.Helper()
	var d models.WebhookDelivery
	if err := db.Gorm.First(&d, id).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

func claimIDs(cs []claim) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	slices.Sort(out)
	return out
}

// TestStoreEndpoints: endpoints are added, listed by client and in full,
// deleted once by their owner (cancelling the deliveries still to be made
// or resent), and their secrets replaced only where they hold what was
// read.
func TestStoreEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		at := now()
		for i, e := range []models.WebhookEndpoint{
			{ID: "we_1", URL: "https://one.test/", Secret: "s1", ClientID: "client-1"},
			{ID: "we_2", URL: "https://two.test/", Secret: "s2", EventTypes: ",PAYMENT_REFUNDED,"},
			{ID: "we_3", URL: "https://three.test/", Secret: "s3", ClientID: "client-1"},
		} {
			e.CreatedAt = at.Add(time.Duration(i) * time.Second)
			if added, err := st.addEndpoint(ctx, e, 2); !added || err != nil {
				t.Fatal(added, err)
			}
		}
		// The cap counts by client: client-1 has 2 endpoints, the most.
		if added, err := st.addEndpoint(ctx, models.WebhookEndpoint{ID: "we_5", URL: "https://five.test/", Secret: "s5",
			ClientID: "client-1", CreatedAt: at}, 2); added || err != nil {
			t.Errorf("a third endpoint of client-1 under a cap of 2: %v, %v; want not added", added, err)
		}
		list := func(es []models.WebhookEndpoint, err error) string {
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range es {
				out = append(out, fmt.Sprintf("%s:%s:%s:%s:%s:%v:%v", e.ID, e.URL, e.ClientID, e.EventTypes, e.Secret,
					e.CreatedAt.Sub(at), e.DeletedAt != nil))
			}
			return fmt.Sprint(out)
		}
		if got, want := list(st.endpoints(ctx, OwnerOf(""))),
			"[we_1:https://one.test/:client-1:::0s:false we_2:https://two.test/::,PAYMENT_REFUNDED,::1s:false we_3:https://three.test/:client-1:::2s:false]"; got != want {
			t.Errorf("endpoints(\"\") = %s\nwant %s", got, want)
		}
		if got, want := list(st.endpoints(ctx, OwnerOf("client-1"))), "[we_1:https://one.test/:client-1:::0s:false we_3:https://three.test/:client-1:::2s:false]"; got != want {
			t.Errorf("endpoints(client-1) = %s\nwant %s", got, want)
		}
		if got, want := list(st.endpoints(ctx, Owner{})), "[we_2:https://two.test/::,PAYMENT_REFUNDED,::1s:false]"; got != want {
			t.Errorf("endpoints of no client = %s\nwant %s", got, want)
		}

		ids := addDeliveries(t, db, "we_4", 4, at.Add(time.Hour))
		for i, status := range []string{"PENDING", "FAILED", "DELIVERED", "CANCELED"} {
			db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", ids[i]).Update("status", status)
		}
		db.Gorm.Model(&models.WebhookEndpoint{}).Where("id = ?", "we_4").Update("client_id", "client-2")
		if found, err := st.deleteEndpoint(ctx, OwnerOf("client-1"), "we_4", at); found || !errors.Is(err, ErrForbidden) {
			t.Errorf("another client's delete = %v, %v; want ErrForbidden", found, err)
		}
		if found, err := st.deleteEndpoint(ctx, Owner{}, "we_4", at); found || !errors.Is(err, ErrForbidden) {
			t.Errorf("a delete by the owner of endpoints of no client = %v, %v; want ErrForbidden", found, err)
		}
		if got := delivery(t, db, ids[0]).Status; got != "PENDING" {
			t.Errorf("a refused delete left the endpoint's pending delivery %s", got)
		}
		if found, err := st.deleteEndpoint(ctx, OwnerOf("client-1"), "we_none", at); found || err != nil {
			t.Errorf("deleting an endpoint that does not exist = %v, %v; want false", found, err)
		}
		if found, err := st.deleteEndpoint(ctx, OwnerOf("client-2"), "we_4", at.Add(time.Hour)); !found || err != nil {
			t.Errorf("the owner's delete = %v, %v; want true", found, err)
		}
		if found, err := st.deleteEndpoint(ctx, OwnerOf(""), "we_4", at); found || err != nil {
			t.Errorf("a second delete = %v, %v; want false", found, err)
		}
		var statuses []string
		for _, id := range ids {
			statuses = append(statuses, delivery(t, db, id).Status)
		}
		if got := fmt.Sprint(statuses); got != "[CANCELED CANCELED DELIVERED CANCELED]" {
			t.Errorf("the deleted endpoint's deliveries are %s", got)
		}
		if got, want := list(st.allEndpoints(ctx, 2)), "[we_4:https://we_4.test/:client-2:::1h0m0s:true we_3:https://three.test/:client-1:::2s:false]"; got != want {
			t.Errorf("allEndpoints(2) = %s\nwant %s", got, want)
		}
		if got := list(st.endpoints(ctx, OwnerOf("client-2"))); got != "[]" {
			t.Errorf("a deleted endpoint is listed: %s", got)
		}

		secrets, err := st.secrets(ctx)
		if err != nil || len(secrets) != 4 || secrets[0].ID != "we_1" || secrets[0].Secret != "s1" || secrets[3].Secret != "secret-we_4" {
			t.Fatalf("secrets = %+v, %v", secrets, err)
		}
		if ok, err := st.replaceSecret(ctx, "we_1", "not s1", "sealed"); ok || err != nil {
			t.Errorf("replacing a secret that changed meanwhile = %v, %v; want false", ok, err)
		}
		if ok, err := st.replaceSecret(ctx, "we_1", "s1", "sealed"); !ok || err != nil {
			t.Errorf("replaceSecret = %v, %v; want true", ok, err)
		}
		if secrets, _ := st.secrets(ctx); secrets[0].Secret != "sealed" {
			t.Errorf("we_1's secret is %q", secrets[0].Secret)
		}
	})
}

// TestStoreClaimAndRecord: a claim takes the due deliveries no claim
// holds, with their endpoint; a record writes each outcome where its
// claim holds, with an attempt; the admin's list shows them.
func TestStoreClaimAndRecord(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		at := now()
		ids := addDeliveries(t, db, "we_1", 4, at)
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", ids[3]).Update("next_attempt_at", at.Add(time.Hour))
		if n, err := st.backlog(ctx); n != 4 || err != nil {
			t.Errorf("backlog = %d, %v; want 4", n, err)
		}

		until, claimAt := at.Add(lease), at.Add(time.Second)
		first, err := st.claim(ctx, claimAt, until, 7, 2, inFlight{})
		if err != nil || len(first) != 2 {
			t.Fatalf("claim of 2 = %+v, %v", first, err)
		}
		c := first[0]
		if c.URL != "https://we_1.test/" || c.Secret != "secret-we_1" || c.Token != 7 || c.EndpointID != "we_1" ||
			c.EventID != c.EventSeq || !c.EventAt.Equal(at) || c.ExpiresAt != nil || c.Retries != 0 {
			t.Errorf("claimed %+v", c)
		}
		second, err := st.claim(ctx, claimAt, until, 8, 10, inFlight{})
		if err != nil || fmt.Sprint(claimIDs(second)) != fmt.Sprint(ids[2:3]) {
			t.Fatalf("second claim = %v, %v; want only %d (the others are held, or not due)", claimIDs(second), err, ids[2])
		}
		if none, err := st.claim(ctx, claimAt, until, 9, 10, inFlight{}); len(none) != 0 || err != nil {
			t.Errorf("a third claim took %v, %v", claimIDs(none), err)
		}

		took := 30 * time.Millisecond
		batch := []result{
			{claim: first[0], at: at, took: took, status: 204, ok: true},
			{claim: first[1], at: at, took: took, status: 500, problem: "down"},
			{claim: second[0], at: at, took: took, status: 204, ok: true},
		}
		batch[2].Token = 7 // a claim lost: another claim holds it now
		outs := []outcome{{status: "DELIVERED", next: at}, {status: "PENDING", next: at.Add(time.Minute), retries: 1}, {status: "DELIVERED", next: at}}
		if err := st.record(ctx, batch, outs); err != nil {
			t.Fatal(err)
		}
		ok, retry, lost := delivery(t, db, first[0].ID), delivery(t, db, first[1].ID), delivery(t, db, second[0].ID)
		if ok.Status != "DELIVERED" || ok.DeliveredAt == nil || ok.Attempts != 1 || ok.LastStatus != 204 || ok.LeaseUntil != nil {
			t.Errorf("delivered: %+v", ok)
		}
		if retry.Status != "PENDING" || retry.DeliveredAt != nil || retry.Attempts != 1 || retry.Retries != 1 || retry.LastError != "down" ||
			!retry.NextAttemptAt.Equal(at.Add(time.Minute)) || retry.LeaseUntil != nil {
			t.Errorf("to retry: %+v", retry)
		}
		if lost.Status != "PENDING" || lost.Attempts != 0 || lost.LeaseUntil == nil {
			t.Errorf("recorded under a lost claim: %+v", lost)
		}
		if n, err := st.backlog(ctx); n != 3 || err != nil {
			t.Errorf("backlog = %d, %v; want 3", n, err)
		}

		newest, err := st.deliveryIDs(ctx, DeliveryFilter{}, maxDeliveryID, false, 3)
		if err != nil {
			t.Fatal(err)
		}
		recent, err := st.deliveriesOf(ctx, newest)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range recent {
			got = append(got, fmt.Sprintf("%d:%s:%s:%q:%d", d.ID, d.Status, d.URL, d.EventType, len(d.AttemptLog)))
		}
		want := fmt.Sprintf(`[%d:PENDING:https://we_1.test/:"":0 %d:PENDING:https://we_1.test/:"":0 %d:PENDING:https://we_1.test/:"":1]`,
			ids[3], ids[2], ids[1])
		if fmt.Sprint(got) != want {
			t.Errorf("newest 3 deliveries = %v\nwant %s", got, want)
		}
		if a := recent[2].AttemptLog; len(a) == 1 && (a[0].Status != 500 || a[0].Error != "down" || a[0].DurationMS != 30 || !a[0].At.Equal(at)) {
			t.Errorf("attempt %+v", a[0])
		}
	})
}

// TestStoreClaimsAtOnce: claims made at once (four instances) never take
// the same delivery, and between them take every due one. The claims of
// one round overlap only now and then, so there are a few rounds.
func TestStoreClaimsAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		at := now()
		ids := addDeliveries(t, db, "we_1", 200, at)
		stores := []store{openStore(t, db), openStore(t, db), openStore(t, db), openStore(t, db)}
		for round := range 3 {
			var mu sync.Mutex
			taken := map[int64]int{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, st := range stores {
				wg.Go(func() {
					<-start
					for j := 1; ; j++ {
						token := int64(10000*round + 1000*i + j) // a token a claim, as the dispatcher's
						cs, err := st.claim(t.Context(), at.Add(time.Second), at.Add(lease), token, 10, inFlight{})
						if err != nil || len(cs) == 0 {
							if err != nil {
								t.Error(err)
							}
							return
						}
						mu.Lock()
						for _, c := range cs {
							taken[c.ID]++
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			for _, id := range ids {
				if taken[id] != 1 {
					t.Fatalf("round %d: delivery %d claimed %d times", round, id, taken[id])
				}
			}
			// Due again, as when the leases run out.
			db.Gorm.Session(&gorm.Session{AllowGlobalUpdate: true}).Model(&models.WebhookDelivery{}).Update("next_attempt_at", at)
		}
	})
}

// TestStoreRearm: a failed delivery is armed again once, with its audit
// in the same transaction; an audit that fails leaves it failed. One
// without a stored body (failed before bodies were kept) is armed while
// its event is there, and refused, unchanged and unaudited, without it.
func TestStoreRearm(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		at := now()
		ids := addDeliveries(t, db, "we_1", 4, at)
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", ids[0]).Updates(map[string]any{"status": "FAILED", "retries": 5,
			"body": `{"id":"1"}`})
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id IN ?", ids[2:]).Updates(map[string]any{"status": "FAILED", "retries": 5})
		if err := db.Gorm.Create(&models.PaymentEvent{Seq: 3, Type: "PAYMENT_CREATED", At: at, PaymentID: "pay_3", ClientID: "shop",
			PaymentKey: "k", Currency: "BRL", Method: "PIX", PaymentCreatedAt: at, Status: "PENDING"}).Error; err != nil {
			t.Fatal(err)
		}

		boom := errors.New("audit log unavailable")
		var told []bool
		audit := func(err error) Audit {
			return func(ctx context.Context, tx sqlq.Runner, changed bool) error {
				told = append(told, changed)
				return err
			}
		}
		if changed, err := st.rearm(ctx, ids[0], at, at.Add(time.Hour), audit(boom)); !errors.Is(err, boom) || !changed {
			t.Errorf("rearm whose audit fails = %v, %v; want true, the audit's error", changed, err)
		}
		if d := delivery(t, db, ids[0]); d.Status != "FAILED" || d.Retries != 5 {
			t.Errorf("after a rearm whose audit failed: %s, %d retries", d.Status, d.Retries)
		}
		if changed, err := st.rearm(ctx, ids[1], at, at.Add(time.Hour), audit(nil)); changed || err != nil {
			t.Errorf("rearm of a pending delivery = %v, %v; want false", changed, err)
		}
		if changed, err := st.rearm(ctx, ids[3], at, at.Add(time.Hour), audit(nil)); changed || !errors.Is(err, ErrNothingToSend) {
			t.Errorf("rearm of a delivery with neither body nor event = %v, %v; want false, ErrNothingToSend", changed, err)
		}
		if d := delivery(t, db, ids[3]); d.Status != "FAILED" || d.Retries != 5 || d.ExpiresAt != nil {
			t.Errorf("after the rearm of a delivery with nothing to send: %s, %d retries, expires %v", d.Status, d.Retries, d.ExpiresAt)
		}
		if changed, err := st.rearm(ctx, ids[2], at, at.Add(time.Hour), nil); !changed || err != nil {
			t.Errorf("rearm of a delivery without a body whose event is kept = %v, %v; want true", changed, err)
		}

		due := at.Add(time.Minute)
		results := make(chan bool, 2)
		for range 2 {
			go func() {
				changed, err := st.rearm(ctx, ids[0], due, due.Add(time.Hour), nil)
				if err != nil {
					t.Error(err)
				}
				results <- changed
			}()
		}
		if a, b := <-results, <-results; a == b {
			t.Errorf("two rearms at once changed %v and %v; want one each", a, b)
		}
		d := delivery(t, db, ids[0])
		if d.Status != "PENDING" || d.Retries != 0 || !d.NextAttemptAt.Equal(due) || d.ExpiresAt == nil || !d.ExpiresAt.Equal(due.Add(time.Hour)) {
			t.Errorf("rearmed: %+v", d)
		}
		if fmt.Sprint(told) != "[true false]" {
			t.Errorf("audits told %v", told)
		}
	})
}

// TestStoreClaimSaysWhichHaveRefunds: a claim says of each delivery
// whether its event's payment has a refund, made before the event or
// after it, so that a batch of payments without any reads none.
func TestStoreClaimSaysWhichHaveRefunds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		at := now()
		ids := addDeliveries(t, db, "we_1", 4, at)
		evs := []models.PaymentEvent{ // no event 4: swept
			{Seq: 1, Type: "PAYMENT_CREATED", At: at, PaymentID: "pay_1"},
			{Seq: 2, Type: "PAYMENT_CREATED", At: at, PaymentID: "pay_2"},
			{Seq: 3, Type: "PAYMENT_REFUNDED", At: at.Add(time.Second), PaymentID: "pay_1"},
		}
		for i := range evs {
			evs[i].ClientID, evs[i].PaymentKey, evs[i].Currency, evs[i].Method = "shop", "k", "BRL", "CREDIT_CARD"
			evs[i].AmountMinor, evs[i].CapturedMinor, evs[i].PaymentCreatedAt, evs[i].Status = 1000, 1000, at, "CAPTURED"
		}
		refund := models.Refund{ID: "ref_1", PaymentID: "pay_1", AmountMinor: 100, IdempotencyKey: "r1", CreatedAt: at.Add(time.Second)}
		if err := db.Gorm.Create(&evs).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Create(&refund).Error; err != nil {
			t.Fatal(err)
		}
		cs, err := st.claim(ctx, at.Add(time.Second), at.Add(lease), 7, 10, inFlight{})
		if err != nil || len(cs) != 4 {
			t.Fatalf("claim = %v, %v; want 4", claimIDs(cs), err)
		}
		var refunded []int64
		for _, c := range cs {
			if c.HasRefunds {
				refunded = append(refunded, c.ID)
			}
		}
		slices.Sort(refunded)
		if want := []int64{ids[0], ids[2]}; fmt.Sprint(refunded) != fmt.Sprint(want) {
			t.Errorf("deliveries with refunds: %v; want %v (the events of pay_1)", refunded, want)
		}
	})
}

// TestStoreRefundsOf: the refunds of the payments asked for, oldest first.
func TestStoreRefundsOf(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		at := now()
		reason := "broken"
		rows := []models.Refund{
			{ID: "ref_3", PaymentID: "pay_1", AmountMinor: 300, IdempotencyKey: "k3", CreatedAt: at.Add(2 * time.Second)},
			{ID: "ref_1", PaymentID: "pay_1", AmountMinor: 100, Reason: &reason, IdempotencyKey: "k1", CreatedAt: at},
			{ID: "ref_2", PaymentID: "pay_2", AmountMinor: 200, IdempotencyKey: "k2", CreatedAt: at.Add(time.Second)},
			{ID: "ref_4", PaymentID: "pay_3", AmountMinor: 400, IdempotencyKey: "k4", CreatedAt: at},
		}
		if err := db.Gorm.Create(&rows).Error; err != nil {
			t.Fatal(err)
		}
		got, err := st.refundsOf(ctx, []string{"pay_2", "pay_1", "pay_9"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range got {
			out = append(out, fmt.Sprintf("%s:%s:%d:%s:%v:%v", r.ID, r.PaymentID, r.AmountMinor, r.IdempotencyKey, r.Reason != nil, r.CreatedAt.Sub(at)))
		}
		if want := "[ref_1:pay_1:100:k1:true:0s ref_2:pay_2:200:k2:false:1s ref_3:pay_1:300:k3:false:2s]"; fmt.Sprint(out) != want {
			t.Errorf("refundsOf = %v\nwant %s", out, want)
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
