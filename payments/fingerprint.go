package payments

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"strconv"
)

// fingerprintVersion is stored beside every fingerprint. A later encoding
// gets a new version, and keys fingerprinted under an older one are
// compared under theirs, so an upgrade never turns a replay into a
// conflict.
const fingerprintVersion = 1

// fingerprint is the SHA-256 of the payload's canonical encoding. It is
// computed from normalised values, so JSON formatting, field order, "10.5"
// versus "10.50" versus 10.5 and "brl" versus "BRL" cannot change it, while
// any real difference in client, amount, currency or method does.
func fingerprint(version int, p payload) ([]byte, error) {
	if version != 1 {
		return nil, fmt.Errorf("unknown payload fingerprint version %d", version)
	}
	h := sha256.New()
	// Version 1: a tag, then each field length-prefixed, so that no two
	// payloads share an encoding however their strings are chosen.
	for _, field := range []string{
		"cmpay/payment/v1",
		p.clientID,
		strconv.FormatInt(p.amount.Minor, 10),
		p.amount.Currency,
		string(p.method),
	} {
		writeField(h, field)
	}
	return h.Sum(nil), nil
}

func writeField(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.Write([]byte(s))
}

// differingFields names the payload fields of p whose values differ from
// payment's. The client is the same by construction: keys are per client.
func differingFields(payment Payment, p payload) []string {
	var fields []string
	if !payment.Amount.sameValue(p.amount) {
		fields = append(fields, "amount")
	}
	if payment.Amount.Currency != p.amount.Currency {
		fields = append(fields, "currency")
	}
	if payment.Method != p.method {
		fields = append(fields, "method")
	}
	return fields
}
