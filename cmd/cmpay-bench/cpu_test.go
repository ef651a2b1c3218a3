package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// burn spins until this process has used d more CPU time, by the kernel's
// own count (getrusage), and returns the wall time that took. Spinning for
// a wall-clock d instead would, on a loaded machine, get a fraction of a
// core and be charged too little to test with.
func burn(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start, from := time.Now(), selfCPU(t)
	// Asking the kernel, again and again, is the work.
	for selfCPU(t)-from < d {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the machine gave this process less than %v of CPU in 30 s", d)
		}
	}
	return time.Since(start)
}

// selfCPU is this process's user and system CPU time.
func selfCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestProcessCPUCountsThisProcess(t *testing.T) {
	before := processCPU(os.Getpid())
	burn(t, 200*time.Millisecond)
	used := processCPU(os.Getpid()) - before
	// /proc counts in 10 ms ticks what getrusage counts exactly.
	if used < 150*time.Millisecond || used > 2*time.Second {
		t.Errorf("burning 200 ms of CPU counted as %v", used)
	}
	if processCPU(-1) != 0 {
		t.Error("a missing process has CPU time")
	}
}

func TestCPUUseSplitsTheMachine(t *testing.T) {
	from := sampleCPU(os.Getpid())
	wall := burn(t, 200*time.Millisecond)
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
	if use.elapsed < wall {
		t.Errorf("elapsed %v, want at least the %v the burn took", use.elapsed, wall)
	}
	if got := perRequest(2*time.Millisecond, 4); got != 500 {
		t.Errorf("perRequest = %v µs, want 500", got)
	}
}

// TestFamilyCPU: a process's family time holds its children's, those alive
// and those it waited for, and PostgreSQL's postmaster is found from a
// connection.
func TestFamilyCPU(t *testing.T) {
	if familyCPU(0) != 0 || familyCPU(-1) != 0 {
		t.Error("no process has family time")
	}
	// A child that spins for 150 ms of its own CPU time, then exits.
	spin := func() *exec.Cmd {
		return exec.Command(os.Args[0], "-test.run=^TestSpinHelper$")
	}
	before := familyCPU(os.Getpid())
	cmd := spin()
	cmd.Env = append(os.Environ(), "CMPAY_BENCH_SPIN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if used := familyCPU(os.Getpid()) - before; used < 100*time.Millisecond {
		t.Errorf("a child that spun for 150 ms and exited added %v", used)
	}
	// One alive: its time counts while it runs.
	cmd = spin()
	cmd.Env = append(os.Environ(), "CMPAY_BENCH_SPIN=forever")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	before = familyCPU(os.Getpid()) - processCPU(os.Getpid())
	deadline := time.Now().Add(30 * time.Second)
	for familyCPU(os.Getpid())-processCPU(os.Getpid())-before < 100*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("a spinning child added no time in 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not waiting for it to happen
	}

	db := dbtest.Postgres(t)
	pid := findPostmaster(db.Gorm)
	if pid == 0 {
		t.Skip("PostgreSQL does not run on this machine")
	}
	if familyCPU(pid) <= 0 {
		t.Errorf("the postmaster %d and its backends have used no CPU", pid)
	}
}

// TestSpinHelper is the child TestFamilyCPU starts: it spins for 150 ms of
// CPU time, or until killed.
func TestSpinHelper(t *testing.T) {
	how := os.Getenv("CMPAY_BENCH_SPIN")
	if how == "" {
		t.Skip("started by TestFamilyCPU only")
	}
	for how == "forever" || selfCPU(t) < 150*time.Millisecond {
	}
}
