package app

import (
	"os"
	"runtime/debug"
)

// tuneGC trades a little memory for less collector work: GOGC=400 unless
// GOGC is set, and a 64 MiB soft limit on Go's memory unless GOMEMLIMIT
// is. The live heap is small (1-2 MB under load), so the collector's goal
// is its floor, 4 MB times GOGC/100: at GOGC=200 an 8 MB goal meant about
// four collections per 1,000 requests, and GOGC=400's 16 MB floor cut the
// CPU per request by 3-5% (docs/benchmarks/2026-12-03-collector-floor.md), with
// the process near 50 MB. The limit makes the collector work harder as
// Go's heap nears 64 MiB, should the live heap ever grow that far. It
// reads the process's own environment, which is what the runtime reads.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
}
