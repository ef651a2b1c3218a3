package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// The hand-built body must be the JSON a client library would send.
func TestBodyIsTheRequestAsJSON(t *testing.T) {
	for _, tt := range []struct{ key, amount, token string }{
		{"run-1-seed-0", "10.00", ""},
		{`a "quoted" \\ key`, "99.99", ""},
		{"run-2-card-0", "10.00", "pm_card_visa"},
	} {
		var got map[string]any
		if err := json.Unmarshal(body(tt.key, tt.amount, tt.token), &got); err != nil {
			t.Fatalf("body(%q) is not JSON: %v", tt.key, err)
		}
		in := map[string]any{"clientId": "load", "amount": tt.amount, "currency": "BRL", "method": "PIX"}
		if tt.token != "" {
			in["method"], in["paymentMethodToken"] = "CREDIT_CARD", tt.token
		}
		want := map[string]any{
			"query":     mutation,
			"variables": map[string]any{"key": tt.key, "in": in},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body(%q) = %v, want %v", tt.key, got, want)
		}
	}
}

// readResponse must read what net/http's server writes: a sized body, a
// chunked one, and the end of a connection.
func TestReadResponseReadsWhatNetHTTPWrites(t *testing.T) {
	big := strings.Repeat("x", 10_000) // too big for net/http to size: sent chunked
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Write([]byte(`{"data":{"createPayment":{"replayed":true}}}`))
		case "/big":
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(big[:5000]))
			w.(http.Flusher).Flush()
			w.Write([]byte(big[5000:]))
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		}
	}))
	defer srv.Close()
	nc, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	for _, tt := range []struct {
		path    string
		status  int
		body    string
		closing bool
	}{
		{"/small", 200, `{"data":{"createPayment":{"replayed":true}}}`, false},
		{"/big", 418, big, false},
		{"/small", 200, `{"data":{"createPayment":{"replayed":true}}}`, false}, // the connection is still in step
		{"/close", 200, "bye", true},
	} {
		if _, err := fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", tt.path); err != nil {
			t.Fatal(err)
		}
		status, body, closing, err := readResponse(r)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if status != tt.status || string(body) != tt.body || closing != tt.closing {
			t.Errorf("%s: status %d, %d bytes, closing %v; want %d, %d bytes, %v", tt.path, status, len(body), closing, tt.status, len(tt.body), tt.closing)
		}
	}
}

// The capture and refund bodies must be the JSON a client library would
// send.
func TestChangeBodiesAreTheRequestsAsJSON(t *testing.T) {
	for _, tt := range []struct {
		body  []byte
		query string
		vars  map[string]any
	}{
		{captureBody("pay_1", `k "1"`), captureMutation, map[string]any{"id": "pay_1", "key": `k "1"`}},
		{refundBody("pay_2", "0.01", "k-2"), refundMutation, map[string]any{"id": "pay_2", "amount": "0.01", "key": "k-2"}},
	} {
		var got map[string]any
		if err := json.Unmarshal(tt.body, &got); err != nil {
			t.Fatalf("%s is not JSON: %v", tt.body, err)
		}
		if want := map[string]any{"query": tt.query, "variables": tt.vars}; !reflect.DeepEqual(got, want) {
			t.Errorf("body %v, want %v", got, want)
		}
	}
}

const testToken = "load-test-token"

// serve runs the whole HTTP surface over db in process, as the server
// binary would, and returns its URL.
func serve(t *testing.T, db dbtest.DB) string {
	t.Helper()
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(sqlDB)
	svc, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: m.OnAttempt})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Deps{
		Service: svc, Ping: database.Pinger(db.Gorm), Metrics: m, APITokens: []string{testToken},
		Logger: slog.New(slog.DiscardHandler),
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// graphql posts a query and returns the data, failing the test on errors.
func graphql(t *testing.T, url, query string, vars map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		Data   map[string]any
		Errors []any
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) > 0 || res.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %s", query, res.StatusCode, raw)
	}
	return out.Data
}

