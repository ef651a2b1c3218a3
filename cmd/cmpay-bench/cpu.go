package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Where the CPU goes. The load generator, the server and PostgreSQL share
// the machine, so beside each mode's rate the benchmark reports what each
// of them spent per request, and how much of the machine stayed idle:
// that is what says why a ratio is what it is.

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuSample is the CPU time used so far by the server and by this process
// (the load generator), and by the whole machine, idle or busy.
type cpuSample struct {
	at            time.Time
	server, bench time.Duration
	busy, idle    time.Duration
}

func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now(), server: processCPU(serverPID), bench: processCPU(os.Getpid())}
	s.busy, s.idle = machineCPU()
	return s
}

// cpuUse is what was spent between two samples. PostgreSQL's share is the
// machine's busy time less the server's and the client's: its backends come
// and go with their connections, which makes adding up their own times
// unreliable. It includes whatever else ran, which on the benchmark
// machine is little: the kernel's network work not charged to a process.
type cpuUse struct {
	elapsed                 time.Duration
	server, postgres, bench time.Duration
	idle                    time.Duration
}

func (s cpuSample) until(e cpuSample) cpuUse {
	u := cpuUse{elapsed: e.at.Sub(s.at), server: e.server - s.server, bench: e.bench - s.bench, idle: e.idle - s.idle}
	// Counted in 10 ms ticks, the difference can come out a tick or two
	// below zero when PostgreSQL did nothing.
	u.postgres = max(0, e.busy-s.busy-u.server-u.bench)
	return u
}

// perRequest is d spread over n requests, in µs.
func perRequest(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// cores is d as a share of the elapsed time, in cores.
func (u cpuUse) cores(d time.Duration) float64 {
	if u.elapsed <= 0 {
		return 0
	}
	return d.Seconds() / u.elapsed.Seconds()
}

// processCPU is a process's user and system time, its threads included.
func processCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. utime and stime are fields 14 and 15
	// of the file, 12 and 13 from there.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// machineCPU is the time all cores together spent busy, and idle or
// waiting for I/O.
func machineCPU() (busy, idle time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	for i, field := range f[1:min(len(f), 9)] {
		ticks, _ := strconv.ParseInt(field, 10, 64)
		if i == 3 || i == 4 {
			idle += time.Duration(ticks) * clockTick
		} else {
			busy += time.Duration(ticks) * clockTick
		}
	}
	return busy, idle
}
