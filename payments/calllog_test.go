package payments_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor/stripe"
)

// logBuffer is a JSON logger's output, safe to read while it is written.
type logBuffer struct{ logtest.Buffer }

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// lines are the lines logged so far whose message starts with prefix.
func (b *logBuffer) lines(t *testing.T, prefix string) []map[string]any {
	t.Helper()
	text := b.String()
	var out []map[string]any
	for line := range strings.Lines(text) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// linesFor are b's lines starting with prefix about payment id.
func (b *logBuffer) linesFor(t *testing.T, prefix, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range b.lines(t, prefix) {
		if l["payment_id"] == id {
			out = append(out, l)
		}
	}
	return out
}

const (
	failedLine  = "processor call failed; recovery will resolve it"
	settledLine = "processor operation with an unknown outcome settled"
)

// Each fault of the double on a create, through the real stripe-go
// client, logs one WARN line naming the operation, the payment and the
// call's class, and recovery's settling it one INFO line.
func TestProcessorFaultIsLogged(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var logs logBuffer
		b, d := stripeWith(t, db, stripeOpts{Logger: logs.logger()})
		for fault, class := range map[stripedouble.FaultKind]string{
			stripedouble.ServerErrorBefore: "5xx", stripedouble.RateLimit: "429", stripedouble.Conflict: "409",
			stripedouble.DropRequest: "connection", stripedouble.Delay: "timeout",
		} {
			t.Run(fault.String(), func(t *testing.T) {
				b.clock.Advance(time.Minute) // a new interval for the settled lines
				// net/http sends a request with an Idempotency-Key again by
				// itself when a reused connection closes before answering:
				// a new one shows the drop.
				b.conn.(*stripe.Connector).CloseIdleConnections()
				d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: fault})
				p := b.mustCreate(t, withToken(card("logged-"+fault.String()), "pm_card_visa")).Payment
				got := logs.linesFor(t, failedLine, p.ID)
				if len(got) != 1 {
					t.Fatalf("%d lines %q for %s; want 1", len(got), failedLine, p.ID)
				}
				l := got[0]
				if l["level"] != "WARN" || l["class"] != class || l["operation"] != string(payments.OpCreate) ||
					l["call"] != "WRITE" || l["operation_id"] == "" {
					t.Errorf("line %v; want WARN, class %s, the create's WRITE", l, class)
				}
				recoverUntilSettled(t, b, p.ID)
				if got := logs.linesFor(t, settledLine, p.ID); len(got) != 1 || got[0]["level"] != "INFO" ||
					got[0]["state"] != "SUCCEEDED" || got[0]["status"] != string(payments.StatusCaptured) {
					t.Errorf("settled lines %v; want one INFO, SUCCEEDED, CAPTURED", got)
				}
			})
		}
	})
}

// A burst of creates that all get a 5xx logs the first in full and, once
// its minute has ended, one line counting the others: two lines for the
// burst, not one per call.
func TestProcessorFaultBurstIsBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var logs logBuffer
		b, d := stripeWith(t, db, stripeOpts{Logger: logs.logger()})
		d.FailRandomly(1, 1, 0, []stripedouble.FaultKind{stripedouble.ServerErrorBefore}, stripedouble.CreatePaymentIntent)
		const burst = 60
		for i := range burst {
			b.mustCreate(t, withToken(card(fmt.Sprint("burst-", i)), "pm_card_visa"))
		}
		if got := logs.lines(t, failedLine); len(got) != 1 {
			t.Fatalf("%d lines during the burst; want 1", len(got))
		}
		d.FailRandomly(1, 0, 0, nil)
		b.clock.Advance(time.Minute)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil { // flushes the count first
			t.Fatal(err)
		}
		got := logs.lines(t, failedLine)
		want := fmt.Sprintf("%s: %d more in the 1m0s from", failedLine, burst-1)
		if len(got) != 2 || !strings.HasPrefix(got[1]["msg"].(string), want) || got[1]["more"] != float64(burst-1) ||
			got[1]["class"] != "5xx" {
			t.Fatalf("lines %v; want the first and then %q", got, want)
		}
	})
}

// The Recoverer, its database failing every round (its table renamed
// away), logs the failure once, not every round, and one INFO line once
// a round works again.
func TestRecovererLogsAnOutageOnceAndItsEnd(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	var logs logBuffer
	var ticks atomic.Int64 // the service's clock is read at least once a round
	svc := mustService(t, db.Gorm, payments.Config{Now: func() time.Time {
		ticks.Add(1)
		return time.Now()
	}})
	if err := db.Gorm.Exec("ALTER TABLE processor_operations RENAME TO processor_operations_away").Error; err != nil {
		t.Fatal(err)
	}
	r := svc.Recoverer(time.Millisecond, logs.logger())
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	rounds := func() int { return len(logs.lines(t, "processor recovery")) }
	waitFor(t, "the first failure's line", func() bool { return rounds() > 0 })
	from := ticks.Load()
	waitFor(t, "more failing rounds", func() bool { return ticks.Load() > from+20 }) // a few reads a round
	if got := logs.lines(t, "processor recovery"); len(got) != 1 || got[0]["level"] != "WARN" {
		t.Fatalf("lines %v during the outage; want the first failure alone", got)
	}
	if err := db.Gorm.Exec("ALTER TABLE processor_operations_away RENAME TO processor_operations").Error; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the line saying it works again", func() bool { return rounds() == 2 })
	back := logs.lines(t, "processor recovery")[1]
	if msg := back["msg"].(string); back["level"] != "INFO" || !strings.HasPrefix(msg, "processor recovery: works again after ") {
		t.Errorf("line %v; want INFO, works again", back)
	}
}
