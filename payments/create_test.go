package payments_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

func TestCreateNewKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		res := b.mustCreate(t, request("client-1", "k1", "10.5", "brl", payments.MethodPix))
		if res.Replayed {
			t.Error("Replayed = true for a new key")
		}
		p := res.Payment
		if p.ClientID != "client-1" || p.IdempotencyKey != "k1" || p.Method != payments.MethodPix ||
			p.Amount != (payments.Money{Minor: 1050, Currency: "BRL"}) || p.Amount.String() != "10.50" {
			t.Errorf("payment = %+v", p)
		}
		stored, err := b.svc.Get(t.Context(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored != p {
			t.Errorf("stored payment %+v differs from the one returned %+v", stored, p)
		}
		if got := b.outcomes(t, p.ID); !slices.Equal(got, []payments.Outcome{payments.OutcomeCreated}) {
			t.Errorf("attempts = %v, want [CREATED]", got)
		}

		// An authorization: what the create returns is what is stored.
		authorize := request("client-1", "k2", "7", "usd", payments.MethodCreditCard)
		authorize.Capture = new(false)
		p = b.mustCreate(t, authorize).Payment
		if p.Status != payments.StatusAuthorized || p.Captured != (payments.Money{Currency: "USD"}) || !p.CapturedAt.IsZero() {
			t.Errorf("authorization = %+v", p)
		}
		if stored, err = b.svc.Get(t.Context(), p.ID); err != nil {
			t.Fatal(err)
		}
		if stored != p {
			t.Errorf("stored authorization %+v differs from the one returned %+v", stored, p)
		}
	})
}

func TestCreateReplaysSamePayload(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.mustCreate(t, pix("k1"))
		// The same payload written differently is the same payload.
		for i, amount := range []string{"10.50", "10.5", "1.05e1", "10.500"} {
			for _, currency := range []string{"BRL", "brl"} {
				b.clock.Advance(1000)
				res := b.mustCreate(t, request("client-1", "k1", amount, currency, payments.MethodPix))
				if !res.Replayed {
					t.Fatalf("amount %s %s: Replayed = false, want true", amount, currency)
				}
				got, want := res.Payment, first.Payment
				if got.ID != want.ID || !got.CreatedAt.Equal(want.CreatedAt) || got.Amount != want.Amount ||
					got.Method != want.Method || got.ClientID != want.ClientID {
					t.Fatalf("replay returned %+v, want the original %+v", got, want)
				}
				if wantCount := 2*i + 1; got.ReplayCount < wantCount {
					t.Errorf("ReplayCount = %d, want at least %d", got.ReplayCount, wantCount)
				}
			}
		}
		if n := b.count(t, "payments"); n != 1 {
			t.Errorf("%d payments, want 1", n)
		}
		stored, err := b.svc.Get(t.Context(), first.Payment.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.ReplayCount != 8 || stored.RejectedCount != 0 {
			t.Errorf("counts = %d replayed, %d rejected; want 8, 0", stored.ReplayCount, stored.RejectedCount)
		}
		if got := b.outcomes(t, first.Payment.ID); len(got) != 9 || got[0] != payments.OutcomeCreated ||
			slices.ContainsFunc(got[1:], func(o payments.Outcome) bool { return o != payments.OutcomeReplayed }) {
			t.Errorf("attempts = %v, want CREATED then 8 REPLAYED", got)
		}
	})
}

func TestCreateRefusesKeyReuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		req           payments.CreateRequest
		wantDiffering []string
	}{
		{"amount", request("client-1", "k1", "10.51", "BRL", payments.MethodPix), []string{"amount"}},
		{"currency", request("client-1", "k1", "10.50", "USD", payments.MethodPix), []string{"currency"}},
		{"currency and amount", request("client-1", "k1", "1050", "JPY", payments.MethodPix), []string{"amount", "currency"}},
		{"method", request("client-1", "k1", "10.50", "BRL", payments.MethodBoleto), []string{"method"}},
		{"amount and method", request("client-1", "k1", "99", "BRL", payments.MethodDebitCard), []string{"amount", "method"}},
		{"everything", request("client-1", "k1", "3", "EUR", payments.MethodCreditCard), []string{"amount", "currency", "method"}},
	}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, db)
				// Each subtest gets its own client so they share nothing.
				original := pix("k1")
				original.ClientID = tt.name
				tt.req.ClientID = tt.name
				first := b.mustCreate(t, original)

				_, err := b.svc.Create(t.Context(), tt.req)
				var reused *payments.KeyReusedError
				if !errors.As(err, &reused) || !errors.Is(err, payments.ErrKeyReused) {
					t.Fatalf("Create = %v, want a *KeyReusedError", err)
				}
				if reused.PaymentID != first.Payment.ID || !slices.Equal(reused.DifferingFields, tt.wantDiffering) {
					t.Errorf("error = %+v, want payment %s and differing %v", reused, first.Payment.ID, tt.wantDiffering)
				}

				stored, err := b.svc.Get(t.Context(), first.Payment.ID)
				if err != nil {
					t.Fatal(err)
				}
				if stored.Amount != first.Payment.Amount || stored.Method != first.Payment.Method || stored.RejectedCount != 1 {
					t.Errorf("stored payment = %+v, want the original with one rejection", stored)
				}
				attempts := b.attempts(t, first.Payment.ID)
				if len(attempts) != 2 || attempts[1].Outcome != payments.OutcomeRejected ||
					!slices.Equal(attempts[1].DifferingFields, tt.wantDiffering) {
					t.Fatalf("attempts = %+v, want CREATED then REJECTED with %v", attempts, tt.wantDiffering)
				}
				// The timeline can show what was asked for beside what the
				// key was first used for.
				if a := attempts[1]; a.Params[payments.FieldMethod] != string(tt.req.Method) ||
					a.Params[payments.FieldCurrency] != tt.req.Currency || a.Held[payments.FieldAmount] != "10.5" {
					t.Errorf("attempted %v, held %v; want %s %s against the original 10.5", a.Params, a.Held, tt.req.Currency, tt.req.Method)
				}
				// The original payload still replays after a rejection.
				if res := b.mustCreate(t, original); !res.Replayed || res.Payment.ID != first.Payment.ID {
					t.Errorf("original payload after a rejection: %+v, want a replay of %s", res, first.Payment.ID)
				}
			})
		}
		var n int64
		if err := db.Gorm.Table("payments").Count(&n).Error; err != nil || n != int64(len(tests)) {
			t.Errorf("%d payments (%v), want one per subtest, %d", n, err, len(tests))
		}
	})
}

func TestCreateSameKeyDifferentClients(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		a := b.mustCreate(t, request("client-a", "shared", "10.50", "BRL", payments.MethodPix))
		c := b.mustCreate(t, request("client-b", "shared", "99", "USD", payments.MethodBoleto))
		if a.Replayed || c.Replayed || a.Payment.ID == c.Payment.ID {
			t.Fatalf("two clients with one key string: %+v and %+v, want two new payments", a, c)
		}
		if n := b.count(t, "payments"); n != 2 {
			t.Errorf("%d payments, want 2", n)
		}
	})
}

func TestCreateBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		b.mustCreate(t, pix("k1"))
		before := b.rowCounts(t)
		for _, req := range []payments.CreateRequest{
			request("client-1", "", "10.50", "BRL", payments.MethodPix),
			request("client-1", "k1", "10.505", "BRL", payments.MethodPix),
			request("client-1", "k1", "10.50", "XXX", payments.MethodPix),
			request("", "k1", "10.50", "BRL", payments.MethodPix),
			request("client-1", "k1", "10.50", "BRL", "CASH"),
		} {
			_, err := b.svc.Create(t.Context(), req)
			if !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("Create(%+v) = %v, want ErrInvalidInput", req, err)
			}
		}
		if after := b.rowCounts(t); after != before {
			t.Errorf("row counts went from %v to %v; bad input must write nothing", before, after)
		}
	})
}

// TestCreateRace: 100 simultaneous requests with one key give exactly one
// payment, and every request is answered with it.
func TestCreateRace(t *testing.T) {
	t.Parallel()
	const n = 100
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		results := make([]payments.CreateResult, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = b.svc.Create(t.Context(), pix("race"))
			})
		}
		close(start)
		wg.Wait()

		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			if results[i].Payment.ID != results[0].Payment.ID {
				t.Fatalf("request %d got payment %s, request 0 got %s", i, results[i].Payment.ID, results[0].Payment.ID)
			}
			if !results[i].Replayed {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d requests say they created the payment, want 1", created)
		}
		if got := b.rowCounts(t); got != [3]int64{1, 1, n} {
			t.Errorf("payments, keys, attempts = %v, want [1 1 %d]", got, n)
		}
		stored, err := b.svc.Get(t.Context(), results[0].Payment.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.ReplayCount != n-1 {
			t.Errorf("ReplayCount = %d, want %d", stored.ReplayCount, n-1)
		}
	})
}

