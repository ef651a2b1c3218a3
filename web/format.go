package web

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

// money shows an amount with its currency's digits and its thousands
// grouped, for reading only: "1,234.56 BRL". Inputs, the CSV and the API
// carry m.String() ("1234.56").
func money(m payments.Money) string {
	text := m.String()
	whole, frac, point := strings.Cut(text, ".")
	if n, err := strconv.ParseInt(whole, 10, 64); err == nil && whole == strconv.FormatInt(n, 10) {
		whole = groupDigits(whole)
	}
	if point {
		whole += "." + frac
	}
	return whole + " " + m.Currency
}

// groupDigits puts a comma between each group of three digits of a
// whole number's text: "-1234567" is "-1,234,567".
func groupDigits(s string) string {
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// stamp shows a time in UTC to the second, the way support staff quote it.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") + " UTC" }

// precise shows a time in UTC to the second, without the zone (the column
// says UTC). Microseconds are noise to a reader; the <time datetime>
// attribute around it keeps them, and rows stay in their order.
func precise(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func itoa(n int) string { return strconv.Itoa(n) }

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return grouped(n) + " times"
}

// outcomeClass is the badge class of an outcome.
func outcomeClass(o payments.Outcome) string {
	switch o {
	case payments.OutcomeReplayed:
		return "replayed"
	case payments.OutcomeRejected, payments.OutcomeRefused:
		return "rejected"
	}
	return "created"
}

// statusClass is the badge class of a status.
func statusClass(st payments.Status) string {
	switch st {
	case payments.StatusAuthorized:
		return "status authorized"
	case payments.StatusCanceled:
		return "status canceled"
	case payments.StatusRefunded, payments.StatusPartiallyRefunded:
		return "status refunded"
	case payments.StatusProcessing, payments.StatusPending:
		return "status pending"
	case payments.StatusDeclined, payments.StatusExpired:
		return "status declined"
	}
	return "status captured"
}

// operationName is an operation as support staff say it.
func operationName(op payments.Operation) string {
	switch op {
	case payments.OpCapture:
		return "capture"
	case payments.OpCancel:
		return "cancel"
	case payments.OpRefund:
		return "refund"
	}
	return "create"
}

// refusalText says in words why a request was refused.
func refusalText(code string) string {
	switch code {
	case apierror.StateConflict:
		return "the payment's status did not allow it"
	case apierror.AmountExceeds:
		return "the amount was more than was available"
	}
	return code
}

// plural is "1 other payment" or "3 other payments" (thousands grouped:
// "1,200 requests").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return grouped(n) + " " + many
}

// auditOutcomeClass is the badge class of an audit entry's outcome.
func auditOutcomeClass(e staff.Entry) string {
	switch e.Outcome {
	case staff.OutcomeOK, "applied":
		return "created"
	case staff.OutcomeStarted, "already done (replayed)":
		return "replayed"
	}
	return "rejected"
}

// visible shows text that others typed (a username tried at sign-in, a
// detail) as the characters it holds: control and format characters (bidi
// overrides that reorder what follows, zero-width spaces, line breaks) and
// bytes that are not UTF-8 are written as escapes such as \u202E, so that
// an audit entry reads as what was sent, not as what it pretends to be.
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02X`, s[i])
		case hidden(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hidden reports whether r changes how text around it shows, or shows as
// nothing: Unicode's control (Cc), format (Cf) and line and paragraph
// separator characters.
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// maxShownInput is how many characters of someone's input a page repeats.
const maxShownInput = 100

// clipped is s cut to maxShownInput characters, with an ellipsis when cut:
// an error page never repeats an over-long input whole.
func clipped(s string) string {
	if utf8.RuneCountInString(s) <= maxShownInput {
		return s
	}
	return string([]rune(s)[:maxShownInput]) + "…"
}
