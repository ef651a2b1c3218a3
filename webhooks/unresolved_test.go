package webhooks_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/webhooks"
)

// stalledResolver never answers: a DNS server that does not reply.
type stalledResolver struct{}

func (stalledResolver) LookupIPAddr(ctx context.Context, _ string) ([]net.IPAddr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestUnresolvedNameIsTaken: a public-looking name that does not resolve
// when the endpoint is created (no DNS in a sandbox, a failing or silent
// server) is accepted, not refused with BAD_USER_INPUT.
func TestUnresolvedNameIsTaken(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]webhooks.Resolver{"failing": fakeResolver{}, "stalled": stalledResolver{}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dbtest.SQLite(t), webhooks.Config{Resolver: r, RetryMin: time.Hour})
			ep, _, err := e.wh.CreateEndpoint(t.Context(), "", "https://hooks.example.com/cmpay", nil)
			if err != nil || ep.URL != "https://hooks.example.com/cmpay" {
				t.Errorf("CreateEndpoint(https://hooks.example.com/cmpay) = %+v, %v; want it created", ep, err)
			}
		})
	}
}

// TestUnresolvedNameIsGuardedAtDelivery: a name that did not resolve at
// creation and resolves to loopback when a delivery connects is never
// delivered to: the dialer refuses the address.
func TestUnresolvedNameIsGuardedAtDelivery(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// At creation the resolver knows no name; the delivery dials through
	// the system's, where localhost is 127.0.0.1.
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{Resolver: fakeResolver{}, RetryMin: time.Hour})
	if _, _, err := e.wh.CreateEndpoint(t.Context(), "", "http://localhost:"+strconv.Itoa(port)+"/hook", nil); err != nil {
		t.Fatal(err)
	}
	run(t, e.wh.Run)
	e.create(t, "shop-1", "unresolved")
	waitFor(t, 10*time.Second, "the attempt", func() bool {
		rows := e.deliveries(t)
		return len(rows) == 1 && rows[0].Attempts > 0
	})
	d := e.deliveries(t)[0]
	if hits.Load() != 0 || d.Status != "PENDING" || d.LastStatus != 0 || d.LastError == "" {
		t.Errorf("the loopback server was reached: %d hits, delivery %s %d %q", hits.Load(), d.Status, d.LastStatus, d.LastError)
	}
	t.Logf("the delivery failed with %q", d.LastError)
}
