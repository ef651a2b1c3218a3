package stripedouble

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests speak plain HTTP to the double, not through stripe-go, so
// they check its semantics independently of the connector it tests.

func start(t *testing.T, opts Options) (*Double, *ManualClock) {
	t.Helper()
	c := NewManualClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	if opts.Clock == nil {
		opts.Clock = c.Now
	}
	d := New(opts)
	t.Cleanup(d.Close)
	return d, c
}

type reply struct {
	status   int
	body     map[string]any
	raw      string
	replayed bool
	err      error
}

func do(ctx context.Context, d *Double, method, path, key string, form url.Values) reply {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		path += "?" + form.Encode()
	}
	req, _ := http.NewRequestWithContext(ctx, method, d.URL()+path, body)
	req.Header.Set("Authorization", "Bearer sk_test_x")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	// A fresh connection each time: a dropped one must not be reused.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, raw: string(raw), replayed: resp.Header.Get("Idempotent-Replayed") == "true", err: err}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func createForm(amount string) url.Values {
	return url.Values{"amount": {amount}, "currency": {"brl"}, "confirm": {"true"},
		"payment_method": {"pm_card_visa"}, "payment_method_types[0]": {"card"}, "metadata[cmpay_payment_id]": {"pay_1"}}
}

func errType(r reply) string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

// The first answer to a key is given again, marked replayed, and the
// money moves once.
func TestReplay(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	first := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	again := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	if first.status != 200 || first.replayed || again.status != 200 || !again.replayed || again.raw != first.raw {
		t.Fatalf("first %d %v, again %d %v", first.status, first.replayed, again.status, again.replayed)
	}
	id := first.body["id"].(string)
	if l := d.Ledger(id); l.Movements != 2 || l.Captured != 1050 || len(d.IntentsFor("pay_1")) != 1 {
		t.Errorf("ledger %+v, intents %v", l, d.IntentsFor("pay_1"))
	}
}

// Other parameters, or another endpoint, under a used key: 400
// idempotency_error, and nothing happens.
func TestKeyMismatch(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	first := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	other := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1051"))
	if other.status != 400 || errType(other) != "idempotency_error" {
		t.Errorf("other params: %d %s", other.status, other.raw)
	}
	id := first.body["id"].(string)
	elsewhere := do(ctx, d, "POST", "/v1/payment_intents/"+id+"/cancel", "k1", url.Values{})
	if elsewhere.status != 400 || errType(elsewhere) != "idempotency_error" || d.Status(id) != "succeeded" {
		t.Errorf("other endpoint: %d %s, status %s", elsewhere.status, elsewhere.raw, d.Status(id))
	}
	if n := len(d.IntentsFor("pay_1")); n != 1 {
		t.Errorf("%d intents", n)
	}
}

// Without a key every request executes.
func TestNoKeyNoReplay(t *testing.T) {
	d, _ := start(t, Options{})
	for range 2 {
		if r := do(context.Background(), d, "POST", "/v1/payment_intents", "", createForm("1050")); r.status != 200 || r.replayed {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	}
	if n := len(d.IntentsFor("pay_1")); n != 2 {
		t.Errorf("%d intents", n)
	}
}

// A request that fails validation stores nothing: the key is still free.
func TestValidationFailureIsNotStored(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	bad := createForm("1050")
	bad.Del("currency")
	if r := do(ctx, d, "POST", "/v1/payment_intents", "k1", bad); r.status != 400 || errType(r) != "invalid_request_error" {
		t.Fatalf("bad: %d %s", r.status, r.raw)
	}
	if r := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")); r.status != 200 || r.replayed {
		t.Fatalf("good after bad: %d %s", r.status, r.raw)
	}
}

