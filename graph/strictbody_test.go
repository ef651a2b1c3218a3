package graph

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// A createPayment request as clients send it, the shape of most bodies.
const createBody = `{"query":"mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }","variables":{"key":"bench-1","in":{"clientId":"bench","amount":"10.00","currency":"BRL","method":"PIX"}}}`

func TestBodyProblem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{createBody, true},
		{`{"query":"{ __typename }"}`, true},
		{` {"query":"{ __typename }"} ` + "\n", true},
		{`{"query":"{ __typename }","extensions":{"a":{"b":[1,2,{"c":null}]}}}`, true},
		{`{}`, true},
		{`{"query":"{ __typename }"} garbage`, false},
		{`{"query":"{ __typename }"}{}`, false},
		{`{"query":"a","query":"b"}`, false},
		{`{"query":"a","Query":"b"}`, false},
		{`{"variables":{"in":{"amount":"1","amount":"2"}}}`, false},
		{`{"query":"a","variables":{"in":{"x":{"y":1,"y":2}}}}`, false},
		{`[{"query":"a"}]`, false},
		{`"query"`, false},
		{`{"query":`, false},
		{``, false},
		{`{"other":1,"other2":{"query":1,"Query":2}}`, true}, // only the request's own members fold case
		// JSON's whitespace only: U+2028, U+00A0, \v and \f are not.
		{"{\"query\":\"a\"}\u2028", false},
		{"{\"query\":\"a\"}\u00a0", false},
		{"{\"query\":\"a\"}\v", false},
		{"\f{\"query\":\"a\"}", false},
		{"{\"query\":\"a\"}\r\n\t ", true},
	} {
		if got := bodyProblem([]byte(tt.body)); (got == "") != tt.ok {
			t.Errorf("bodyProblem(%s) = %q, want ok %v", tt.body, got, tt.ok)
		}
	}
}

func BenchmarkBodyProblem(b *testing.B) {
	body := []byte(createBody)
	b.ReportAllocs()
	for b.Loop() {
		if p := bodyProblem(body); p != "" {
			b.Fatal(p)
		}
	}
}

// gqlgenParams decodes body as gqlgen's POST transport does.
func gqlgenParams(body []byte) (graphql.RawParams, error) {
	var p graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := dec.Decode(&p)
	return p, err
}

// readBodySeeds are bodies readBody decodes, or leaves to gqlgen, with the
// members and values of every kind.
var readBodySeeds = []string{
	createBody,
	`{"query":"{ __typename }"}`,
	`{"Query":"{ __typename }","OPERATIONNAME":"A","Variables":null,"extensions":null}`,
	`{"query":null,"operationName":null}`,
	`{"query":"q","variables":{"a":[],"b":{},"c":[1,-2.5e10,"x",true,false,null,[[{}]]],"d":0.10,"A":1}}`,
	`{"query":"q","extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`,
	`{"query":"\u00e9\ud83d\ude00\n\"\\\/","variables":{"k\u00e9":"\ud83d\ude00"}}`,
	`{"other":[1,{"query":2}],"query":"q"}`,
	"{\"query\":\"q\",\"variables\":{\"s\":\"\xff\"}}",
	`{"query":"q","variables":{"s":"\ud800"}}`,
	"{\"query\":\"\xff\"}",
	`{"query":"\ufffd"}`,
	`{"query":5}`,
	`{"query":["q"]}`,
	`{"variables":[1]}`,
	`{"variables":"x"}`,
	`{"extensions":true}`,
	`{"operationName":{}}`,
	`{}`,
}

// TestReadBodyDecodesAsGqlgen: what readBody decodes is what gqlgen's
// transport would have decoded from the same body.
func TestReadBodyDecodesAsGqlgen(t *testing.T) {
	t.Parallel()
	var decoded int
	for _, body := range readBodySeeds {
		if checkReadBody(t, []byte(body)) {
			decoded++
		}
	}
	if decoded < 9 {
		t.Errorf("readBody decoded %d of the seeds, want the 9 it can", decoded)
	}
}

func FuzzReadBody(f *testing.F) {
	for _, body := range readBodySeeds {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkReadBody(t, body) })
}

// checkReadBody fails t if readBody decodes body otherwise than gqlgen,
// or finds a problem in a body bodyProblem passes; it says whether
// readBody decoded it.
func checkReadBody(t *testing.T, body []byte) bool {
	t.Helper()
	var got graphql.RawParams
	problem, decoded := readBody(body, &got)
	if problem != bodyProblem(body) {
		t.Fatalf("readBody(%q) finds %q, bodyProblem %q", body, problem, bodyProblem(body))
	}
	if !decoded {
		return false
	}
	want, err := gqlgenParams(body)
	if err != nil {
		t.Fatalf("readBody(%q) decoded what gqlgen refuses: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readBody(%q) = %#v, gqlgen decodes %#v", body, got, want)
	}
	return true
}
