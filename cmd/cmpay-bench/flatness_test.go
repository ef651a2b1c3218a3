package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/load"
)

// TestFlatSchedule: every mode runs at both sizes in every round, back to
// back, each size first in half the rounds; an odd number of rounds is
// raised by one.
func TestFlatSchedule(t *testing.T) {
	steps := flatSchedule(3, []int{10000, 1000000})
	if want := 4 * len(flatModes) * 2; len(steps) != want {
		t.Fatalf("%d runs, want %d (4 rounds)", len(steps), want)
	}
	first := map[load.Mode]map[int]int{} // how often each size ran first
	for i := 0; i < len(steps); i += 2 {
		a, b := steps[i], steps[i+1]
		if a.round != b.round || a.mode != b.mode || a.size == b.size {
			t.Fatalf("runs %d and %d are not one mode's pair: %+v, %+v", i, i+1, a, b)
		}
		if first[a.mode] == nil {
			first[a.mode] = map[int]int{}
		}
		first[a.mode][a.size]++
		if want := map[bool]int{true: 10000, false: 1000000}[a.round%2 == 1]; a.size != want {
			t.Errorf("round %d, %s: %d first, want %d", a.round, a.mode, a.size, want)
		}
	}
	for _, mode := range flatModes {
		if first[mode][10000] != 2 || first[mode][1000000] != 2 {
			t.Errorf("%s: first at each size %v, want 2 and 2", mode, first[mode])
		}
	}
	if got := fmt.Sprint(inTurn(2, []int{1, 2, 3})); got != "[3 2 1]" {
		t.Errorf("inTurn(2) = %s, want [3 2 1]", got)
	}
}

// flatResult is a run of requests in a second, with server and PostgreSQL
// CPU per request in µs.
func flatResult(round, size int, mode load.Mode, requests int, server, postgres int) flatRun {
	r := modeResult{Result: load.Result{Mode: mode, Requests: requests, Elapsed: time.Second,
		P50: time.Duration(round) * time.Millisecond, P99: time.Duration(10*round) * time.Millisecond}}
	r.cpu = cpuUse{elapsed: time.Second, server: time.Duration(server*requests) * time.Microsecond,
		postgres: time.Duration(postgres*requests) * time.Microsecond, bench: 100 * time.Millisecond}
	r.peakRSS = int64(50000 + round)
	return flatRun{round: round, size: size, mode: mode, stored: size + round, r: r}
}

// TestSummarizePairsRounds: each round's ratio is its own large run over
// its own small run, in round order, whatever the order of the runs; the
// median ratio is not the ratio of the medians. Here the machine slowed
// down in round 2 for both sizes.
func TestSummarizePairsRounds(t *testing.T) {
	runs := []flatRun{
		flatResult(1, 10, load.New, 4000, 200, 100), flatResult(1, 1000, load.New, 4400, 200, 150),
		flatResult(2, 1000, load.New, 2000, 300, 200), flatResult(2, 10, load.New, 2500, 250, 100),
		flatResult(3, 10, load.New, 5000, 210, 120), flatResult(3, 1000, load.New, 5100, 190, 110),
		flatResult(4, 1000, load.New, 3000, 220, 130), flatResult(4, 10, load.New, 3000, 230, 140),
		flatResult(1, 10, load.Replay, 9999, 1, 1), // another mode
	}
	m := summarize(runs, load.New, 10, 1000)
	if got := fmt.Sprintf("%.2f", m.ratios); got != "[1.10 0.80 1.02 1.00]" {
		t.Errorf("ratios %s, want [1.10 0.80 1.02 1.00]", got)
	}
	// Medians: ratios (1.00 + 1.02) / 2; rates 3500 and 3700, whose ratio
	// (1.06) is not the median ratio.
	if fmt.Sprintf("%.2f %.2f %.2f %.0f %.0f", m.ratio, m.low, m.high, m.small, m.large) != "1.01 0.80 1.10 3500 3700" {
		t.Errorf("median %.2f, spread %.2f–%.2f, rates %.0f and %.0f; want 1.01, 0.80–1.10, 3500 and 3700",
			m.ratio, m.low, m.high, m.small, m.large)
	}
	if m.serverS != 220 || m.serverL != 210 || m.postgresS != 110 || m.postgresL != 140 {
		t.Errorf("CPU medians server %v/%v, PostgreSQL %v/%v; want 220/210, 110/140", m.serverS, m.serverL, m.postgresS, m.postgresL)
	}
	// Server and PostgreSQL per request, large over small: 350/300,
	// 500/350, 300/330, 350/370.
	if got := fmt.Sprintf("%.3f %.3f", m.cpuRatios, m.cpuRatio); got != "[1.167 1.429 0.909 0.946] 1.056" {
		t.Errorf("CPU ratios and median %s, want [1.167 1.429 0.909 0.946] 1.056", got)
	}
	// A round missing one of its sizes gives no ratio.
	if m := summarize(runs[:3], load.New, 10, 1000); len(m.ratios) != 1 {
		t.Errorf("ratios %v from one whole round, want one", m.ratios)
	}
}

