package stripe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

// wantKind is how each fault must be classified: all unknown.
var wantKind = map[stripedouble.FaultKind]processor.Kind{
	stripedouble.DropRequest:       processor.KindNetwork,
	stripedouble.DropResponse:      processor.KindNetwork,
	stripedouble.Delay:             processor.KindTimeout,
	stripedouble.ServerErrorAfter:  processor.KindServerError,
	stripedouble.ServerErrorBefore: processor.KindServerError,
	stripedouble.ServerErrorStored: processor.KindServerError,
	stripedouble.RateLimit:         processor.KindRateLimited,
	stripedouble.Conflict:          processor.KindInProgress,
	// A party outside Stripe failed while the request executed: it may
	// have moved the money, and Stripe stores the 424 as it would a 500.
	stripedouble.DependencyFailedAfter: processor.KindServerError,
}

// writeCase is one money-moving operation: prepare what it needs, send
// it (with the same key, but after a stored 500 the read shows not done),
// resolve it by reading when asking again cannot (a replayed 500), and
// check the double moved its money once.
type writeCase struct {
	endpoint stripedouble.Endpoint
	prepare  func(t *testing.T, conn *Connector) string // the payment reference, if any
	send     func(ctx context.Context, conn *Connector, ref, key string) (string, error)
	read     func(ctx context.Context, conn *Connector, ref string) (string, error)
	check    func(t *testing.T, d *stripedouble.Double, ref string)
}

func authorized(t *testing.T, conn *Connector) string {
	p, err := conn.CreatePayment(context.Background(), cardReq("cmpay_prep", "pay_prep", "pm_card_visa", false))
	if err != nil {
		t.Fatal(err)
	}
	return p.Reference
}

func captured(t *testing.T, conn *Connector) string {
	p, err := conn.CreatePayment(context.Background(), cardReq("cmpay_prep", "pay_prep", "pm_card_visa", true))
	if err != nil {
		t.Fatal(err)
	}
	return p.Reference
}

var writeCases = map[string]writeCase{
	"create": {
		endpoint: stripedouble.CreatePaymentIntent,
		prepare:  func(*testing.T, *Connector) string { return "" },
		send: func(ctx context.Context, conn *Connector, _, key string) (string, error) {
			p, err := conn.CreatePayment(ctx, cardReq(key, "pay_op", "pm_card_visa", true))
			return string(p.State), err
		},
		read: func(ctx context.Context, conn *Connector, _ string) (string, error) {
			found, err := conn.FindPayments(ctx, "pay_op")
			if err != nil || len(found) != 1 {
				return "", errors.Join(err, errors.New("not found exactly once"))
			}
			return string(found[0].State), nil
		},
		check: func(t *testing.T, d *stripedouble.Double, _ string) {
			ids := d.IntentsFor("pay_op")
			if len(ids) != 1 {
				t.Fatalf("%d intents for one payment", len(ids))
			}
			if l := d.Ledger(ids[0]); l.Authorizations != 1 || l.Captures != 1 || l.Captured != 1050 {
				t.Errorf("ledger %+v", l)
			}
		},
	},
	"capture": {
		endpoint: stripedouble.CapturePaymentIntent,
		prepare:  authorized,
		send: func(ctx context.Context, conn *Connector, ref, key string) (string, error) {
			p, err := conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: key, Reference: ref, AmountMinor: 1000, Currency: "BRL"})
			return string(p.State), err
		},
		read: readPayment,
		check: func(t *testing.T, d *stripedouble.Double, ref string) {
			if l := d.Ledger(ref); l.Captures != 1 || l.Captured != 1000 {
				t.Errorf("ledger %+v", l)
			}
		},
	},
	"cancel": {
		endpoint: stripedouble.CancelPaymentIntent,
		prepare:  authorized,
		send: func(ctx context.Context, conn *Connector, ref, key string) (string, error) {
			p, err := conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: key, Reference: ref})
			return string(p.State), err
		},
		read: readPayment,
		check: func(t *testing.T, d *stripedouble.Double, ref string) {
			if l := d.Ledger(ref); l.Cancels != 1 || l.Captures != 0 {
				t.Errorf("ledger %+v", l)
			}
		},
	},
	"refund": {
		endpoint: stripedouble.CreateRefund,
		prepare:  captured,
		send: func(ctx context.Context, conn *Connector, ref, key string) (string, error) {
			r, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: key, PaymentReference: ref, RefundID: "ref_op", AmountMinor: 700, Currency: "BRL"})
			return string(r.State), err
		},
		read: func(ctx context.Context, conn *Connector, ref string) (string, error) {
			list, err := conn.ListRefunds(ctx, ref)
			if err != nil || len(list) != 1 {
				return "", errors.Join(err, errors.New("not listed exactly once"))
			}
			return string(list[0].State), nil
		},
		check: func(t *testing.T, d *stripedouble.Double, ref string) {
			if l := d.Ledger(ref); l.Refunds != 1 || l.Refunded != 700 || len(d.RefundsFor("ref_op")) != 1 {
				t.Errorf("ledger %+v, refunds %v", l, d.RefundsFor("ref_op"))
			}
		},
	},
}

