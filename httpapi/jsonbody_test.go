package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// testBody stands for any REST body: fields of each JSON kind.
type testBody struct {
	ClientID string          `json:"clientId"`
	Amount   json.RawMessage `json:"amount"`
	Count    int             `json:"count"`
	Capture  *bool           `json:"capture"`
}

// goInternals matches what a message must not name: Go packages, types
// and the decoder's own words.
var goInternals = regexp.MustCompile(`httpapi\.|testBody|restCreateBody|json:|jsontext|Go (value|type)|RawMessage|\[\]|\bu?int(8|16|32|64)?\b|float(32|64)|interface \{|map\[`)

func TestDecodeJSONBody(t *testing.T) {
	t.Parallel()
	const jsonType = "application/json"
	tests := []struct {
		name, contentType, body string
		optional                bool
		status                  int    // 0: accepted
		code                    string // for refusals
		message                 string // a part of the message, for refusals
	}{
		{"an object", jsonType, `{"clientId":"c","amount":"1.50","count":2,"capture":false}`, false, 0, "", ""},
		{"with a charset", jsonType + "; charset=utf-8", `{"clientId":"c"}`, false, 0, "", ""},
		{"surrounding space", jsonType, " \n{\"clientId\":\"c\"}\n ", false, 0, "", ""},
		{"no body, optional, no content type", "", ``, true, 0, "", ""},
		{"only space, optional", jsonType, `   `, true, 0, "", ""},

		{"no body, required", "", ``, false, 400, "BAD_USER_INPUT", "empty"},
		{"text/plain", "text/plain", `{"clientId":"c"}`, false, 415, "UNSUPPORTED_MEDIA_TYPE", "application/json"},
		{"no content type", "", `{"clientId":"c"}`, true, 415, "UNSUPPORTED_MEDIA_TYPE", "application/json"},
		{"form", "application/x-www-form-urlencoded", `clientId=c`, false, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"a duplicated field", jsonType, `{"amount":"1","amount":"2"}`, false, 400, "BAD_USER_INPUT", "the field amount appears more than once"},
		{"a duplicated unknown field", jsonType, `{"zz":"1","zz":"2"}`, false, 400, "BAD_USER_INPUT", "a field appears more than once"},
		{"another letter case", jsonType, `{"Amount":"1"}`, false, 400, "BAD_USER_INPUT", "case-sensitive"},
		{"upper case", jsonType, `{"AMOUNT":"1"}`, false, 400, "BAD_USER_INPUT", "case-sensitive"},
		{"an unknown field", jsonType, `{"amuont":"1"}`, false, 400, "BAD_USER_INPUT", "clientId, amount, count, capture"},
		{"a misspelt field named", jsonType, `{"amuont":"1"}`, false, 400, "BAD_USER_INPUT", `the field "amuont" is not one this endpoint takes. Did you mean "amount"?`},
		{"another letter case named", jsonType, `{"Amount":"1"}`, false, 400, "BAD_USER_INPUT", `the field "Amount" is not one this endpoint takes. Did you mean "amount"?`},
		{"a field close to none", jsonType, `{"zebra":"1"}`, false, 400, "BAD_USER_INPUT", `the field "zebra" is not one this endpoint takes; it takes clientId`},
		{"an odd name not repeated", jsonType, `{"<script>x":"1"}`, false, 400, "BAD_USER_INPUT", `a field this endpoint does not take; it takes clientId`},
		{"brackets after the object", jsonType, `{"clientId":"c"}]]]`, false, 400, "BAD_USER_INPUT", "nothing after it"},
		{"a second object", jsonType, `{"clientId":"c"} {}`, false, 400, "BAD_USER_INPUT", "nothing after it"},
		{"a Unicode space after the object", jsonType, "{\"clientId\":\"c\"}\u2028", false, 400, "BAD_USER_INPUT", "nothing after it"},
		{"a vertical tab after the object", jsonType, "{\"clientId\":\"c\"}\v", false, 400, "BAD_USER_INPUT", "nothing after it"},
		{"JSON's whitespace after the object", jsonType, "{\"clientId\":\"c\"} \r\n\t", false, 0, "", ""},
		{"only a Unicode space, optional", jsonType, "\u00a0", true, 400, "BAD_USER_INPUT", ""},
		{"an array", jsonType, `[]`, false, 400, "BAD_USER_INPUT", "must be a JSON object"},
		{"null", jsonType, `null`, false, 400, "BAD_USER_INPUT", "must be a JSON object"},
		{"cut short", jsonType, `{"clientId":`, false, 400, "BAD_USER_INPUT", "ends before"},
		{"not JSON", jsonType, `clientId=c`, false, 400, "BAD_USER_INPUT", "not valid JSON"},
		{"invalid UTF-8", jsonType, "{\"clientId\":\"\xff\"}", false, 400, "BAD_USER_INPUT", "not valid JSON"},
		{"a number for a string", jsonType, `{"clientId":5}`, false, 400, "BAD_USER_INPUT", "the field clientId must be a string"},
		{"a fraction for a count", jsonType, `{"count":1.5}`, false, 400, "BAD_USER_INPUT", "the field count must be a whole number"},
		{"a string for a boolean", jsonType, `{"capture":"no"}`, false, 400, "BAD_USER_INPUT", "the field capture must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/api/x", strings.NewReader(tt.body))
			if tt.body == "" {
				req = httptest.NewRequest("POST", "/api/x", nil)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			var dst testBody
			err := decodeJSONBody(req, &dst, tt.optional)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %+v, want %d %s", dst, tt.status, tt.code)
			}
			p := bodyProblem(err)
			if p.Status != tt.status || p.Code != tt.code || !strings.Contains(p.Message, tt.message) {
				t.Errorf("%d %s %q, want %d %s with %q", p.Status, p.Code, p.Message, tt.status, tt.code, tt.message)
			}
			if leak := goInternals.FindString(p.Message); leak != "" {
				t.Errorf("the message %q names Go internals (%s)", p.Message, leak)
			}
		})
	}
}

func TestDecodeJSONBodyTooLarge(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/api/x", strings.NewReader(`{"clientId":"`+strings.Repeat("c", 100)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Body = http.MaxBytesReader(rec, req.Body, 50)
	var dst testBody
	if p := bodyProblem(decodeJSONBody(req, &dst, false)); p.Status != http.StatusRequestEntityTooLarge || p.Code != "PAYLOAD_TOO_LARGE" {
		t.Errorf("%+v, want 413 PAYLOAD_TOO_LARGE", p)
	}
}
