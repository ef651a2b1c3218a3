package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// publicResolver says every name is a public address, except those that
// start with "internal.".
type publicResolver struct{}

func (publicResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if strings.HasPrefix(host, "internal.") {
		return []net.IPAddr{{IP: net.ParseIP("10.0.0.7")}}, nil
	}
	return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil
}

// eventsBundle serves the whole HTTP surface with events and webhooks
// running.
type eventsBundle struct {
	*bundle
	ev *events.Service
	wh *webhooks.Service
}

// setupEvents serves the whole HTTP surface with events and webhooks
// running, changed by the options.
func setupEvents(t *testing.T, db dbtest.DB, change ...func(*httpapi.Deps)) *eventsBundle {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	ev, err := events.New(db.Gorm, events.Options{Logger: quiet, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
	if err != nil {
		t.Fatal(err)
	}
	wh, err := webhooks.New(db.Gorm, ev, webhooks.Config{Logger: quiet, Resolver: publicResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); !ev.Leader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the events service did not lead within 10 s")
		}
	}
	b := setup(t, db, append([]func(*httpapi.Deps){func(d *httpapi.Deps) { d.Service, d.Events, d.Webhooks = svc, ev, wh }}, change...)...)
	return &eventsBundle{bundle: b, ev: ev, wh: wh}
}

const captureMutation = `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, idempotencyKey: $key) { replayed } }`
const refundMutation = `mutation($id: ID!, $key: String!, $amount: Decimal) { refundPayment(paymentId: $id, amount: $amount, idempotencyKey: $key) { refund { id } } }`

func (b *eventsBundle) mustGQL(t *testing.T, query string, vars map[string]any) map[string]json.RawMessage {
	t.Helper()
	res := b.gql(t, query, vars)
	if res.Status != http.StatusOK || len(res.Errors) > 0 {
		t.Fatalf("status %d, errors %+v", res.Status, res.Errors)
	}
	return res.Data
}

// TestSubscriptionOverWebSocket: graphql-transport-ws with the token in
// connection_init; every change arrives with the payment as it left it;
// a second subscription with `after` gets what followed, and nothing twice.
func TestSubscriptionOverWebSocket(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.Subscribe(ctx, "1", streamtest.EventsQuery, nil); err != nil {
			t.Fatal(err)
		}
		// Without `after`, the subscription gets the events numbered once
		// it follows live ones: wait until it does.
		for deadline := time.Now().Add(10 * time.Second); b.ev.Subscribers() != 1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the subscription follows no live events after 10 s (%d subscribers)", b.ev.Subscribers())
			}
		}

		in := input("shop-ws", "30.00", "BRL", "CREDIT_CARD")
		in["capture"] = false
		p := b.create(t, "ws-create", in).Payment
		b.mustGQL(t, captureMutation, map[string]any{"id": p.ID, "key": "ws-capture"})
		b.mustGQL(t, captureMutation, map[string]any{"id": p.ID, "key": "ws-capture"}) // a replay: no event
		b.mustGQL(t, refundMutation, map[string]any{"id": p.ID, "key": "ws-refund", "amount": "10"})

		var got []streamtest.Event
		for range 3 {
			e, err := ws.NextEvent(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		want := []struct{ typ, key, status, captured, refunded string }{
			{"PAYMENT_CREATED", "ws-create", "AUTHORIZED", "0.00", "0.00"},
			{"PAYMENT_CAPTURED", "ws-capture", "CAPTURED", "30.00", "0.00"},
			{"PAYMENT_REFUNDED", "ws-refund", "PARTIALLY_REFUNDED", "30.00", "10.00"},
		}
		for i, w := range want {
			g := got[i]
			if g.Type != w.typ || g.IdempotencyKey != w.key || g.Payment.ID != p.ID || g.Payment.Status != w.status ||
				g.Payment.CapturedAmount != w.captured || g.Payment.RefundedAmount != w.refunded || g.ID != fmt.Sprint(i+1) {
				t.Errorf("event %d = %+v, want %+v", i, g, w)
			}
		}
		if got[2].Refund == nil || got[2].Refund.Amount != "10.00" || got[0].Refund != nil {
			t.Errorf("refunds: %+v, %+v", got[0].Refund, got[2].Refund)
		}

		// Resume after the first: the other two, then live ones.
		if err := ws.Subscribe(ctx, "2", streamtest.EventsQuery, map[string]any{"after": got[0].ID, "payment": p.ID}); err != nil {
			t.Fatal(err)
		}
		b.mustGQL(t, refundMutation, map[string]any{"id": p.ID, "key": "ws-refund-2"})
		var resumed []string
		for len(resumed) < 3 {
			m, err := ws.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID == "2" && m.Type == "next" {
				var resp struct {
					Data struct{ PaymentEvents streamtest.Event }
				}
				_ = json.Unmarshal(m.Payload, &resp)
				resumed = append(resumed, resp.Data.PaymentEvents.ID)
			}
		}
		if strings.Join(resumed, ",") != "2,3,4" {
			t.Errorf("resumed after 1: %v, want 2,3,4", resumed)
		}
	})
}

