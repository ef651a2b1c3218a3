package webhooks_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/webhooks"
)

// TestStartStop: the dispatcher under the server's background contract
// (internal/startstop). Started twice it delivers as once; Stop returns
// once it has stopped, its delivery recorded, and a second Stop changes
// nothing. TestMain's goleak finds nothing left running.
func TestStartStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond})
	rcv := newReceiver(t, 0)
	_, secret, err := e.wh.CreateEndpoint(t.Context(), "", rcv.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret.Store(&secret)
	for range 2 {
		if err := e.wh.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	e.create(t, "shop-1", "start-stop")
	waitFor(t, 15*time.Second, "the event delivered", func() bool { return rcv.distinct() == 1 })
	e.wh.Stop()
	e.wh.Stop()
	if d := e.deliveries(t); len(d) != 1 || d[0].Status != "DELIVERED" {
		t.Errorf("after Stop the deliveries are %+v, want the one, recorded DELIVERED", d)
	}
}