// While a key's first request executes (held by a Delay), the same key
// gets 409; once it finishes, the key replays its answer.
func TestInProgressConflict(t *testing.T) {
	d, _ := start(t, Options{})
	d.FailNext(CreatePaymentIntent, Fault{Kind: Delay})
	ctx, cancel := context.WithCancel(context.Background())
	firstDone := make(chan reply)
	go func() { firstDone <- do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")) }()
	waitFor(t, func() bool { return d.executing("k1") })
	if r := do(context.Background(), d, "POST", "/v1/payment_intents", "k1", createForm("1050")); r.status != 409 {
		t.Errorf("during: %d %s", r.status, r.raw)
	}
	cancel() // the first client gives up; the double stores the answer
	if r := <-firstDone; r.err == nil {
		t.Errorf("the delayed answer reached a client that gave up: %d", r.status)
	}
	waitFor(t, func() bool { return !d.executing("k1") })
	r := do(context.Background(), d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	if r.status != 200 || !r.replayed {
		t.Errorf("after: %d %v", r.status, r.replayed)
	}
	if ids := d.IntentsFor("pay_1"); len(ids) != 1 || d.Ledger(ids[0]).Movements != 2 {
		t.Errorf("intents %v", ids)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for time to pass
	}
}

// Each fault, then the same key again: what the first call saw, what the
// second gets, and that money moved exactly once.
func TestFaultsThenRetry(t *testing.T) {
	for _, tc := range []struct {
		fault          FaultKind
		firstStatus    int // 0: no answer (connection closed)
		secondReplayed bool
		secondStatus   int
	}{
		{DropRequest, 0, false, 200},
		{DropResponse, 0, true, 200},
		{ServerErrorAfter, 500, true, 500},
		{ServerErrorBefore, 500, false, 200},
		{RateLimit, 429, false, 200},
		{Conflict, 409, false, 200},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			d, _ := start(t, Options{})
			d.FailNext(CreatePaymentIntent, Fault{Kind: tc.fault})
			first := do(context.Background(), d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
			if first.status != tc.firstStatus || (tc.firstStatus == 0) != (first.err != nil) {
				t.Fatalf("first: %d %v", first.status, first.err)
			}
			second := do(context.Background(), d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
			if second.status != tc.secondStatus || second.replayed != tc.secondReplayed {
				t.Fatalf("second: %d replayed=%v %s", second.status, second.replayed, second.raw)
			}
			ids := d.IntentsFor("pay_1")
			if len(ids) != 1 || d.Ledger(ids[0]).Captures != 1 || d.Calls(CreatePaymentIntent) != 2 {
				t.Errorf("intents %v, ledger %+v, calls %d", ids, d.Ledger(ids[0]), d.Calls(CreatePaymentIntent))
			}
		})
	}
}

// A key is remembered for 24 hours, then it is new again.
func TestKeyExpiresAfter24Hours(t *testing.T) {
	d, c := start(t, Options{})
	ctx := context.Background()
	do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	c.Add(24*time.Hour - time.Second)
	if r := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")); !r.replayed {
		t.Error("not replayed within 24h")
	}
	c.Add(time.Second)
	if r := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")); r.replayed || len(d.IntentsFor("pay_1")) != 2 {
		t.Error("still replayed after 24h")
	}
}

func TestSearchLags(t *testing.T) {
	d, c := start(t, Options{SearchLag: time.Minute})
	ctx := context.Background()
	do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	q := url.Values{"query": {"metadata['cmpay_payment_id']:'pay_1'"}}
	if r := do(ctx, d, "GET", "/v1/payment_intents/search", "", q); r.status != 200 || len(r.body["data"].([]any)) != 0 {
		t.Fatalf("found during the lag: %s", r.raw)
	}
	c.Add(time.Minute)
	if r := do(ctx, d, "GET", "/v1/payment_intents/search", "", q); len(r.body["data"].([]any)) != 1 {
		t.Fatalf("not found after the lag: %s", r.raw)
	}
	if r := do(ctx, d, "GET", "/v1/payment_intents/search", "", url.Values{"query": {"status:'succeeded'"}}); r.status != 400 {
		t.Errorf("unsupported query: %d", r.status)
	}
}

