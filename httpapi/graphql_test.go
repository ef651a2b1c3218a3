package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	query := `{"query":"{ payments { edges { cursor } } }"}`
	for name, header := range map[string]string{
		"no header":       "",
		"wrong token":     "Bearer nope",
		"token prefix":    "Bearer test-toke",
		"token extended":  "Bearer test-token-and-more",
		"basic scheme":    "Basic dGVzdC10b2tlbg==",
		"bearer no token": "Bearer ",
		"bare token":      token,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", strings.NewReader(query))
			req.Header.Set("Content-Type", "application/json")
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body gqlResponse
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusUnauthorized || body.code() != "UNAUTHENTICATED" {
				t.Errorf("status %d, code %q; want 401 UNAUTHENTICATED", res.StatusCode, body.code())
			}
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Error("no WWW-Authenticate header")
			}
		})
	}
	for _, tok := range []string{token, "other-token"} {
		if res := b.do(t, "POST", "/graphql", tok, "application/json", query); res.Status != http.StatusOK || len(res.Errors) > 0 {
			t.Errorf("token %q: status %d, errors %+v; want 200", tok, res.Status, res.Errors)
		}
	}
	if res := b.do(t, "GET", "/graphql?query="+`%7Bpayments%7Bedges%7Bcursor%7D%7D%7D`, "", "", ""); res.Status != http.StatusUnauthorized {
		t.Errorf("GET without token: status %d, want 401", res.Status)
	}
}

func TestCreatePaymentOverHTTP(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.create(t, "order-1", input("c1", "10.5", "brl", "PIX"))
		p := first.Payment
		if first.Replayed || p.Amount != "10.50" || p.Currency != "BRL" || p.Method != "PIX" ||
			p.ClientID != "c1" || p.IdempotencyKey != "order-1" || len(p.Attempts) != 1 || p.Attempts[0].Outcome != "CREATED" {
			t.Fatalf("created %+v", first)
		}

		// A JSON number, a string with trailing zeros, an exponent: the same
		// amount, so each is a replay of the first payment.
		for _, amount := range []any{json.Number("10.5"), json.Number("10.50"), "10.500", json.Number("1.05e1")} {
			again := b.create(t, "order-1", input("c1", amount, "BRL", "PIX"))
			if !again.Replayed || again.Payment.ID != p.ID || again.Payment.CreatedAt != p.CreatedAt || again.Payment.Amount != "10.50" {
				t.Errorf("amount %v: %+v, want a replay of %s created at %s", amount, again, p.ID, p.CreatedAt)
			}
		}

		// The same as a literal in the query text, as a number: read from
		// its digits, so a value no float64 holds stays exact.
		literal := `mutation { createPayment(input: {clientId: "c1", amount: 10.50, currency: "BRL", method: PIX}, idempotencyKey: "order-1") { replayed payment { id } } }`
		if res := b.gql(t, literal, nil); len(res.Errors) > 0 || !strings.Contains(string(res.Data["createPayment"]), p.ID) {
			t.Errorf("literal 10.50: %+v, want a replay of %s", res, p.ID)
		}
		big := `mutation { createPayment(input: {clientId: "c1", amount: 12345678901234567.89, currency: "BRL", method: PIX}, idempotencyKey: "big") { payment { amount } } }`
		if res := b.gql(t, big, nil); len(res.Errors) > 0 || string(res.Data["createPayment"]) != `{"payment":{"amount":"12345678901234567.89"}}` {
			t.Errorf("literal 12345678901234567.89: %+v, want it exact", res)
		}
		withDefault := `mutation($a: Decimal = 10.500) { createPayment(input: {clientId: "c1", amount: $a, currency: "BRL", method: PIX}, idempotencyKey: "order-1") { replayed payment { id } } }`
		if res := b.gql(t, withDefault, nil); len(res.Errors) > 0 || !strings.Contains(string(res.Data["createPayment"]), p.ID) {
			t.Errorf("variable default 10.500: %+v, want a replay of %s", res, p.ID)
		}
		bigJSON := b.create(t, "big-json", input("c1", json.Number("9007199254740993.01"), "BRL", "PIX"))
		if bigJSON.Payment.Amount != "9007199254740993.01" {
			t.Errorf("JSON number 9007199254740993.01 came back as %s", bigJSON.Payment.Amount)
		}

		// Another payload with the key: refused, nothing created or changed.
		res := b.gql(t, createMutation, map[string]any{"input": input("c1", "11", "BRL", "BOLETO"), "key": "order-1"})
		if res.code() != "IDEMPOTENCY_KEY_REUSED" || string(res.Data["createPayment"]) != "" && string(res.Data["createPayment"]) != "null" {
			t.Fatalf("conflicting payload: %+v, want IDEMPOTENCY_KEY_REUSED and createPayment null", res)
		}
		if got := fmt.Sprint(res.Errors[0].Extensions["differingFields"]); got != "[amount method]" {
			t.Errorf("differingFields = %s, want [amount method]", got)
		}

		// The same key string for another client is another payment.
		other := b.create(t, "order-1", input("c2", "10.5", "BRL", "PIX"))
		if other.Replayed || other.Payment.ID == p.ID {
			t.Errorf("another client's key: %+v, want a new payment", other)
		}

		q := b.gql(t, `query($id: ID!) { payment(id: $id) { replayCount rejectedCount attempts { outcome differingFields } } }`, map[string]any{"id": p.ID})
		var got struct {
			ReplayCount, RejectedCount int
			Attempts                   []struct {
				Outcome         string
				DifferingFields []string
			}
		}
		if err := json.Unmarshal(q.Data["payment"], &got); err != nil {
			t.Fatal(err)
		}
		if got.ReplayCount != 6 || got.RejectedCount != 1 || len(got.Attempts) != 8 ||
			got.Attempts[7].Outcome != "REJECTED" || strings.Join(got.Attempts[7].DifferingFields, ",") != "amount,method" {
			t.Errorf("payment afterwards: %+v", got)
		}
	})
}