// TestPooled: a size's row is all its rounds' requests over all their
// time, the median p50, the highest p99 and RSS, and every error.
func TestPooled(t *testing.T) {
	runs := []flatRun{
		flatResult(1, 10, load.New, 4000, 200, 100), flatResult(2, 10, load.New, 2000, 300, 100),
		flatResult(3, 10, load.New, 3000, 250, 100), flatResult(1, 1000, load.New, 9000, 1, 1),
	}
	runs[1].r.Errors = map[string]int{"500": 2}
	p := pooled(runs, 10, load.New)
	if p.RPS() != 3000 || p.P50 != 2*time.Millisecond || p.P99 != 30*time.Millisecond || p.peakRSS != 50003 || p.ErrorCount() != 2 {
		t.Errorf("pooled: %.0f requests/s, p50 %s, p99 %s, RSS %d, %d errors; want 3000, 2ms, 30ms, 50003, 2",
			p.RPS(), p.P50, p.P99, p.peakRSS, p.ErrorCount())
	}
	// (4000×200 + 2000×300 + 3000×250) µs over 9000 requests.
	if got := perRequest(p.cpu.server, p.Requests); got != 2150.0/9 {
		t.Errorf("server CPU %v µs/request, want %v", got, 2150.0/9)
	}
}

// TestFlatReport: one row per create mode with each round's ratio, their
// median and spread, and a verdict on the median: within 20% of 1 or not.
func TestFlatReport(t *testing.T) {
	var runs []flatRun
	for round := 1; round <= 2; round++ {
		for _, mode := range flatModes {
			large := 4000 // flat
			if mode == load.Conflict {
				large = 3000 + 200*round // 0.80, 0.85
			}
			if mode == load.Mix {
				large = 2800 // 0.70
			}
			runs = append(runs, flatResult(round, 10000, mode, 4000, 200, 100), flatResult(round, 1000000, mode, large, 210, 120))
		}
	}
	report := flatReport(runs, []int{10000, 1000000}, "1.00 2.00 3.00", "4.00 5.00 6.00")
	for _, want := range []string{
		"| new | 4000 | 4000 | 1.00, 1.00 | 1.00 | 1.00–1.00 | 200 | 210 | 100 | 120 | 1.10 (1.10–1.10) | yes (2 of 2 rounds within) |",
		"| conflict | 4000 | 3300 | 0.80, 0.85 | 0.82 | 0.80–0.85 | 200 | 210 | 100 | 120 | 1.10 (1.10–1.10) | yes (2 of 2 rounds within) |",
		"| mix | 4000 | 2800 | 0.70, 0.70 | 0.70 | 0.70–0.70 | 200 | 210 | 100 | 120 | 1.10 (1.10–1.10) | **no** (0 of 2 rounds within) |",
		"(1,000,001 to 1,000,002 payments at a run's start)",
		"before the rounds 1.00 2.00 3.00, after 4.00 5.00 6.00",
		"2 rounds at each size",
		"(its own processes' time was not read)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if flatReport(runs, []int{10000}, "", "") != "" {
		t.Error("one size gave a flatness section")
	}
}

// TestPgCPU: PostgreSQL's own processes' time, once read, stands for its
// share instead of the machine's busy time less the others'.
func TestPgCPU(t *testing.T) {
	r := flatResult(1, 10, load.New, 1000, 200, 100).r
	if got := perRequest(pgCPU(r), r.Requests); got != 100 {
		t.Errorf("without its own time: %v µs, want the machine's 100", got)
	}
	r.cpu.pgOwn = 80 * time.Millisecond
	if got := perRequest(pgCPU(r), r.Requests); got != 80 {
		t.Errorf("with its own time: %v µs, want 80", got)
	}
	if got := cpuPerRequest(r); got != 280 {
		t.Errorf("server and PostgreSQL: %v µs, want 280", got)
	}
	if !strings.Contains(pgSource([]flatRun{{r: r}}), "its own processes'") {
		t.Error("the report does not say PostgreSQL's CPU is its own processes'")
	}
}