// TestCreateRaceTwoPayloads: two payloads race for one key. One payload
// wins; every request with it gets the payment, every other is refused.
func TestCreateRaceTwoPayloads(t *testing.T) {
	t.Parallel()
	const n = 60
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		reqs := [2]payments.CreateRequest{
			request("client-1", "contested", "10.50", "BRL", payments.MethodPix),
			request("client-1", "contested", "20.00", "BRL", payments.MethodPix),
		}
		results := make([]payments.CreateResult, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = b.svc.Create(t.Context(), reqs[i%2])
			})
		}
		close(start)
		wg.Wait()

		var winner *payments.Payment
		for i := range n {
			if errs[i] == nil {
				winner = &results[i].Payment
				break
			}
		}
		if winner == nil {
			t.Fatalf("no request succeeded: %v", errs[0])
		}
		won := 0
		if winner.Amount.Minor == 2000 {
			won = 1
		}
		for i := range n {
			if i%2 == won {
				if errs[i] != nil || results[i].Payment.ID != winner.ID {
					t.Errorf("request %d with the winning payload: %+v, %v; want payment %s", i, results[i], errs[i], winner.ID)
				}
			} else if !errors.Is(errs[i], payments.ErrKeyReused) {
				t.Errorf("request %d with the losing payload: %v, want ErrKeyReused", i, errs[i])
			}
		}
		if got := b.rowCounts(t); got != [3]int64{1, 1, n} {
			t.Errorf("payments, keys, attempts = %v, want [1 1 %d]", got, n)
		}
		stored, err := b.svc.Get(t.Context(), winner.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.ReplayCount != n/2-1 || stored.RejectedCount != n/2 {
			t.Errorf("counts = %d replayed, %d rejected; want %d, %d", stored.ReplayCount, stored.RejectedCount, n/2-1, n/2)
		}
	})
}

func TestCreateManyKeysConcurrently(t *testing.T) {
	t.Parallel()
	const clients, keys = 4, 25
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		var wg sync.WaitGroup
		errs := make(chan error, clients*keys*2)
		for c := range clients {
			for k := range keys {
				for range 2 { // each request twice, at the same time
					wg.Go(func() {
						req := request(fmt.Sprintf("client-%d", c), fmt.Sprintf("key-%d", k), "1", "USD", payments.MethodDebitCard)
						if _, err := b.svc.Create(t.Context(), req); err != nil {
							errs <- err
						}
					})
				}
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got := b.rowCounts(t); got != [3]int64{clients * keys, clients * keys, 2 * clients * keys} {
			t.Errorf("payments, keys, attempts = %v, want [%d %d %d]", got, clients*keys, clients*keys, 2*clients*keys)
		}
	})
}

// A key whose payment cannot be read is an error, never a replay and never
// a second payment: only a winner's row that is really there is returned.
// That holds for a key the statement settles itself and for the keys it
// leaves to the engine (a key past its TTL, a version 1 key), on both
// databases.
func TestCreateNeverMistakesAnErrorForAReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, b *bundle)
		// reuse sends the key with another payload, which the engine
		// must find the payment missing for, not go round for.
		reuse bool
	}{
		{"current key", func(*testing.T, *bundle) {}, false},
		{"current key, another payload", func(*testing.T, *bundle) {}, true},
		{"key past its TTL", func(_ *testing.T, b *bundle) { b.clock.Advance(testTTL + time.Minute) }, false},
		{"version 1 key", func(t *testing.T, b *bundle) {
			if err := b.db.Gorm.Exec(`UPDATE idempotency_keys SET fingerprint_version = 1, params = NULL`).Error; err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
				b := setup(t, db)
				first := b.mustCreate(t, pix("k1"))
				// Break the database under the service: the key stays, its
				// payment row is gone.
				if err := db.Gorm.Exec(`DELETE FROM idempotency_attempts`).Error; err != nil {
					t.Fatal(err)
				}
				if err := db.Gorm.Exec(`DELETE FROM payments WHERE id = ?`, first.Payment.ID).Error; err != nil {
					t.Fatal(err)
				}
				tc.damage(t, b)
				req := pix("k1")
				if tc.reuse {
					req.Amount = "99"
				}
				res, err := b.svc.Create(t.Context(), req)
				if err == nil {
					t.Fatalf("Create = %+v, want an error", res)
				}
				if tc.reuse && !errors.Is(err, payments.ErrPaymentMissing) {
					t.Errorf("error %v; want the payment found missing", err)
				}
				if errors.Is(err, payments.ErrKeyReused) || errors.Is(err, payments.ErrInvalidInput) {
					t.Errorf("error %v is dressed as a client error", err)
				}
				if got := b.rowCounts(t); got != [3]int64{0, 1, 0} {
					t.Errorf("payments, keys, attempts = %v, want [0 1 0]: nothing written", got)
				}
			})
		})
	}
}