// A seeded payment is what createPayment would have stored: the server
// reads it in the state its mode needs, and replays its key.
func TestSeedPaymentsAsTheServerWouldStoreThem(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		url := serve(t, db)
		for _, tt := range []struct {
			mode                       Mode
			amount, status, captured   string
			capture, capturedAtIsStamp bool
		}{
			{Capture, "10.00", "AUTHORIZED", "0.00", false, false},
			{Refund, "1000.00", "CAPTURED", "1000.00", true, true},
		} {
			ids, err := SeedPayments(db.Gorm, tt.mode, "pay_"+string(tt.mode)+"_", 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 3 || ids[2] != "pay_"+string(tt.mode)+"_3" {
				t.Fatalf("%s: ids %v", tt.mode, ids)
			}
			p := graphql(t, url, `query($id: ID!) { payment(id: $id) { clientId idempotencyKey amount currency method status
				capturedAmount refundedAmount capturedAt canceledAt attempts { outcome operation } } }`,
				map[string]any{"id": ids[1]})["payment"].(map[string]any)
			want := map[string]any{"clientId": SeedClient, "idempotencyKey": SeedKey(ids[1]), "amount": tt.amount,
				"currency": "BRL", "method": "PIX", "status": tt.status, "capturedAmount": tt.captured,
				"refundedAmount": "0.00", "canceledAt": nil,
				"attempts": []any{map[string]any{"outcome": "CREATED", "operation": "CREATE_PAYMENT"}}}
			capturedAt := p["capturedAt"]
			delete(p, "capturedAt")
			if !reflect.DeepEqual(p, want) || (capturedAt != nil) != tt.capturedAtIsStamp {
				t.Errorf("%s: seeded payment %v, capturedAt %v; want %v", tt.mode, p, capturedAt, want)
			}
			replay := graphql(t, url, `mutation($in: CreatePaymentInput!, $key: String!) {
				createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }`,
				map[string]any{"key": SeedKey(ids[1]), "in": map[string]any{"clientId": SeedClient, "amount": tt.amount,
					"currency": "BRL", "method": "PIX", "capture": tt.capture}})["createPayment"].(map[string]any)
			if replay["replayed"] != true || replay["payment"].(map[string]any)["id"] != ids[1] {
				t.Errorf("%s: the seeded key's create again: %v, want a replay of %s", tt.mode, replay, ids[1])
			}
		}
	})
}

// A short run of each mode against a real server and database: every
// answer is the one the mode expects, and the database holds exactly
// what the answers said was done.
func TestCaptureAndRefundModes(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		url := serve(t, db)
		for _, mode := range []Mode{Capture, Refund} {
			prefix := "pay_run_" + string(mode) + "_"
			// Far more authorizations than a short run can capture; few
			// payments to refund, so that refunds of one payment meet now
			// and then, as they may.
			n := map[Mode]int{Capture: 2000, Refund: 50}[mode]
			ids, err := SeedPayments(db.Gorm, mode, prefix, n)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{URL: url, Token: testToken, Clients: 4,
				Measure: 700 * time.Millisecond, Mode: mode, Payments: ids, RunID: "test-" + string(mode)})
			if err != nil {
				t.Fatal(err)
			}
			want := expected(string(mode))
			if res.Requests == 0 || res.ErrorCount() != 0 || len(res.Outcomes) != 1 || res.Outcomes[want] != res.Requests {
				t.Fatalf("%s: %d requests, outcomes %v, errors %v; want only %q", mode, res.Requests, res.Outcomes, res.Errors, want)
			}
			var changed, minor, refunds int64
			switch mode {
			case Capture:
				err = db.Gorm.Raw(`SELECT COUNT(*), COALESCE(SUM(captured_minor), 0) FROM payments
					WHERE id LIKE ? AND status = 'CAPTURED' AND captured_at IS NOT NULL`, prefix+"%").Row().Scan(&changed, &minor)
				if err == nil && (changed != int64(res.Requests) || minor != 1000*changed) {
					t.Errorf("capture: %d answers, %d payments captured for %d minor units", res.Requests, changed, minor)
				}
			case Refund:
				err = db.Gorm.Raw(`SELECT COALESCE(SUM(refunded_minor), 0), (SELECT COUNT(*) FROM refunds WHERE payment_id LIKE ?)
					FROM payments WHERE id LIKE ?`, prefix+"%", prefix+"%").Row().Scan(&minor, &refunds)
				if err == nil && (minor != int64(res.Requests) || refunds != int64(res.Requests)) {
					t.Errorf("refund: %d answers, %d refunds for %d minor units", res.Requests, refunds, minor)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d requests in %v", mode, res.Requests, res.Elapsed)
		}
	})
}

// A capture run that takes every authorization stops each client once
// none is left, counting the error: too small a seed shows.
func TestCaptureRunsOutOfPayments(t *testing.T) {
	db := dbtest.Open(t, "postgres")
	url := serve(t, db)
	ids, err := SeedPayments(db.Gorm, Capture, "pay_few_", 5)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{URL: url, Token: testToken, Clients: 3,
		Measure: 2 * time.Second, Mode: Capture, Payments: ids, RunID: "few"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes["captured"] != 5 || res.Errors[errNoPayment] != 3 || res.ErrorCount() != 3 {
		t.Errorf("outcomes %v, errors %v; want 5 captured and each of 3 clients out of payments", res.Outcomes, res.Errors)
	}
	if _, err := Run(context.Background(), Config{URL: url, Token: testToken, Clients: 1, Mode: Refund}); err == nil {
		t.Error("a refund run without payments started")
	}
}
