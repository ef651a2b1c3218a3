package main

import (
	"os"
	"testing"
	"time"
)

// burn keeps one core busy for d.
func burn(d time.Duration) {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		x++
	}
	_ = x
}

func TestProcessCPUCountsThisProcess(t *testing.T) {
	before := processCPU(os.Getpid())
	burn(200 * time.Millisecond)
	used := processCPU(os.Getpid()) - before
	// /proc counts in 10 ms ticks; a loaded machine may not have run us
	// all the time, but it ran us some of it.
	if used < 50*time.Millisecond || used > 2*time.Second {
		t.Errorf("burning 200 ms of CPU counted as %v", used)
	}
	if processCPU(-1) != 0 {
		t.Error("a missing process has CPU time")
	}
}

func TestCPUUseSplitsTheMachine(t *testing.T) {
	from := sampleCPU(os.Getpid())
	burn(200 * time.Millisecond)
	use := from.until(sampleCPU(os.Getpid()))
	// Both are this process here, read a moment apart: /proc's 10 ms tick
	// may fall between the two reads.
	if diff := use.bench - use.server; use.server <= 0 || diff < -10*time.Millisecond || diff > 10*time.Millisecond {
		t.Errorf("server %v, bench %v: both are this process here", use.server, use.bench)
	}
	// The machine was busy at least while this process burned.
	if busy := use.postgres + use.server + use.bench; busy < use.server {
		t.Errorf("machine busy %v, less than this process's %v", busy, use.server)
	}
	if use.elapsed < 200*time.Millisecond {
		t.Errorf("elapsed %v, want at least the 200 ms burned", use.elapsed)
	}
	if got := perRequest(2*time.Millisecond, 4); got != 500 {
		t.Errorf("perRequest = %v µs, want 500", got)
	}
}
