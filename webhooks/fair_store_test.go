package webhooks

import (
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A claim's room for a client: its endpoints not known fast may have a
// quarter of the instance's attempts under way, and each of them with
// nothing under way that answered last time (or was never tried) one more
// while the client has fewer than a quarter and a sixteenth. Those first
// attempts come before more attempts of busy endpoints; an endpoint that
// did not answer last time takes none of that room.
func TestStoreClaimLeavesRoomForIdleEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st := openStore(t, db)
		at := now().Add(-time.Minute)
		for _, e := range []string{"we_h0", "we_h1", "we_h2", "we_h3", "we_silent", "we_idle"} {
			addDeliveries(t, db, e, 6, at)
		}
		byEndpoint := func(cs []claim) map[string]int {
			n := map[string]int{}
			for _, c := range cs {
				n[c.EndpointID]++
			}
			return n
		}
		// release makes every delivery due again, as if the attempts were
		// recorded as failed.
		release := func() {
			t.Helper()
			if err := db.Gorm.Exec("UPDATE webhook_deliveries SET next_attempt_at = ?", at).Error; err != nil {
				t.Fatal(err)
			}
		}
		token := int64(0)
		claimWith := func(l inFlight) []claim {
			t.Helper()
			l.PerEndpoint, l.PerClient = 4, 16
			token++
			cs, err := st.claim(t.Context(), at.Add(time.Second), at.Add(time.Hour), token, 100, l)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}

		// Nothing under way: every endpoint but the silent one first, then
		// the oldest up to the client's quarter, 4 an endpoint.
		first := claimWith(inFlight{Silent: []string{"we_silent"}})
		n := byEndpoint(first)
		if len(first) != 16 || n["we_idle"] < 1 || n["we_silent"] > 3 || n["we_h0"] > 4 {
			t.Fatalf("first claim took %v; want 16, at most 4 an endpoint, we_idle among them", n)
		}
		release()

		hanging := map[string]int{"we_h0": 4, "we_h1": 4, "we_h2": 4, "we_h3": 4}
		oneFree := map[string]int{"we_h0": 3, "we_h1": 4, "we_h2": 4, "we_h3": 4}
		for _, tc := range []struct {
			endpoints map[string]int
			client    int
			silent    []string
			want      string
		}{
			{hanging, 16, []string{"we_silent"}, "map[we_idle:1]"},
			{hanging, 19, []string{"we_silent"}, "map[we_idle:1]"},
			{hanging, 16, nil, "map[we_idle:1 we_silent:1]"},
			{hanging, 20, nil, "map[]"},
			// The client's two slots left go to the endpoints with nothing
			// under way, we_idle first, before we_h0's older deliveries.
			{oneFree, 14, []string{"we_silent"}, "map[we_idle:1 we_silent:1]"},
			{oneFree, 15, []string{"we_silent"}, "map[we_idle:1]"},
			{oneFree, 18, []string{"we_silent"}, "map[we_idle:1]"},
		} {
			got := claimWith(inFlight{Endpoints: tc.endpoints, Clients: map[string]int{"": tc.client}, Silent: tc.silent})
			if fmt.Sprint(byEndpoint(got)) != tc.want {
				t.Errorf("with %d under way for the client and %v silent, the claim took %v; want %s",
					tc.client, tc.silent, byEndpoint(got), tc.want)
			}
			release()
		}
	})
}
