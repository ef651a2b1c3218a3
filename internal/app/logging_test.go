package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/logtest"
)

// TestBufferedLog: lines wait in the buffer, reach the output within a
// flush interval while the flusher runs, and all of them at Stop.
func TestBufferedLog(t *testing.T) {
	t.Parallel()
	var out logtest.Buffer
	b := newBufferedLog(&out)
	fmt.Fprintln(b, "before start")
	if out.String() != "" {
		t.Fatalf("a line went out unbuffered: %q", out.String())
	}
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * flushEvery)
	for !strings.Contains(out.String(), "before start") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing flushed within %s", 10*flushEvery)
		}
		time.Sleep(flushEvery / 10) // polling, with the deadline above
	}
	for i := range 1000 {
		fmt.Fprintf(b, "line %d\n", i)
	}
	b.Stop()
	if got := strings.Count(out.String(), "\n"); got != 1001 || !strings.HasSuffix(out.String(), "line 999\n") {
		t.Errorf("after Stop the output has %d lines, ending %q; want all 1001", got, out.String()[max(0, len(out.String())-20):])
	}
}