func TestBadInputOverHTTP(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		tests := []struct {
			name      string
			key       string
			input     map[string]any
			wantField string
		}{
			{"empty key", "", input("c1", "1", "BRL", "PIX"), "idempotencyKey"},
			{"blank key", "  ", input("c1", "1", "BRL", "PIX"), "idempotencyKey"},
			{"long key", strings.Repeat("k", 101), input("c1", "1", "BRL", "PIX"), "idempotencyKey"},
			{"key with é", "café", input("c1", "1", "BRL", "PIX"), "idempotencyKey"},
			{"key with newline", "a\nb", input("c1", "1", "BRL", "PIX"), "idempotencyKey"},
			{"amount text", "k", input("c1", "ten", "BRL", "PIX"), "amount"},
			{"amount zero", "k", input("c1", json.Number("0"), "BRL", "PIX"), "amount"},
			{"amount negative", "k", input("c1", "-5", "BRL", "PIX"), "amount"},
			{"amount digits", "k", input("c1", "1.001", "BRL", "PIX"), "amount"},
			{"amount JPY digits", "k", input("c1", json.Number("1.5"), "JPY", "PIX"), "amount"},
			{"amount huge", "k", input("c1", "1e40", "BRL", "PIX"), "amount"},
			{"currency", "k", input("c1", "1", "ZZZ", "PIX"), "currency"},
			{"client empty", "k", input("", "1", "BRL", "PIX"), "clientId"},
			{"client long", "k", input(strings.Repeat("c", 101), "1", "BRL", "PIX"), "clientId"},
		}
		for _, tt := range tests {
			res := b.gql(t, createMutation, map[string]any{"input": tt.input, "key": tt.key})
			if res.Status != http.StatusOK || res.code() != "BAD_USER_INPUT" || res.Errors[0].Extensions["field"] != tt.wantField {
				t.Errorf("%s: status %d, errors %+v; want BAD_USER_INPUT on %s", tt.name, res.Status, res.Errors, tt.wantField)
				continue
			}
			if !strings.Contains(res.Errors[0].Message, tt.wantField) {
				t.Errorf("%s: message %q does not name %s", tt.name, res.Errors[0].Message, tt.wantField)
			}
		}
		// A clientId that is not valid UTF-8 reaches the server as raw
		// bytes or a lone surrogate escape, in a variable or a literal; the
		// decoders turn each into U+FFFD, which is refused.
		for _, body := range []string{
			"{\"query\":\"mutation($c: ID!) { createPayment(input:{clientId:$c, amount:\\\"1\\\", currency:\\\"BRL\\\", method:PIX}, idempotencyKey:\\\"k\\\") { replayed } }\",\"variables\":{\"c\":\"a\xffb\"}}",
			`{"query":"mutation($c: ID!) { createPayment(input:{clientId:$c, amount:\"1\", currency:\"BRL\", method:PIX}, idempotencyKey:\"k\") { replayed } }","variables":{"c":"a\ud800b"}}`,
			"{\"query\":\"mutation { createPayment(input:{clientId:\\\"a\xffb\\\", amount:\\\"1\\\", currency:\\\"BRL\\\", method:PIX}, idempotencyKey:\\\"k\\\") { replayed } }\"}",
		} {
			if res := b.post(t, body); res.code() != "BAD_USER_INPUT" || res.Errors[0].Extensions["field"] != "clientId" {
				t.Errorf("clientId not UTF-8, body %q: %+v, want BAD_USER_INPUT on clientId", body, res)
			}
		}
		for _, amount := range []string{`true`, `{"a":1}`, `[1]`, `null`} {
			body := `{"query":"mutation($a: Decimal!) { createPayment(input:{clientId:\"c\", amount:$a, currency:\"BRL\", method:PIX}, idempotencyKey:\"k\") { replayed } }","variables":{"a":` + amount + `}}`
			if res := b.post(t, body); len(res.Errors) == 0 || res.code() == "INTERNAL_SERVER_ERROR" || res.code() == "" {
				t.Errorf("amount %s: %+v, want a client error with a code", amount, res)
			}
		}
		var n int64
		if err := db.Gorm.Table("payments").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d payments after bad input only (%v), want 0", n, err)
		}
	})
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, body := range []string{
		`{"query":`, `[]`, `{"query": 5}`, `{"query":"{ payments { edges"}`, `{"query":"{ nope }"}`,
		`{"query":"{ payments { edges { cursor } } }","variables":"x"}`, `{}`, ``, `null`,
		`{"query":"{ payments(first: \"x\") { edges { cursor } } }"}`,
		`{"query":"query { payments { edges { cursor } } }","operationName":"Other"}`,
		strings.Repeat("[", 100000),
		// A number for a String! variable: a coercion error, not the key "12".
		`{"query":"mutation($k: String!) { createPayment(input: {clientId: \"c\", amount: \"1\", currency: \"BRL\", method: PIX}, idempotencyKey: $k) { replayed } }","variables":{"k":12}}`,
	} {
		res := b.post(t, body)
		if res.Status < 400 && len(res.Errors) == 0 {
			t.Errorf("body %.40q: status %d and no errors, want a GraphQL error", body, res.Status)
		}
		if res.code() == "" || res.code() == "INTERNAL_SERVER_ERROR" {
			t.Errorf("body %.40q: code %q, want a client error code", body, res.code())
		}
	}
	// Nothing executed, so the answer has no "data" entry (the GraphQL
	// spec), under either response type.
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		for _, body := range []string{`{"query":"{ payments { edges"}`, `{"query":"{ nope }"}`, `{"query":`,
			`{"query":"query($n: Int) { payments(first: $n) { edges { cursor } } }","variables":{"n":"x"}}`} {
			h := restHeaders("")
			h.Set("Accept", accept)
			if _, raw := b.raw(t, "POST", "/graphql", h, body); !strings.Contains(string(raw), `"errors"`) || strings.Contains(string(raw), `"data"`) {
				t.Errorf("accept %s, body %q: %s, want errors and no data entry", accept, body, raw)
			}
		}
	}
	// Still up and answering.
	if res := b.post(t, `{"query":"{ payments { edges { cursor } } }"}`); res.Status != http.StatusOK || len(res.Errors) > 0 {
		t.Errorf("after malformed requests: %+v", res)
	}
}

