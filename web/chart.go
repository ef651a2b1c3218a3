package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/cmpay/cmpay/payments"
)

// chart is the hourly attempts chart, laid out on the server as SVG
// rectangles: no chart library, no script.
type chart struct {
	Width, Height int
	Max           int
	Bars          []chartBar
	Ticks         []chartTick
}

type chartBar struct {
	X, W                   int
	Created, Replayed, Rej barSegment
	Title                  string
}

type barSegment struct{ Y, H int }

type chartTick struct {
	X     int
	Label string
}

// Chart geometry, in SVG user units.
const (
	chartWidth  = 720
	chartHeight = 140
	chartTop    = 8  // room above the tallest bar
	chartBottom = 18 // room for the hour labels
	barGap      = 4
)

// newChart stacks each hour's created, replayed and rejected attempts in
// one bar, scaled to the busiest hour.
func newChart(st payments.Stats) chart {
	c := chart{Width: chartWidth, Height: chartHeight}
	for _, h := range st.Hours {
		c.Max = max(c.Max, h.Created+h.Replayed+h.Rejected)
	}
	plot := chartHeight - chartTop - chartBottom
	scale := func(n int) int {
		if c.Max == 0 {
			return 0
		}
		return (n*plot + c.Max - 1) / c.Max // round up: one attempt stays visible
	}
	slot := chartWidth / max(len(st.Hours), 1)
	base := chartHeight - chartBottom
	for i, h := range st.Hours {
		b := chartBar{X: i*slot + barGap/2, W: slot - barGap}
		y := base
		for _, seg := range []struct {
			n   int
			out *barSegment
		}{{h.Created, &b.Created}, {h.Replayed, &b.Replayed}, {h.Rejected, &b.Rej}} {
			hgt := scale(seg.n)
			y -= hgt
			*seg.out = barSegment{Y: y, H: hgt}
		}
		b.Title = fmt.Sprintf("%s–%s UTC: %d created, %d replayed, %d rejected",
			h.Start.UTC().Format("15:04"), h.Start.UTC().Add(59*time.Minute).Format("15:04"), h.Created, h.Replayed, h.Rejected)
		c.Bars = append(c.Bars, b)
		if i%6 == 0 || i == len(st.Hours)-1 {
			c.Ticks = append(c.Ticks, chartTick{X: i*slot + slot/2, Label: h.Start.UTC().Format("15:04")})
		}
	}
	return c
}

// waitingOperations is how many captures, cancels and refunds wait for the
// processor, whatever their age.
func waitingOperations(st payments.Stats) int {
	n := 0
	for _, c := range st.Waiting {
		n += c
	}
	return n
}

// waitingWork says, for the list's row of p, what p waits for from the
// processor beside its status: "capture waiting for the processor", "refund
// waiting for the processor (1.00 BRL held)".
func waitingWork(p payments.Payment) []string {
	var out []string
	if p.PendingOperation != "" {
		out = append(out, operationName(p.PendingOperation)+" waiting for the processor")
	}
	if p.Reserved.Minor > 0 {
		out = append(out, "refund waiting for the processor ("+money(p.Reserved)+" held)")
	}
	return out
}

// waitingOperationsText breaks waitingOperations down ("1 capture, 2
// refunds"), or says that CMPay resolves them when there are any.
func waitingOperationsText(st payments.Stats) string {
	var parts []string
	for _, op := range []struct {
		op        payments.Operation
		one, many string
	}{{payments.OpCapture, "capture", "captures"}, {payments.OpCancel, "cancel", "cancels"}, {payments.OpRefund, "refund", "refunds"}} {
		if n := st.Waiting[op.op]; n > 0 {
			parts = append(parts, plural(n, op.one, op.many))
		}
	}
	if len(parts) == 0 {
		return "any age"
	}
	return strings.Join(parts, ", ") + "; any age, CMPay resolves them"
}