// TestWebSocketRefusesBadTokens: a connection_init without a valid token is
// closed with 4403.
func TestWebSocketRefusesBadTokens(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	for _, auth := range []string{"Bearer wrong-token", "", "Basic " + basic("admin", adminPassword), token} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := streamtest.DialWS(ctx, b.srv.URL, auth)
		cancel()
		if code := streamtest.CloseCode(err); code != graph.CloseForbidden {
			t.Errorf("init with %q: %v (close code %d), want close 4403", auth, err, code)
		}
	}
}

// TestSubscriptionOverSSE: graphql-sse's distinct connections mode, the
// token in the Authorization header.
func TestSubscriptionOverSSE(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()

		noToken, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "", streamtest.EventsQuery, nil)
		if err != nil {
			t.Fatal(err)
		}
		noToken.Close()
		if noToken.Response.StatusCode != http.StatusUnauthorized {
			t.Errorf("SSE without a token: %d, want 401", noToken.Response.StatusCode)
		}

		first := b.create(t, "sse-0", input("shop-sse", "1.00", "BRL", "PIX")).Payment
		stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, streamtest.EventsQuery,
			map[string]any{"client": "shop-sse", "after": "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		if ct := stream.Response.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || stream.Response.StatusCode != 200 {
			t.Fatalf("SSE answer: %d %s", stream.Response.StatusCode, ct)
		}
		e, err := stream.NextEvent()
		if err != nil || e.Payment.ID != first.ID || e.ID != "1" {
			t.Fatalf("first event: %+v, %v", e, err)
		}
		b.create(t, "sse-other-client", input("shop-other", "1.00", "BRL", "PIX"))
		second := b.create(t, "sse-1", input("shop-sse", "2.00", "BRL", "PIX")).Payment
		e, err = stream.NextEvent()
		if err != nil || e.Payment.ID != second.ID || e.Type != "PAYMENT_CREATED" || e.Payment.Amount != "2.00" {
			t.Fatalf("live event: %+v, %v", e, err)
		}
	})
}

// TestSubscriptionArguments: a malformed `after` is BAD_USER_INPUT.
func TestSubscriptionArguments(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Subscribe(ctx, "1", streamtest.EventsQuery, map[string]any{"after": "yesterday"}); err != nil {
		t.Fatal(err)
	}
	m, err := ws.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Payload), "BAD_USER_INPUT") {
		t.Errorf("after=yesterday: %s %s", m.Type, m.Payload)
	}
}