// The flows the connector relies on: decline (402 with the intent),
// authorize, capture, refunds and their limits, pending refunds.
func TestObjects(t *testing.T) {
	d, _ := start(t, Options{RefundsPending: true})
	ctx := context.Background()
	decl := createForm("1050")
	decl.Set("payment_method", "pm_card_chargeDeclinedInsufficientFunds")
	r := do(ctx, d, "POST", "/v1/payment_intents", "k0", decl)
	e, _ := r.body["error"].(map[string]any)
	if r.status != 402 || e["decline_code"] != "insufficient_funds" || e["code"] != "card_declined" || e["payment_intent"] == nil {
		t.Fatalf("decline: %d %s", r.status, r.raw)
	}
	auth := createForm("1050")
	auth.Set("capture_method", "manual")
	id := do(ctx, d, "POST", "/v1/payment_intents", "k1", auth).body["id"].(string)
	if d.Status(id) != "requires_capture" || d.Ledger(id).Authorized != 1050 {
		t.Fatalf("auth: %s %+v", d.Status(id), d.Ledger(id))
	}
	if r := do(ctx, d, "POST", "/v1/payment_intents/"+id+"/capture", "k2", url.Values{"amount_to_capture": {"2000"}}); r.status != 400 {
		t.Errorf("over-capture: %d", r.status)
	}
	do(ctx, d, "POST", "/v1/payment_intents/"+id+"/capture", "k3", url.Values{"amount_to_capture": {"1000"}})
	ref := do(ctx, d, "POST", "/v1/refunds", "k4", url.Values{"payment_intent": {id}, "amount": {"600"}, "metadata[cmpay_refund_id]": {"r1"}})
	if ref.body["status"] != "pending" {
		t.Fatalf("refund: %s", ref.raw)
	}
	if r := do(ctx, d, "POST", "/v1/refunds", "k5", url.Values{"payment_intent": {id}, "amount": {"401"}}); r.status != 400 {
		t.Errorf("a pending refund must count against what is left: %d", r.status)
	}
	if err := d.SettleRefund(ref.body["id"].(string), false, "expired_or_canceled_card"); err != nil {
		t.Fatal(err)
	}
	do(ctx, d, "POST", "/v1/refunds", "k6", url.Values{"payment_intent": {id}, "amount": {"1000"}})
	l := d.Ledger(id)
	if l.Captured != 1000 || l.Refunded != 0 || l.Refunds != 2 || len(d.RefundsFor("r1")) != 1 {
		t.Errorf("ledger %+v", l)
	}
	list := do(ctx, d, "GET", "/v1/refunds", "", url.Values{"payment_intent": {id}})
	if n := len(list.body["data"].([]any)); n != 2 {
		t.Errorf("listed %d refunds", n)
	}
	if r := do(ctx, d, "GET", "/v1/payment_intents/pi_nope", "", nil); r.status != 404 {
		t.Errorf("missing: %d", r.status)
	}
	if r := do(ctx, d, "POST", "/v1/payment_intents", "k9", url.Values{"amount": {"1"}, "currency": {"brl"}, "payment_method": {"pm_bogus"}, "confirm": {"true"}}); r.status != 400 {
		t.Errorf("unknown payment method: %d", r.status)
	}
}