func readPayment(ctx context.Context, conn *Connector, ref string) (string, error) {
	p, err := conn.GetPayment(ctx, ref)
	return string(p.State), err
}

// Every fault on every money-moving operation: the first answer is
// classified unknown, of the right kind; asking again with the same key
// (and, where Stripe replays a 500, reading) ends in the state the
// double holds; and the double moved the money exactly once.
func TestWriteFaults(t *testing.T) {
	want := map[string]string{"create": "captured", "capture": "captured", "cancel": "canceled", "refund": "succeeded"}
	for name, wc := range writeCases {
		for _, fault := range stripedouble.Faults {
			t.Run(name+"/"+fault.String(), func(t *testing.T) {
				conn, d, _ := setup(t, stripedouble.Options{})
				ref := wc.prepare(t, conn)
				failNext(d, wc.endpoint, fault)
				ctx := context.Background()
				if fault == stripedouble.Delay {
					ctx = short(t)
				}
				_, err := wc.send(ctx, conn, ref, "cmpay_op")
				pe := asError(t, err)
				if !unknown(err) || pe.Kind != wantKind[fault] || pe.Replayed {
					t.Fatalf("first answer: %v (kind %s), want unknown %s", err, pe.Kind, wantKind[fault])
				}
				state, err := askAgain(wc, conn, ref)
				if fault == stripedouble.ServerErrorAfter || fault == stripedouble.ServerErrorStored ||
					fault == stripedouble.DependencyFailedAfter {
					if pe := asError(t, err); pe.Kind != processor.KindServerError || !pe.Replayed || !unknown(err) {
						t.Fatalf("asking again after a stored 500 or 424: %v", err)
					}
					state, err = wc.read(context.Background(), conn, ref)
				}
				if fault == stripedouble.ServerErrorStored {
					// Nothing happened: the read shows it, and the operation
					// goes again under a new key (payments/resend.go).
					if err == nil && state == want[name] {
						t.Fatalf("after a stored 500 the read shows %q: done", state)
					}
					state, err = wc.send(context.Background(), conn, ref, "cmpay_op_a2")
				}
				if err != nil || state != want[name] {
					t.Fatalf("resolved to %q, %v; want %s", state, err, want[name])
				}
				wc.check(t, d, ref)
			})
		}
	}
}

// failNext makes the next call to ep fail. A dropped connection fails
// the next two: net/http resends a request once by itself when a reused
// connection closes before any answer (see TestTransportResends), and the
// fault must reach the connector.
func failNext(d *stripedouble.Double, ep stripedouble.Endpoint, fault stripedouble.FaultKind) {
	n := d.Calls(ep)
	d.FailNth(ep, n+1, stripedouble.Fault{Kind: fault})
	if fault == stripedouble.DropRequest || fault == stripedouble.DropResponse {
		d.FailNth(ep, n+2, stripedouble.Fault{Kind: fault})
	}
}

// askAgain sends the operation again with its key, as recovery does,
// until the outcome is known or Stripe replays a stored 500 (which only a
// read resolves).
func askAgain(wc writeCase, conn *Connector, ref string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		state, err := wc.send(context.Background(), conn, ref, "cmpay_op")
		var pe *processor.Error
		if unknown(err) && errors.As(err, &pe) && !pe.Replayed && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling the double, not waiting for time to pass
			continue
		}
		return state, err
	}
}

// Every fault on every read is unknown, of the right kind, and the read
// works when asked again.
func TestReadFaults(t *testing.T) {
	reads := map[stripedouble.Endpoint]func(ctx context.Context, conn *Connector, pi, re string) error{
		stripedouble.GetPaymentIntent: func(ctx context.Context, conn *Connector, pi, _ string) error {
			return second(conn.GetPayment(ctx, pi))
		},
		stripedouble.SearchPaymentIntents: func(ctx context.Context, conn *Connector, _, _ string) error {
			found, err := conn.FindPayments(ctx, "pay_prep")
			if err == nil && len(found) != 1 {
				return errors.New("not found")
			}
			return err
		},
		stripedouble.ListPaymentIntents: func(ctx context.Context, conn *Connector, _, _ string) error {
			now := time.Now()
			found, err := conn.ListPaymentsCreated(ctx, "pay_prep", now.Add(-time.Hour), now.Add(time.Hour), nil)
			if err == nil && len(found) != 1 {
				return errors.New("not listed")
			}
			return err
		},
		stripedouble.GetRefund: func(ctx context.Context, conn *Connector, _, re string) error {
			return second(conn.GetRefund(ctx, re))
		},
		stripedouble.ListRefunds: func(ctx context.Context, conn *Connector, pi, _ string) error {
			return second(conn.ListRefunds(ctx, pi))
		},
	}
	for ep, read := range reads {
		for _, fault := range stripedouble.Faults {
			t.Run(string(ep)+"/"+fault.String(), func(t *testing.T) {
				conn, d, _ := setup(t, stripedouble.Options{})
				pi := captured(t, conn)
				re, err := conn.RefundPayment(context.Background(), processor.RefundRequest{IdempotencyKey: "cmpay_r", PaymentReference: pi, AmountMinor: 1, Currency: "BRL"})
				if err != nil {
					t.Fatal(err)
				}
				failNext(d, ep, fault)
				ctx := context.Background()
				if fault == stripedouble.Delay {
					ctx = short(t)
				}
				err = read(ctx, conn, pi, re.Reference)
				if pe := asError(t, err); !unknown(err) || pe.Kind != wantKind[fault] {
					t.Fatalf("got %v (kind %s), want unknown %s", err, pe.Kind, wantKind[fault])
				}
				if err := read(context.Background(), conn, pi, re.Reference); err != nil {
					t.Fatalf("again: %v", err)
				}
			})
		}
	}
}

