package webhooks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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
