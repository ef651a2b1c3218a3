package main

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/load"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestCompareReport: the summary puts each build's median side by side and
// divides after by before, for rates and for the CPU cost alike.
func TestCompareReport(t *testing.T) {
	run := func(round int, build string, mode load.Mode, requests int, server, postgres, bench time.Duration) compareRun {
		r := modeResult{Result: load.Result{Mode: mode, Requests: requests, Elapsed: time.Second}}
		r.cpu = cpuUse{elapsed: time.Second, server: server, postgres: postgres, bench: bench}
		return compareRun{round: round, build: build, mode: mode, r: r}
	}
	ms := time.Millisecond
	var runs []compareRun
	for round, before := range []int{4000, 5000, 6000} {
		runs = append(runs,
			run(round+1, "before", load.New, before, 400*ms, 200*ms, 100*ms),     // cost 6
			run(round+1, "after", load.New, before*9/10, 450*ms, 210*ms, 100*ms), // cost 6.6
			run(round+1, "before", load.Replay, before, 300*ms, 100*ms, 100*ms),
			run(round+1, "after", load.Replay, before/2, 300*ms, 100*ms, 50*ms))
	}
	report := compareReport(runs, "`cmpay-82f9e9d`", "this checkout")
	for _, want := range []string{
		"| new | 5000 | 4500 | 0.90 | 0.90 | 6.00 | 6.60 | 1.10 | 1.10 |",
		"| replay | 5000 | 2500 | 0.50 | 0.50 | 4.00 | 8.00 | 2.00 | 2.00 |",
		"| 2 | after | new | 4500 |",
		"Before: `cmpay-82f9e9d`",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// TestCompareReportPairsRounds: the median of each round's after ÷ before
// is its own column, apart from the ratio of the medians. Here the machine
// sped up in round 3, for the after build's run only.
func TestCompareReportPairsRounds(t *testing.T) {
	// server is the server's CPU in the round; the load generator's is a
	// second, so that it is the cost.
	run := func(round int, build string, requests int, server time.Duration) compareRun {
		r := modeResult{Result: load.Result{Mode: load.New, Requests: requests, Elapsed: time.Second}}
		r.cpu = cpuUse{elapsed: time.Second, server: server, bench: time.Second}
		return compareRun{round: round, build: build, mode: load.New, r: r}
	}
	s := time.Second
	runs := []compareRun{
		run(1, "before", 4000, 4*s), run(1, "after", 3600, 7*s), // rate 0.9, cost 1.75
		run(2, "after", 4000, 5*s), run(2, "before", 5000, 5*s), // rate 0.8, cost 1.0
		run(3, "before", 6000, 6*s), run(3, "after", 7800, 6600*time.Millisecond), // rate 1.3, cost 1.1
	}
	report := compareReport(runs, "`cmpay-82f9e9d`", "`cmpay-7e8705c`")
	// Medians: rates 5000 and 4000 (0.80), per round 0.90; costs 5 and 6.6
	// (1.32), per round 1.10.
	if want := "| new | 5000 | 4000 | 0.80 | 0.90 | 5.00 | 6.60 | 1.32 | 1.10 |"; !strings.Contains(report, want) {
		t.Errorf("the report lacks %q:\n%s", want, report)
	}
	if want := "Before: `cmpay-82f9e9d`; after: `cmpay-7e8705c`."; !strings.Contains(report, want) {
		t.Errorf("the report lacks %q:\n%s", want, report)
	}
}

func TestRoundOrder(t *testing.T) {
	for round, want := range map[int]string{1: "before after", 2: "after before", 3: "before after"} {
		if got := strings.Join(roundOrder(round), " "); got != want {
			t.Errorf("roundOrder(%d) = %q, want %q", round, got, want)
		}
	}
}

// TestProcessorRatios: each build's stripe ÷ card server CPU, as the ratio
// of the medians and as the median of each round's.
func TestProcessorRatios(t *testing.T) {
	run := func(round int, build string, mode load.Mode, server time.Duration) compareRun {
		r := modeResult{Result: load.Result{Mode: load.New, Requests: 1000, Elapsed: time.Second}}
		r.cpu = cpuUse{elapsed: time.Second, server: server}
		return compareRun{round: round, build: build, mode: mode, r: r}
	}
	ms := time.Millisecond
	runs := []compareRun{
		run(1, "before", cardSandbox, 100*ms), run(1, "before", cardStripe, 300*ms),
		run(1, "after", cardSandbox, 100*ms), run(1, "after", cardStripe, 200*ms),
		run(2, "after", cardSandbox, 200*ms), run(2, "after", cardStripe, 300*ms),
		run(2, "before", cardSandbox, 100*ms), run(2, "before", cardStripe, 400*ms),
	}
	report := processorRatios(runs)
	for _, want := range []string{
		"| before | 100 | 350 | 3.50 | 3.50 |",
		"| after | 150 | 250 | 1.67 | 1.75 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if processorRatios(runs[:0]) != "" {
		t.Error("a report without card modes has a processor table")
	}
}