// net/http resends a request by itself, once, when a reused connection
// closes before any answer; the resend carries the same key, within the
// same deadline, so the money still moves once.
func TestTransportResends(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ref := authorized(t, conn) // warms a kept-alive connection
	d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.DropResponse})
	p, err := conn.CapturePayment(context.Background(), processor.CaptureRequest{IdempotencyKey: "cmpay_c", Reference: ref, AmountMinor: 1050, Currency: "BRL"})
	if err != nil || p.State != processor.PaymentCaptured {
		t.Fatalf("%+v %v", p, err)
	}
	if n, l := d.Calls(stripedouble.CapturePaymentIntent), d.Ledger(ref); n != 2 || l.Captures != 1 {
		t.Errorf("%d requests, ledger %+v", n, l)
	}
}

// stripe-go's own retries are off: one fault, one request.
func TestNoHiddenRetries(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
	_, _ = conn.CreatePayment(context.Background(), cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	if n := d.Calls(stripedouble.CreatePaymentIntent); n != 1 {
		t.Errorf("%d requests for one call", n)
	}
}

// A key reused with other parameters is known for this request, but
// refuses nothing: the key's first request stands and moved the money.
func TestIdempotencyMismatch(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	first, err := conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	if err != nil {
		t.Fatal(err)
	}
	other := cardReq("cmpay_1", "pay_1", "pm_card_visa", true)
	other.AmountMinor = 2000
	_, err = conn.CreatePayment(ctx, other)
	pe := asError(t, err)
	if pe.Kind != processor.KindIdempotencyMismatch || !pe.Known() || pe.Refused() || unknown(err) {
		t.Fatalf("%+v", pe)
	}
	if l := d.Ledger(first.Reference); l.Captured != 1050 || len(d.IntentsFor("pay_1")) != 1 {
		t.Errorf("ledger %+v", l)
	}
}

// A create whose answer was lost is found by search, once the search's
// lag has passed; before, the search is empty, which proves nothing.
func TestLostCreateFoundBySearchAfterLag(t *testing.T) {
	conn, d, clock := setup(t, stripedouble.Options{SearchLag: time.Minute})
	d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
	req := cardReq("cmpay_1", "pay_'1'", "pm_card_visa", true)
	if _, err := conn.CreatePayment(context.Background(), req); !unknown(err) {
		t.Fatalf("%v", err)
	}
	if found, err := conn.FindPayments(context.Background(), "pay_'1'"); err != nil || len(found) != 0 {
		t.Fatalf("during the lag: %+v %v", found, err)
	}
	clock.Add(time.Minute)
	found, err := conn.FindPayments(context.Background(), "pay_'1'")
	if err != nil || len(found) != 1 || found[0].State != processor.PaymentCaptured || found[0].PaymentID != "pay_'1'" {
		t.Fatalf("after the lag: %+v %v", found, err)
	}
}

// Many concurrent sends of one operation (a client's retry, a staff
// double click, recovery on two instances) move the money once, under
// random faults.
func TestConcurrentSendsMoveMoneyOnce(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	d.FailRandomly(7, 0.3, 0, []stripedouble.FaultKind{stripedouble.DropRequest, stripedouble.DropResponse,
		stripedouble.ServerErrorBefore, stripedouble.RateLimit, stripedouble.Conflict})
	done := make(chan error)
	for range 8 {
		go func() {
			_, err := askAgain(writeCases["create"], conn, "")
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil && !unknown(err) {
			t.Errorf("a known error from a fault: %v", err)
		}
	}
	d.FailRandomly(0, 0, 0, nil)
	if state, err := askAgain(writeCases["create"], conn, ""); err != nil || state != "captured" {
		t.Fatalf("%s %v", state, err)
	}
	writeCases["create"].check(t, d, "")
}