// Variables are coerced as the GraphQL spec says, before anything runs: a
// String takes only a JSON string (ID still takes integers), an enum only
// one of its values, spelt exactly, and the error says what the type takes
// without repeating the value received.
func TestVariablesAreCoercedStrictly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		tests := []struct {
			name    string
			key     any
			input   map[string]any
			message string // a part of the message; "" means accepted
		}{
			{"a number for the key", json.Number("12"), input("c1", "1", "BRL", "PIX"), "a String must be a JSON string, not a number"},
			{"a boolean for the key", true, input("c1", "1", "BRL", "PIX"), "cannot use a boolean as String"},
			{"a number for the currency", "k-cur", map[string]any{"clientId": "c1", "amount": "1", "currency": json.Number("986"), "method": "PIX"}, "a String must be a JSON string, not a number"},
			{"the method in lower case", "k-pix", input("c1", "1", "BRL", "pix"), `not a valid PaymentMethod: use one of CREDIT_CARD, DEBIT_CARD, PIX, BOLETO (enum values are case-sensitive: did you mean PIX?)`},
			{"an unknown method", "k-cash", input("c1", "1", "BRL", "cash"), `not a valid PaymentMethod`},
			{"a number for the method", "k-3", map[string]any{"clientId": "c1", "amount": "1", "currency": "BRL", "method": json.Number("3")}, `not a valid PaymentMethod`},
			{"a long unknown method", "k-long", input("c1", "1", "BRL", strings.Repeat("X", 5000)), `not a valid PaymentMethod`},
			{"an integer client id", "k-id", map[string]any{"clientId": json.Number("12"), "amount": "1", "currency": "BRL", "method": "PIX"}, ""},
		}
		for _, tt := range tests {
			res := b.gql(t, createMutation, map[string]any{"input": tt.input, "key": tt.key})
			if tt.message == "" {
				if len(res.Errors) > 0 {
					t.Errorf("%s: %+v, want it accepted", tt.name, res.Errors)
				}
				continue
			}
			if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, tt.message) {
				t.Errorf("%s: %+v, want a variable error saying %q", tt.name, res.Errors, tt.message)
				continue
			}
			if len(res.Errors[0].Message) > 200 || strings.Contains(res.Errors[0].Message, "cash") || strings.Contains(res.Errors[0].Message, "XXX") {
				t.Errorf("%s: a message of %d bytes repeats the value: %.100s…", tt.name, len(res.Errors[0].Message), res.Errors[0].Message)
			}
			if len(res.Data) > 0 && string(res.Data["createPayment"]) != "null" {
				t.Errorf("%s: the operation ran: %s", tt.name, res.Data["createPayment"])
			}
		}
		// An Int is a whole number of 32 bits.
		for v, ok := range map[string]bool{`5`: true, `1.5`: false, `1e2`: false, `3000000000`: false, `-2147483649`: false} {
			res := b.post(t, `{"query":"query($n: Int) { payments(first: $n) { edges { cursor } } }","variables":{"n":`+v+`}}`)
			if got := len(res.Errors) == 0; got != ok || !ok && (res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "whole number")) {
				t.Errorf("Int variable %s: %+v, want accepted %v (a variable error saying what an Int is)", v, res.Errors, ok)
			}
		}
		var keys []string
		if err := db.Gorm.Table("payments").Pluck("idempotency_key", &keys).Error; err != nil {
			t.Fatal(err)
		}
		if strings.Join(keys, ",") != "k-id" {
			t.Errorf("payments were created with the keys %v, want only k-id (the integer client id)", keys)
		}
	})
}

