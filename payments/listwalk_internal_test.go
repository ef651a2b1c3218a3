package payments

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// A kept list is given back only for its operation's key and window; one
// read to its end is given back when it found nothing, and never when it
// found the payment, whose state at the processor may have moved on.
func TestListWalksKeepOnlyWhatStaysTrue(t *testing.T) {
	from, to := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)
	op := operationRow{id: "op_1", key: "cmpay_op_1"}
	var w listWalks
	partial := processor.ListWalk{After: "pi_100", Found: []processor.Payment{{Reference: "pi_7"}}}
	w.keep(op, from, to, &partial)
	if got := w.take(op, from, to.Add(time.Second)); got.After != "" {
		t.Errorf("another window got %+v; want a new walk", got)
	}
	w.keep(op, from, to, &partial)
	if got := w.take(op, from, to); got.After != "pi_100" || len(got.Found) != 1 {
		t.Errorf("took %+v; want the partial walk", got)
	}
	if got := w.take(op, from, to); got.After != "" {
		t.Errorf("took %+v twice; want a new walk the second time", got)
	}
	none := processor.ListWalk{After: "pi_200", Done: true}
	w.keep(op, from, to, &none)
	rekeyed := op
	rekeyed.key = "cmpay_op_1_a2"
	if got := w.take(rekeyed, from, to); got.Done {
		t.Errorf("a new key got %+v; want a new walk", got)
	}
	w.keep(op, from, to, &none)
	if got := w.take(op, from, to); !got.Done || len(got.Found) != 0 {
		t.Errorf("took %+v; want the finished walk that found nothing", got)
	}
	found := processor.ListWalk{After: "pi_200", Found: []processor.Payment{{Reference: "pi_7"}}, Done: true}
	w.keep(op, from, to, &found)
	if got := w.take(op, from, to); got.Done || len(got.Found) != 0 {
		t.Errorf("took %+v; want a new walk, not one that found the payment", got)
	}
}