// TestWebhookEndpointsGraphQL: create (the secret once), list, delete; a
// URL that reaches a private address is BAD_USER_INPUT.
func TestWebhookEndpointsGraphQL(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	const create = `mutation($url: String!, $events: [PaymentEventType!]) {
	  createWebhookEndpoint(url: $url, events: $events) { secret endpoint { id url events createdAt } } }`
	for _, bad := range []string{"http://127.0.0.1:9/hook", "http://internal.shop.example/hook", "ftp://shop.example/", "http://169.254.169.254/"} {
		res := b.gql(t, create, map[string]any{"url": bad})
		if res.code() != "BAD_USER_INPUT" || string(res.Data["createWebhookEndpoint"]) != "null" {
			t.Errorf("createWebhookEndpoint(%s): %s %s", bad, res.code(), res.Data["createWebhookEndpoint"])
		}
	}
	data := b.mustGQL(t, create, map[string]any{"url": "https://shop.example/hooks", "events": []string{"PAYMENT_REFUNDED", "PAYMENT_CREATED"}})
	var created struct {
		Secret   string
		Endpoint struct {
			ID, URL, CreatedAt string
			Events             []string
		}
	}
	if err := json.Unmarshal(data["createWebhookEndpoint"], &created); err != nil {
		t.Fatal(err)
	}
	if len(created.Secret) < 32 || created.Endpoint.URL != "https://shop.example/hooks" ||
		strings.Join(created.Endpoint.Events, ",") != "PAYMENT_CREATED,PAYMENT_REFUNDED" {
		t.Errorf("created: %+v", created)
	}
	list := b.mustGQL(t, `{ webhookEndpoints { id url events } }`, nil)
	if strings.Contains(string(list["webhookEndpoints"]), "secret") || !strings.Contains(string(list["webhookEndpoints"]), created.Endpoint.ID) {
		t.Errorf("webhookEndpoints: %s", list["webhookEndpoints"])
	}
	del := `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }`
	if d := b.mustGQL(t, del, map[string]any{"id": created.Endpoint.ID}); string(d["deleteWebhookEndpoint"]) != "true" {
		t.Errorf("delete: %s", d["deleteWebhookEndpoint"])
	}
	if d := b.mustGQL(t, del, map[string]any{"id": created.Endpoint.ID}); string(d["deleteWebhookEndpoint"]) != "false" {
		t.Errorf("delete again: %s", d["deleteWebhookEndpoint"])
	}
	if l := b.mustGQL(t, `{ webhookEndpoints { id } }`, nil); string(l["webhookEndpoints"]) != "[]" {
		t.Errorf("after delete: %s", l["webhookEndpoints"])
	}
}

