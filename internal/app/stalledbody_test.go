package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/processor"
)

// A request whose body stops arriving is cut at the server's read timeout,
// a POST for a stream (Accept: text/event-stream) too: its deadlines are
// lifted only once its body is read, or one token could hold any number of
// connections and goroutines with bodies that never end. The plain POST is
// the control.
func TestStalledBodyIsCut(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	cfg, err := config.FromEnv(testEnv(db.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	replica, err := database.OpenReplica(db.Gorm, "", database.ReplicaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := build(ctx, db.Gorm, replica, cfg, processor.DefaultConfig(), io.Discard, quiet)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	s.http.ReadTimeout, s.http.WriteTimeout = timeout, timeout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, ln, io.Discard) }()
	defer func() {
		cancel()
		<-served
	}()

	stall := func(accept string) (time.Duration, error) {
		c, err := net.Dial("tcp", ln.Addr().String())
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