func TestAuthorizationRequired(t *testing.T) {
	d, _ := start(t, Options{})
	req, _ := http.NewRequest("GET", d.URL()+"/v1/payment_intents/pi_1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func TestPixPayAndExpire(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	form := url.Values{"amount": {"1050"}, "currency": {"brl"}, "confirm": {"true"},
		"payment_method_types[0]": {"pix"}, "payment_method_data[type]": {"pix"}, "metadata[cmpay_payment_id]": {"pay_1"}}
	first := do(ctx, d, "POST", "/v1/payment_intents", "k1", form)
	na, _ := first.body["next_action"].(map[string]any)
	if first.body["status"] != "requires_action" || na["type"] != "pix_display_qr_code" {
		t.Fatalf("pix: %s", first.raw)
	}
	second := do(ctx, d, "POST", "/v1/payment_intents", "k2", form)
	if err := d.Pay(first.body["id"].(string)); err != nil {
		t.Fatal(err)
	}
	if err := d.Expire(second.body["id"].(string)); err != nil {
		t.Fatal(err)
	}
	if d.Status(first.body["id"].(string)) != "succeeded" || d.Ledger(first.body["id"].(string)).Captured != 1050 {
		t.Error("paid pix not succeeded")
	}
	if d.Status(second.body["id"].(string)) != "requires_payment_method" || d.Pay(second.body["id"].(string)) == nil {
		t.Error("expired pix")
	}
	types := []string{}
	for _, e := range d.Events() {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "payment_intent.succeeded,payment_intent.payment_failed" {
		t.Errorf("events %v", types)
	}
}

// Random faults are reproducible from their seed.
func TestRandomFaultsReproducible(t *testing.T) {
	pattern := func() string {
		d, _ := start(t, Options{})
		d.FailRandomly(42, 0.5, 0, []FaultKind{ServerErrorBefore, RateLimit}, CreatePaymentIntent)
		var b strings.Builder
		for i := range 20 {
			r := do(context.Background(), d, "POST", "/v1/payment_intents", "k"+string(rune('a'+i)), createForm("1"))
			b.WriteString(http.StatusText(r.status)[:1])
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b || !strings.Contains(a, "O") || strings.Count(a, "O") == len(a) {
		t.Errorf("patterns %q %q", a, b)
	}
}

// Signed events reach a receiver in the order, copies and signature asked.
func TestDeliverEvents(t *testing.T) {
	d, c := start(t, Options{})
	ctx := context.Background()
	do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	do(ctx, d, "POST", "/v1/payment_intents", "k2", createForm("1060"))
	var mu sync.Mutex
	var got []string
	recv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct{ ID string }
		_ = json.Unmarshal(body, &ev)
		if r.Header.Get("Stripe-Signature") != Sign(body, c.Now(), "whsec_test") {
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		got = append(got, ev.ID)
		mu.Unlock()
	})
	srv := newServer(t, recv)
	evs := d.Events()
	statuses, err := d.Deliver(ctx, srv, "whsec_test", evs, Delivery{Order: Reversed, Copies: 2})
	if err != nil || len(statuses) != 4 || statuses[0] != 200 {
		t.Fatalf("deliver: %v %v", statuses, err)
	}
	if want := []string{evs[1].ID, evs[1].ID, evs[0].ID, evs[0].ID}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
	if st, _ := d.PostEvent(ctx, srv, "whsec_test", evs[0], PostOptions{BadSignature: true}); st != 400 {
		t.Errorf("bad signature accepted: %d", st)
	}
	if sig := Sign([]byte("x"), time.Unix(5, 0), "whsec_a"); !strings.HasPrefix(sig, "t=5,v1=") || len(sig) != len("t=5,v1=")+64 {
		t.Errorf("signature %q", sig)
	}
}

// Listing intents is consistent where search lags: an intent is listed as
// soon as it is made, newest first, filtered by created, page by page.
func TestListIntentsByCreated(t *testing.T) {
	d, c := start(t, Options{SearchLag: time.Hour})
	ctx := context.Background()
	t0 := c.Now().Unix()
	for i := range 3 {
		do(ctx, d, "POST", "/v1/payment_intents", "k"+string(rune('a'+i)), createForm("1050"))
		c.Add(time.Minute)
	}
	ids := func(r reply) []string {
		var out []string
		for _, v := range r.body["data"].([]any) {
			out = append(out, v.(map[string]any)["id"].(string))
		}
		return out
	}
	all := d.IntentsFor("pay_1")
	r := do(ctx, d, "GET", "/v1/payment_intents", "", url.Values{"created[gte]": {fmt.Sprint(t0 + 60)}, "limit": {"1"}})
	if got := ids(r); r.status != 200 || len(got) != 1 || got[0] != all[2] || r.body["has_more"] != true {
		t.Fatalf("first page %v (%s), want [%s] and more", got, r.raw, all[2])
	}
	r = do(ctx, d, "GET", "/v1/payment_intents", "", url.Values{"created[gte]": {fmt.Sprint(t0 + 60)}, "limit": {"1"},
		"starting_after": {all[2]}})
	if got := ids(r); len(got) != 1 || got[0] != all[1] || r.body["has_more"] != false {
		t.Fatalf("second page %v, want [%s] and no more", got, all[1])
	}
	r = do(ctx, d, "GET", "/v1/payment_intents", "", url.Values{"created[lt]": {fmt.Sprint(t0 + 60)}})
	if got := ids(r); len(got) != 1 || got[0] != all[0] {
		t.Errorf("created before t0+60: %v, want [%s]", got, all[0])
	}
	if r := do(ctx, d, "GET", "/v1/payment_intents", "", url.Values{"limit": {"101"}}); r.status != 400 {
		t.Errorf("limit 101: %d", r.status)
	}
}

// A stored 500 is the key's answer for 24 hours, and nothing happened.
func TestServerErrorStored(t *testing.T) {
	d, _ := start(t, Options{})
	d.FailNext(CreatePaymentIntent, Fault{Kind: ServerErrorStored})
	ctx := context.Background()
	first := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	second := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	if first.status != 500 || first.replayed || second.status != 500 || !second.replayed {
		t.Fatalf("answers %d (replayed %v), %d (replayed %v); want 500, then 500 replayed", first.status, first.replayed,
			second.status, second.replayed)
	}
	if ids := d.IntentsFor("pay_1"); len(ids) != 0 {
		t.Errorf("intents %v, want none", ids)
	}
	if keys := d.Keys(CreatePaymentIntent); len(keys) != 1 || keys[0] != "k1" {
		t.Errorf("keys %v, want [k1]", keys)
	}
}

// A stored 500 rolled forward: the intent is made and its event recorded,
// the key still replays the 500, and the key rolls forward once only; a
// key whose 500 came after executing (or that succeeded) has nothing to
// roll forward.
func TestRollForward(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	d.FailNext(CreatePaymentIntent, Fault{Kind: ServerErrorStored})
	do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050"))
	id, err := d.RollForward("k1")
	if err != nil {
		t.Fatal(err)
	}
	if ids := d.IntentsFor("pay_1"); len(ids) != 1 || ids[0] != id || d.Status(id) != "succeeded" {
		t.Fatalf("intents %v (%s), want %s succeeded", ids, d.Status(ids[0]), id)
	}
	if l := d.Ledger(id); l.Captured != 1050 || l.Captures != 1 {
		t.Errorf("ledger %+v, want 1050 captured once", l)
	}
	if ev := d.EventsFor(id); len(ev) != 1 || ev[0].Type != "payment_intent.succeeded" {
		t.Errorf("events %v, want payment_intent.succeeded", ev)
	}
	if again := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")); again.status != 500 || !again.replayed {
		t.Errorf("the key after rolling forward: %d (replayed %v), want its 500 replayed", again.status, again.replayed)
	}
	if _, err := d.RollForward("k1"); err == nil {
		t.Error("rolled forward twice")
	}
	d.FailNext(CreatePaymentIntent, Fault{Kind: ServerErrorAfter})
	do(ctx, d, "POST", "/v1/payment_intents", "k2", createForm("1050"))
	if _, err := d.RollForward("k2"); err == nil || len(d.IntentsFor("pay_1")) != 2 {
		t.Errorf("rolled forward a 500 that came after executing: %v, intents %v", err, d.IntentsFor("pay_1"))
	}
}

// An intent's refunds are listed as its intents are: newest first, a page
// of limit after starting_after, has_more while refunds remain.
func TestListRefundsByPage(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	id := do(ctx, d, "POST", "/v1/payment_intents", "k1", createForm("1050")).body["id"].(string)
	for i := range 3 {
		do(ctx, d, "POST", "/v1/refunds", fmt.Sprint("r", i), url.Values{"payment_intent": {id}, "amount": {"100"}})
	}
	ids := func(r reply) []string {
		var out []string
		for _, v := range r.body["data"].([]any) {
			out = append(out, v.(map[string]any)["id"].(string))
		}
		return out
	}
	all := ids(do(ctx, d, "GET", "/v1/refunds", "", url.Values{"payment_intent": {id}}))
	if len(all) != 3 || all[0] < all[1] || all[1] < all[2] {
		t.Fatalf("all refunds %v, want 3, newest first", all)
	}
	r := do(ctx, d, "GET", "/v1/refunds", "", url.Values{"payment_intent": {id}, "limit": {"2"}})
	if got := ids(r); r.status != 200 || len(got) != 2 || got[1] != all[1] || r.body["has_more"] != true {
		t.Fatalf("first page %v (%s), want %v and more", got, r.raw, all[:2])
	}
	r = do(ctx, d, "GET", "/v1/refunds", "", url.Values{"payment_intent": {id}, "limit": {"2"}, "starting_after": {all[1]}})
	if got := ids(r); len(got) != 1 || got[0] != all[2] || r.body["has_more"] != false {
		t.Fatalf("second page %v (%s), want [%s] and no more", got, r.raw, all[2])
	}
	if r := do(ctx, d, "GET", "/v1/refunds", "", url.Values{"payment_intent": {id}, "limit": {"0"}}); r.status != 400 {
		t.Errorf("limit 0: %d", r.status)
	}
}

// An uncaptured intent is canceled or captured by Stripe itself (its
// authorization lapsed; staff in the dashboard), with its event recorded
// and the money as Stripe leaves it; an intent not waiting for a capture
// is refused and left as it was.
func TestAuthorizationSettledByStripe(t *testing.T) {
	d, _ := start(t, Options{})
	ctx := context.Background()
	form := createForm("1050")
	form.Set("capture_method", "manual")
	lapsed := do(ctx, d, "POST", "/v1/payment_intents", "k1", form).body["id"].(string)
	captured := do(ctx, d, "POST", "/v1/payment_intents", "k2", form).body["id"].(string)
	if err := d.ExpireAuthorization(lapsed); err != nil {
		t.Fatal(err)
	}
	if err := d.CaptureFromDashboard(captured, 800); err != nil {
		t.Fatal(err)
	}
	r := do(ctx, d, "GET", "/v1/payment_intents/"+lapsed, "", nil)
	if r.body["status"] != "canceled" || r.body["cancellation_reason"] != "automatic" || d.Ledger(lapsed).Authorized != 0 {
		t.Errorf("lapsed authorization: %s", r.raw)
	}
	if l := d.Ledger(captured); d.Status(captured) != "succeeded" || l.Captured != 800 || l.Captures != 1 {
		t.Errorf("dashboard capture: %s %+v", d.Status(captured), l)
	}
	types := []string{}
	for _, e := range d.Events() {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "payment_intent.canceled,payment_intent.succeeded" {
		t.Errorf("events %v", types)
	}
	if d.ExpireAuthorization(captured) == nil || d.CaptureFromDashboard(lapsed, 0) == nil || d.ExpireAuthorization("pi_nope") == nil {
		t.Error("an intent not waiting for a capture was acted on")
	}
	if d.Status(captured) != "succeeded" || d.Status(lapsed) != "canceled" || len(d.Events()) != 2 {
		t.Error("a refused action changed something")
	}
}
