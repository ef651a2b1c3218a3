package web

import (
	"strconv"
	"time"

	"github.com/cmpay/cmpay/payments"
)

// money shows an amount with its currency's digits: "10.50 BRL".
func money(m payments.Money) string { return m.String() + " " + m.Currency }

// stamp shows a time in UTC to the second, the way support staff quote it.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") + " UTC" }

// precise shows a time to the microsecond, for telling attempts apart.
func precise(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

// maxKeyShown is how much of a key the list shows; the rest is in the
// cell's title and on the payment's page.
const maxKeyShown = 28

func shortKey(k string) string {
	if len(k) <= maxKeyShown {
		return k
	}
	return k[:maxKeyShown-4] + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return itoa(n) + " times"
}

// outcomeClass is the badge class of an outcome.
func outcomeClass(o payments.Outcome) string {
	switch o {
	case payments.OutcomeReplayed:
		return "replayed"
	case payments.OutcomeRejected:
		return "rejected"
	}
	return "created"
}

// plural is "1 other payment" or "3 other payments".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}