// TestAdminWebhooksPage: the page lists endpoints and deliveries; a resend
// of a failed delivery re-arms it once, and a second click says it changed
// nothing.
func TestAdminWebhooksPage(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	ep, _, err := b.wh.CreateEndpoint(t.Context(), "", "https://shop.example/hooks", nil)
	if err != nil {
		t.Fatal(err)
	}
	paid := b.create(t, "admin-hook", input("shop-admin", "1.00", "BRL", "PIX")).Payment
	var id int64
	for deadline := time.Now().Add(5 * time.Second); id == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no webhook delivery within 5 s of the payment")
		}
		b.db.Gorm.Raw(`SELECT id FROM webhook_deliveries`).Scan(&id)
	}
	if err := b.db.Gorm.Exec(`UPDATE webhook_deliveries SET status = 'FAILED', attempts = 3, last_status = 503, last_error = 'down', last_attempt_at = ? WHERE id = ?`, time.Now().UTC(), id).Error; err != nil {
		t.Fatal(err)
	}
	// Secrets in an endpoint's URL are not shown, to a viewer or to an
	// admin: its user information (a password, or a token as the user
	// name), its query, and its path past the first word (Slack's).
	for _, u := range []string{"https://shop:s3cret-in-url@shop.example/other", "https://s3cret-in-url@shop.example/user",
		"https://shop.example/query?token=s3cret-in-url", "https://hooks.slack.example/services/T000/B000/s3cret-in-url"} {
		if _, _, err := b.wh.CreateEndpoint(t.Context(), "", u, nil); err != nil {
			t.Fatal(err)
		}
	}
	admin := b.asAdmin(t)
	for who, c := range map[string]*staffClient{"viewer": b.addStaff(t, "vic", staff.Viewer), "admin": admin} {
		res, body := c.do(t, "GET", "/admin/webhooks", nil, "")
		page := string(body)
		if res.StatusCode != 200 || strings.Contains(page, "s3cret-in-url") || strings.Contains(page, "T000") ||
			!strings.Contains(page, "https://…@shop.example/other") || !strings.Contains(page, "https://…@shop.example/user") ||
			!strings.Contains(page, "https://shop.example/query?…") || !strings.Contains(page, "https://hooks.slack.example/services/…") {
			t.Errorf("the webhooks page shows the %s a secret held in an endpoint's URL (%d)", who, res.StatusCode)
		}
	}
	res, body := admin.do(t, "GET", "/admin/webhooks", nil, "")
	page := string(body)
	if res.StatusCode != 200 || !strings.Contains(page, ep.ID) || !strings.Contains(page, "FAILED") ||
		!strings.Contains(page, "HTTP 503: down") || !strings.Contains(page, fmt.Sprintf("/admin/webhooks/deliveries/%d/resend", id)) {
		t.Fatalf("webhooks page: %d\n%s", res.StatusCode, page)
	}
	if !strings.Contains(page, `href="/admin/payments/`+paid.ID+`"`) {
		t.Errorf("the delivery does not link the payment %s it is about", paid.ID)
	}
	if _, home := admin.do(t, "GET", "/admin", nil, ""); !strings.Contains(string(home), `href="/admin/webhooks"`) {
		t.Error("the nav has no link to the Webhooks page")
	}
	resend := func() string {
		res, _ := admin.do(t, "POST", fmt.Sprintf("/admin/webhooks/deliveries/%d/resend", id),
			http.Header{"Origin": {b.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, "")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("resend: %d", res.StatusCode)
		}
		return res.Header.Get("Location")
	}
	if first, second := resend(), resend(); first != fmt.Sprintf("/admin/webhooks?resent=%d", id) ||
		second != fmt.Sprintf("/admin/webhooks?unchanged=%d", id) {
		t.Errorf("two resends went to %s and %s", first, second)
	}
	var status string
	b.db.Gorm.Raw(`SELECT status FROM webhook_deliveries WHERE id = ?`, id).Scan(&status)
	if status != "PENDING" {
		t.Errorf("after resend: %s", status)
	}
	// Both clicks are in the audit log, newest first.
	target := fmt.Sprintf("delivery %d", id)
	if got := b.auditLines(t, "?action=webhook.resend"); len(got) != 2 ||
		!strings.HasPrefix(got[0], "webhook.resend|admin|") || !strings.HasSuffix(got[0], "|"+target+"|failed|not a failed delivery: nothing changed") ||
		!strings.HasSuffix(got[1], "|"+target+"|ok|sent again") {
		t.Errorf("audit of the resends: %q", got)
	}
	_, body = admin.do(t, "GET", fmt.Sprintf("/admin/webhooks?unchanged=%d", id), nil, "")
	if !strings.Contains(string(body), "nothing was changed") {
		t.Error("the second click does not say it changed nothing")
	}
	if res, _ := b.newClient(t).do(t, "GET", "/admin/webhooks", nil, ""); res.StatusCode != http.StatusSeeOther {
		t.Errorf("webhooks page without a session: %d, want 303 to the sign-in", res.StatusCode)
	}
}

// TestSubscriptionNeedsAStream: a subscription sent as a plain POST is
// refused at once instead of hanging until an event.
func TestSubscriptionNeedsAStream(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	res := b.post(t, `{"query":"subscription { paymentEvents { id } }"}`)
	if res.code() != "BAD_REQUEST" || !strings.Contains(res.Errors[0].Message, "text/event-stream") {
		t.Errorf("plain POST subscription: %d %+v", res.Status, res.Errors)
	}
}

// A subscription the server ends (here: its events service stops, as at a
// shutdown) gets an error message with its code over graphql-transport-ws,
// not a plain complete, so the client knows to resume with `after`.
func TestSubscriptionEndsWithItsError(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ev, err := events.New(db.Gorm, events.Options{Logger: slog.New(slog.DiscardHandler), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	b := setup(t, db, func(d *httpapi.Deps) { d.Events = ev })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Subscribe(ctx, "1", streamtest.EventsQuery, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ev.Subscribers() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never started")
		}
	}
	stop()
	<-done
	m, err := ws.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var errs []struct{ Extensions struct{ Code string } }
	if m.Type != "error" || m.ID != "1" || json.Unmarshal(m.Payload, &errs) != nil || len(errs) != 1 || errs[0].Extensions.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("the subscription ended with %s %s %s, want an error with SERVICE_UNAVAILABLE", m.Type, m.ID, m.Payload)
	}
}
