package payments

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
)

// Field names a parameter a key is bound to. They are the names
// IDEMPOTENCY_KEY_REUSED's differingFields uses.
type Field string

const (
	FieldOperation Field = "operation"
	FieldPaymentID Field = "paymentId"
	FieldAmount    Field = "amount"
	FieldCurrency  Field = "currency"
	FieldMethod    Field = "method"
	FieldCapture   Field = "capture"
	FieldReason    Field = "reason"
	// FieldPaymentMethodToken is a create's paymentMethodToken, absent when
	// none was sent (so keys stored before it existed keep their
	// fingerprints).
	FieldPaymentMethodToken Field = "paymentMethodToken"
)

// fieldOrder is the order differingFields lists fields in.
var fieldOrder = []Field{FieldOperation, FieldPaymentID, FieldAmount, FieldCurrency, FieldMethod, FieldCapture, FieldReason,
	FieldPaymentMethodToken}

// Params are a request's operation and parameters in canonical form: every
// value is the text of a normalised value (an amount as its reduced decimal, "10.5" for
// "10.50"; a currency upper-cased; a boolean as "true"), and a parameter the
// request left out is absent. Two requests ask for the same thing exactly
// when their Params are equal, so comparing them is generic:
// no operation has comparison code of its own. The client is not a
// parameter: it is the namespace the key lives in.
type Params map[Field]string

// encode is the canonical JSON text of p: keys sorted, values strings,
// byte for byte what encoding/json makes of the map (it sorts map keys).
// It is what the key row stores and what the fingerprint hashes. Every
// request encodes its params, so the common case (field names and values
// of plain ASCII, none that JSON escapes) is written here directly;
// anything else goes through encoding/json itself (FuzzEncodeParams).
func (p Params) encode() string {
	if p == nil {
		return p.encodeJSON() // "null"
	}
	var fields [9]Field // more than a request has: fieldOrder lists 8
	keys := fields[:0]
	size := 2
	for f, v := range p {
		if len(keys) == len(fields) || !plainJSON(string(f)) || !plainJSON(v) {
			return p.encodeJSON()
		}
		keys = append(keys, f)
		size += len(f) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, f := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f...)
		b = append(b, `":"`...)
		b = append(b, p[f]...)
		b = append(b, '"')
	}
	b = append(b, '}')
	return string(b)
}

// encodeJSON is encode by encoding/json.
func (p Params) encodeJSON() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("encode params: %v", err)) // a map of strings always encodes
	}
	return string(b)
}

// plainJSON says s is printable ASCII that encoding/json writes as it is:
// no quote, backslash, or the HTML characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// decodeParams reads what encode wrote; nil text (a version 1 key) is nil.
func decodeParams(text *string) (Params, error) {
	if text == nil {
		return nil, nil
	}
	var p Params
	if err := json.Unmarshal([]byte(*text), &p); err != nil {
		return nil, fmt.Errorf("decode stored params: %w", err)
	}
	return p, nil
}

// differingFields names what differs between the request that first used a
// key and a later one, in fieldOrder. With one operation: every parameter
// whose canonical value differs, or that one of the two left out. With
// two: the operation, and every parameter both carry with another value
// (a capture of payment A and a cancel of B: operation and paymentId); one
// that only one of them has is no difference, as a cancel has no amount.
func differingFields(held, p Params) []string {
	sameOperation := held[FieldOperation] == p[FieldOperation]
	out := []string{}
	for _, f := range fieldOrder {
		hv, hok := held[f]
		v, ok := p[f]
		if hok && ok && hv != v || sameOperation && hok != ok {
			out = append(out, string(f))
		}
	}
	return out
}

// fingerprintVersion is stored beside every fingerprint. A new encoding
// gets a new version, and a key fingerprinted under an older one is
// compared under its own (decide.go), so an upgrade never turns a replay
// into a conflict.
//
//	1: creates only, before the lifecycle: client, minor units, currency, method.
//	2: any operation: the operation and its canonical Params.
const fingerprintVersion = 2

// fingerprintOf is the SHA-256 of a request's canonical encoding under the
// current version, given its params already encoded: a tag and the
// canonical params (the operation among them), each length-prefixed so that
// no two requests share an encoding however their strings are chosen. It
// depends on normalised values only, so JSON formatting, field order, "10.5"
// versus "10.50" versus 10.5 and "brl" versus "BRL" cannot change it, while
// any real difference does.
func fingerprintOf(encoded string) []byte {
	h := sha256.New()
	writeField(h, "cmpay/idempotency/v2")
	writeField(h, encoded)
	return h.Sum(make([]byte, 0, sha256.Size))
}

// fingerprintV1 is the version 1 fingerprint of a create, which keys stored
// before the lifecycle carry. Version 1 knew no other operation and no
// authorize-only payments: ok is false for anything it cannot express, and
// such a request can never replay a version 1 key.
func fingerprintV1(clientID string, op Operation, amount Money, method Method, capture bool) (fp []byte, ok bool) {
	if op != OpCreate || !capture {
		return nil, false
	}
	h := sha256.New()
	for _, field := range []string{
		"cmpay/payment/v1",
		clientID,
		strconv.FormatInt(amount.Minor, 10),
		amount.Currency,
		string(method),
	} {
		writeField(h, field)
	}
	return h.Sum(nil), true
}

func writeField(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	io.WriteString(h, s)
}