// goInternals matches what a message must not name: Go packages, types,
// kinds and the decoder's own words.
var goInternals = regexp.MustCompile(`graphql\.|httpapi\.|RawParams|restCreateBody|Go (value|struct|type)|json:|interface \{|map\[|\bslice\b|\bu?int(8|16|32|64)?\b|float(32|64)|%!`)

// Error messages use fixed words: they never repeat the request body or the
// URL, nor name Go's types; and every error has a code.
func TestErrorMessagesAreFixed(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	const marker = "MARKER-7f3a"
	type answer struct {
		status int
		body   string
	}
	post := func(path, body string) answer {
		res, raw := b.raw(t, "POST", path, restHeaders("k-"+marker[:6]), body)
		return answer{res.StatusCode, string(raw)}
	}
	get := func(url string) answer {
		res, raw := b.raw(t, "GET", url, restHeaders(""), "")
		return answer{res.StatusCode, string(raw)}
	}
	answers := map[string]answer{
		"a GraphQL body that is an array":   post("/graphql", `[1,2,"`+marker+`"]`),
		"variables that are an array":       post("/graphql", `{"query":"{ __typename }","variables":["`+marker+`"]}`),
		"several operations, none named":    post("/graphql", `{"query":"query A { __typename } query B { __typename }"}`),
		"an unknown operation name":         post("/graphql", `{"query":"query A { __typename }","operationName":"`+marker+`"}`),
		"a list for an input object":        post("/graphql", `{"query":"query($f: PaymentFilter) { payments(filter: $f) { edges { cursor } } }","variables":{"f":["`+marker+`"]}}`),
		"a string for a Boolean":            post("/graphql", `{"query":"query($f: PaymentFilter) { payments(filter: $f) { edges { cursor } } }","variables":{"f":{"flagged":"`+marker+`"}}}`),
		"an object for a Decimal":           post("/graphql", `{"query":"mutation($a: Decimal!) { createPayment(input: {clientId: \"c\", amount: $a, currency: \"BRL\", method: PIX}, idempotencyKey: \"k\") { replayed } }","variables":{"a":{"x":"`+marker+`"}}}`),
		"GET with variables not JSON":       get("/graphql?query=%7B__typename%7D&variables=" + marker),
		"GET with a broken escape":          get("/graphql?query=%7B__typename%7D" + marker + "%zz"),
		"a REST body that is an array":      post("/api/payments", `[1,2,"`+marker+`"]`),
		"a REST body with a wrong type":     post("/api/payments", `{"clientId":{"a":"`+marker+`"},"amount":"1","currency":"BRL","method":"PIX"}`),
		"a REST body with an unknown field": post("/api/payments", `{"`+marker+`":1}`),
		"a REST currency":                   post("/api/payments", `{"clientId":"c","amount":"1","currency":"`+marker+`","method":"PIX"}`),
		"a REST method":                     post("/api/payments", `{"clientId":"c","amount":"1","currency":"BRL","method":"`+marker+`"}`),
		"a REST amount":                     post("/api/payments", `{"clientId":"c","amount":"`+marker+`","currency":"BRL","method":"PIX"}`),
		"a GraphQL currency":                post("/graphql", `{"query":"mutation { createPayment(input: {clientId: \"c\", amount: \"1\", currency: \"`+marker+`\", method: PIX}, idempotencyKey: \"k\") { replayed } }"}`),
	}
	for name, a := range answers {
		if a.status < 400 && !strings.Contains(a.body, `"errors"`) {
			t.Errorf("%s: %d %s, want an error", name, a.status, a.body)
			continue
		}
		if strings.Contains(a.body, marker) {
			t.Errorf("%s: the answer repeats what was sent: %s", name, a.body)
		}
		if leak := goInternals.FindString(a.body); leak != "" {
			t.Errorf("%s: the answer names Go internals (%s): %s", name, leak, a.body)
		}
		if strings.Contains(a.body, "operation  not found") || !strings.Contains(a.body, `"code"`) {
			t.Errorf("%s: %s", name, a.body)
		}
	}
}

