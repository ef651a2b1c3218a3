package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Where the CPU goes. The load generator, the server and PostgreSQL share
// the machine, so beside each mode's rate the benchmark reports what each
// of them spent per request, and how much of the machine stayed idle:
// that is what says why a ratio is what it is.

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuSample is the CPU time used so far by the server and by this process
// (the load generator), by PostgreSQL's processes if known (postmaster),
// and by the whole machine, idle or busy.
type cpuSample struct {
	at                time.Time
	server, bench, pg time.Duration
	busy, idle        time.Duration
}

func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now(), server: processCPU(serverPID), bench: processCPU(os.Getpid()), pg: familyCPU(postmaster)}
	s.busy, s.idle = machineCPU()
	return s
}

// postmaster is the process id of the PostgreSQL server measured, once
// found on this machine (findPostmaster); 0 while not. Its processes' own
// CPU time is PostgreSQL's share with nothing else in it: on a machine
// shared with other work, the busy time less the server's and the load
// generator's holds that other work too.
var postmaster int

// cpuUse is what was spent between two samples. PostgreSQL's share is the
// machine's busy time less the server's and the client's: its backends come
// and go with their connections, which makes adding up their own times
// unreliable. It includes whatever else ran, which on the benchmark
// machine is little: the kernel's network work not charged to a process.
// pgOwn is PostgreSQL's processes' own time, when the postmaster is known.
type cpuUse struct {
	elapsed                 time.Duration
	server, postgres, bench time.Duration
	pgOwn                   time.Duration
	idle                    time.Duration
}

func (s cpuSample) until(e cpuSample) cpuUse {
	u := cpuUse{elapsed: e.at.Sub(s.at), server: e.server - s.server, bench: e.bench - s.bench, idle: e.idle - s.idle,
		pgOwn: max(0, e.pg-s.pg)}
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
	f := statFields(pid)
	if len(f) < 15 {
		return 0
	}
	return ticks(f[11]) + ticks(f[12])
}

// statFields is /proc/<pid>/stat's fields after the command name, which,
// in parentheses, may hold spaces: field n of the file (man 5 proc) is
// n-3 here (state is 0, ppid 1, utime 11, stime 12, cutime 13, cstime 14).
// Nil for a missing process.
func statFields(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
}

func ticks(field string) time.Duration {
	n, _ := strconv.ParseInt(field, 10, 64)
	return time.Duration(n) * clockTick
}

// familyCPU is the user and system time of a process and of its children:
// those alive, and those that exited and that it waited for. For
// PostgreSQL's postmaster that is every backend and background worker,
// those gone since included. 0 for pid 0 or a missing process.
func familyCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	own := statFields(pid)
	if len(own) < 15 {
		return 0
	}
	total := ticks(own[11]) + ticks(own[12]) + ticks(own[13]) + ticks(own[14])
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	parent := strconv.Itoa(pid)
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) >= 15 && f[1] == parent {
			total += ticks(f[11]) + ticks(f[12])
		}
	}
	return total
}

// findPostmaster is the parent of db's backend when it runs on this
// machine as a process named postgres; 0 otherwise.
func findPostmaster(db *gorm.DB) int {
	var backend int
	if err := db.Raw(`SELECT pg_backend_pid()`).Scan(&backend).Error; err != nil {
		return 0
	}
	f := statFields(backend)
	if len(f) < 2 {
		return 0
	}
	parent, _ := strconv.Atoi(f[1])
	comm, err := os.ReadFile("/proc/" + f[1] + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return 0
	}
	return parent
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
