package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cmpay/cmpay/processor"
)

// A sandbox reference carries the create it names, since the sandbox
// keeps nothing: "sbx_pi.<method>.<a|c>.<amount>.<currency>.<expires
// unix, 0 for none>.<ok|decline code>.<seed>", for example
// "sbx_pi.PIX.c.1050.BRL.1767001234.ok.3fa9c2e1b07d4a55c0e19b2f6d81". A
// refund's is "sbx_re.<amount>.<seed>".

const seedLen = 30

type reference struct {
	method      processor.Method
	capture     bool
	amountMinor int64
	currency    string
	expiresAt   int64
	outcome     string // "" approved, else the decline code
	seed        string
}

func (r reference) String() string {
	capture, outcome := "a", r.outcome
	if r.capture {
		capture = "c"
	}
	if outcome == "" {
		outcome = "ok"
	}
	return strings.Join([]string{"sbx_pi", string(r.method), capture, strconv.FormatInt(r.amountMinor, 10),
		r.currency, strconv.FormatInt(r.expiresAt, 10), outcome, r.seed}, ".")
}

var errBadReference = errors.New("not a sandbox reference")

func parseReference(s string) (reference, error) {
	f := strings.Split(s, ".")
	if len(f) != 8 || f[0] != "sbx_pi" {
		return reference{}, errBadReference
	}
	r := reference{method: processor.Method(f[1]), capture: f[2] == "c", currency: f[4], outcome: f[6], seed: f[7]}
	var err1, err2 error
	r.amountMinor, err1 = strconv.ParseInt(f[3], 10, 64)
	r.expiresAt, err2 = strconv.ParseInt(f[5], 10, 64)
	switch {
	case err1 != nil || err2 != nil || r.amountMinor <= 0 || r.expiresAt < 0:
		return reference{}, fmt.Errorf("%w: bad number", errBadReference)
	case !r.method.Valid() || (f[2] != "a" && f[2] != "c") || len(r.currency) != 3 || !isHex(r.seed):
		return reference{}, fmt.Errorf("%w: bad field", errBadReference)
	case r.outcome == "ok":
		r.outcome = ""
	case r.outcome != CodeCardDeclined && r.outcome != CodeInsufficientFunds && r.outcome != CodeInvalidPaymentMethod:
		return reference{}, fmt.Errorf("%w: bad outcome", errBadReference)
	}
	return r, nil
}

type refundReference struct {
	amountMinor int64
	seed        string
}

func (r refundReference) String() string {
	return "sbx_re." + strconv.FormatInt(r.amountMinor, 10) + "." + r.seed
}

func parseRefundReference(s string) (refundReference, error) {
	f := strings.Split(s, ".")
	if len(f) != 3 || f[0] != "sbx_re" || !isHex(f[2]) {
		return refundReference{}, errBadReference
	}
	amount, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || amount <= 0 {
		return refundReference{}, errBadReference
	}
	return refundReference{amountMinor: amount, seed: f[2]}, nil
}

func isHex(s string) bool {
	if len(s) != seedLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}