func TestPaymentsQuery(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		var created []string
		for i := range 5 {
			created = append(created, b.create(t, fmt.Sprintf("k%d", i), input("c1", "1", "USD", "DEBIT_CARD")).Payment.ID)
		}
		b.create(t, "k0", input("c1", "1", "USD", "DEBIT_CARD")) // replay: flags k0

		const list = `query($after: String, $filter: PaymentFilter) { payments(first: 2, after: $after, filter: $filter) {
			edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`
		var seen []string
		var after any
		for {
			res := b.gql(t, list, map[string]any{"after": after})
			var conn struct {
				Edges []struct {
					Cursor string
					Node   struct{ ID string }
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
			if err := json.Unmarshal(res.Data["payments"], &conn); err != nil {
				t.Fatalf("%+v: %v", res, err)
			}
			for _, e := range conn.Edges {
				seen = append(seen, e.Node.ID)
			}
			if !conn.PageInfo.HasNextPage {
				break
			}
			after = *conn.PageInfo.EndCursor
		}
		for i, id := range seen {
			if want := created[len(created)-1-i]; id != want {
				t.Fatalf("page order %v, want newest first %v", seen, created)
			}
		}
		if len(seen) != 5 {
			t.Errorf("saw %d payments, want 5", len(seen))
		}

		flagged := b.gql(t, list, map[string]any{"filter": map[string]any{"flagged": true}})
		if !strings.Contains(string(flagged.Data["payments"]), created[0]) || strings.Contains(string(flagged.Data["payments"]), created[1]) {
			t.Errorf("flagged: %s, want only %s", flagged.Data["payments"], created[0])
		}
		if res := b.gql(t, list, map[string]any{"after": "bogus"}); res.code() != "BAD_USER_INPUT" {
			t.Errorf("bad cursor: %+v, want BAD_USER_INPUT", res)
		}
		if res := b.gql(t, `{ payments(first: 101) { edges { cursor } } }`, nil); res.code() != "BAD_USER_INPUT" {
			t.Errorf("first: 101: %+v, want BAD_USER_INPUT", res)
		}
		if res := b.gql(t, `{ payment(id: "pay_missing") { id } }`, nil); len(res.Errors) > 0 || string(res.Data["payment"]) != "null" {
			t.Errorf("unknown payment: %+v, want null without errors", res)
		}
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		if res := b.do(t, "GET", "/healthz", "", "", ""); res.Status != http.StatusOK {
			t.Errorf("healthz: %d, want 200", res.Status)
		}
		sqlDB, err := db.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		sqlDB.Close()
		if res := b.do(t, "GET", "/healthz", "", "", ""); res.Status != http.StatusServiceUnavailable {
			t.Errorf("healthz with the database closed: %d, want 503", res.Status)
		}
	})
}
