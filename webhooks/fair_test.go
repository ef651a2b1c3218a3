package webhooks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/webhooks"
)

// hangingReceiver answers nothing until release is called: an endpoint
// whose server takes the request and then hangs.
func hangingReceiver(t *testing.T) (srv *httptest.Server, release func()) {
	done := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that a client hanging up ends r.Context()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	return srv, func() { once.Do(func() { close(done) }) }
}

// One client's many hanging endpoints cannot starve another client's
// deliveries, and one hanging endpoint does not hold up its own client's
// other endpoints: each endpoint and each client has its share of the
// instance's attempts, and claims take every client's oldest in turn.
func TestHangingEndpointsSlowOnlyThemselves(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true, Concurrency: 8})
		hang, release := hangingReceiver(t)
		for i := range 12 {
			if _, _, err := e.wh.CreateEndpoint(t.Context(), "shop-a", fmt.Sprintf("%s/a/%d", hang.URL, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := e.wh.CreateEndpoint(t.Context(), "shop-c", hang.URL+"/c", nil); err != nil {
			t.Fatal(err)
		}
		fastB, fastC := newReceiver(t, 0), newReceiver(t, 0)
		for client, rcv := range map[string]*receiver{"shop-b": fastB, "shop-c": fastC} {
			_, secret, err := e.wh.CreateEndpoint(t.Context(), client, rcv.srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			rcv.secret.Store(&secret)
		}
		run(t, e.wh.Run)
		t.Cleanup(release) // before the dispatcher stops, which waits for its attempts
		// shop-a's payments first: 36 deliveries to hanging endpoints,
		// more than the instance's 8 attempts at once.
		for i := range 3 {
			e.create(t, "shop-a", fmt.Sprint("a-", i))
		}
		e.create(t, "shop-c", "c-1")
		began := time.Now()
		e.create(t, "shop-b", "b-1")
		waitFor(t, 8*time.Second, "shop-b's and shop-c's fast endpoints served", func() bool {
			return fastB.distinct() == 1 && fastC.distinct() == 1
		})
		took := time.Since(began)
		t.Logf("the other clients' deliveries took %v", took)
		if took > 3*time.Second {
			t.Errorf("the other clients' deliveries took %v behind hanging endpoints; want well under the 10 s attempt timeout", took)
		}
	})
}

// countingHang answers nothing until released at cleanup, as
// hangingReceiver, and counts the requests it holds.
func countingHang(t *testing.T) (srv *httptest.Server, held *atomic.Int64) {
	held = new(atomic.Int64)
	done := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		held.Add(1)
		defer held.Add(-1)
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: the server's Close waits for its handlers
	return srv, held
}

// A client's hanging endpoints with a backlog fill its share of the
// instance's attempts; its healthy endpoints still get their first
// attempt within the contract's 2 s: one that is new, and one that was
// fast until one slow answer. Each endpoint with nothing under way may
// make one attempt past its client's share, and one that answered at all
// last time is not taken for hanging.
func TestHangingEndpointsLeaveRoomForTheirSiblings(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		// 64 attempts at once: 4 an endpoint, 16 a client not known fast;
		// the hanging attempts outlast the test.
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true, Concurrency: 64, AttemptTimeout: time.Minute})
		var slowOnce atomic.Bool
		blip := &receiver{t: t, bodies: map[string]webhooks.Body{}, accepted: map[string]int{}}
		blip.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if slowOnce.CompareAndSwap(true, false) {
				// One answer just over the second that makes an endpoint fast.
				select {
				case <-time.After(1200 * time.Millisecond):
				case <-r.Context().Done():
				}
			}
			blip.serve(w, r)
		}))
		t.Cleanup(blip.srv.Close)
		endpoint := func(rcv *receiver) string {
			id, secret, err := e.wh.CreateEndpoint(t.Context(), "shop-a", rcv.srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			rcv.secret.Store(&secret)
			return id.ID
		}
		blipID := endpoint(blip)
		run(t, e.wh.Run)
		e.create(t, "shop-a", "warm")
		waitFor(t, 5*time.Second, "the established endpoint's first delivery", func() bool { return blip.distinct() == 1 })

		hang, held := countingHang(t)
		for i := range 4 {
			if _, _, err := e.wh.CreateEndpoint(t.Context(), "shop-a", fmt.Sprintf("%s/h%d", hang.URL, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20 {
			e.create(t, "shop-a", fmt.Sprint("backlog-", i))
		}
		waitFor(t, 8*time.Second, "shop-a's share held by its hanging endpoints", func() bool {
			return held.Load() >= 16 && blip.distinct() == 21
		})

		// One slow answer: the established endpoint is no longer known fast.
		slowOnce.Store(true)
		e.create(t, "shop-a", "slow")
		waitFor(t, 8*time.Second, "the slow answer recorded", func() bool {
			return blip.distinct() == 22 && delivered(t, e, blipID) == 22
		})

		fresh := newReceiver(t, 0)
		endpoint(fresh)
		began := time.Now()
		e.create(t, "shop-a", "after")
		waitFor(t, 6*time.Second, "the healthy endpoints' deliveries of the new payment", func() bool {
			return fresh.distinct() == 1 && blip.distinct() == 23
		})
		took := time.Since(began)
		t.Logf("the healthy endpoints' deliveries took %v; %d attempts hanging", took, held.Load())
		if took > 3*time.Second {
			t.Errorf("the healthy endpoints' deliveries took %v behind their client's hanging endpoints; the contract says 2 s", took)
		}
	})
}

// delivered counts the endpoint's delivered deliveries.
func delivered(t *testing.T, e *env, endpoint string) int {
	n := 0
	for _, d := range e.deliveries(t) {
		if d.EndpointID == endpoint && d.Status == "DELIVERED" {
			n++
		}
	}
	return n
}
