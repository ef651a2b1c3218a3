package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// A request whose body stops arriving is cut at the server's read timeout,
// a POST for a stream (Accept: text/event-stream) too: its deadlines are
// lifted only once its body is read, or one token could hold any number of
// connections and goroutines with bodies that never end. The plain POST is
// the control.
func TestStalledBodyIsCut(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	addr := serveCut(t, timeout)
	stall := func(accept string) (time.Duration, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		body := `{"query":"subscription { paymentEvents { type } }"}`
		fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: %s\r\nContent-Length: %d\r\n\r\n%s", testToken, accept, len(body)+10, body[:10])
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(6 * timeout))
		_, err = io.Copy(io.Discard, bufio.NewReader(c)) // until the server closes, or our deadline
		return time.Since(start), err
	}
	if took, err := stall("application/json"); err != nil || took > 4*timeout {
		t.Fatalf("control, a plain POST: closed after %s (%v), want about %s", took, err, timeout)
	}
	if took, err := stall("text/event-stream"); err != nil {
		t.Errorf("a stream's POST whose body stalls: still open after %s (%v); want it closed after about %s like a plain POST", took, err, timeout)
	}
}
