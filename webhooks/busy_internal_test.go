package webhooks

import (
	"fmt"
	"testing"
	"time"
)

// How an endpoint's last attempt ended decides how the next claim treats
// it: fast after a quick answer (any status), silent after none, neither
// (as a new endpoint) after a slow answer; an attempt never made changes
// nothing.
func TestBusyVerdicts(t *testing.T) {
	t.Parallel()
	verdicts := []struct {
		r    result
		want verdict
	}{
		{result{sent: true, status: 500, took: 20 * time.Millisecond}, answeredFast},
		{result{sent: true, status: 204, took: 1500 * time.Millisecond}, answeredSlowly},
		{result{sent: true, took: 10 * time.Second, problem: "no answer within 10s"}, unanswered},
		{result{sent: true, took: time.Millisecond, problem: "connection refused"}, unanswered},
		// Refused before the clock could tick (a coarse clock): still no answer.
		{result{sent: true, problem: "connection refused"}, unanswered},
		{result{problem: "bad url"}, notMade},
		{result{problem: "not sent: no key opens the secret"}, notMade},
		// A status at once, then a body that stalls until the timeout: it hangs.
		{result{sent: true, status: 200, ok: true, took: 10 * time.Second, bodyCut: true}, unanswered},
		{result{sent: true, status: 200, ok: true, took: 5 * time.Millisecond, bodyCut: true}, unanswered},
	}
	for _, v := range verdicts {
		if got := verdictOf(v.r); got != v.want {
			t.Errorf("verdictOf(%+v) = %d, want %d", v.r, got, v.want)
		}
	}

	b := newBusy(64)
	c := claim{EndpointID: "we_1", ClientID: "shop"}
	state := func() string {
		l := b.snapshot()
		return fmt.Sprintf("fast %v silent %v endpoints %v clients %v", l.Fast, l.Silent, l.Endpoints, l.Clients)
	}
	for _, step := range []struct {
		v       verdict
		counted bool // whether the attempt counts under way: its endpoint is not known fast
		want    string
	}{
		{unanswered, true, "fast [] silent [we_1] endpoints map[] clients map[]"},
		{notMade, true, "fast [] silent [we_1] endpoints map[] clients map[]"},
		{answeredFast, true, "fast [we_1] silent [] endpoints map[] clients map[]"},
		{answeredSlowly, false, "fast [] silent [] endpoints map[] clients map[]"},
		{answeredFast, true, "fast [we_1] silent [] endpoints map[] clients map[]"},
	} {
		end := b.begin(c)
		if l := b.snapshot(); (l.Endpoints["we_1"] == 1 && l.Clients["shop"] == 1) != step.counted {
			t.Errorf("before %d, under way: %s; want counted %v", step.v, state(), step.counted)
		}
		end(step.v)
		if got := state(); got != step.want {
			t.Errorf("after %d: %s, want %s", step.v, got, step.want)
		}
	}
}

// An endpoint not attempted here for lastKept is forgotten, as never
// tried: the lists every claim carries hold only endpoints attempted
// lately, however many clients the instance has served.
func TestBusyForgetsOldAttempts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	b := newBusy(64)
	b.now = func() time.Time { return now }
	b.begin(claim{EndpointID: "we_fast", ClientID: "shop"})(answeredFast)
	b.begin(claim{EndpointID: "we_silent", ClientID: "shop"})(unanswered)
	now = now.Add(lastKept / 2)
	b.begin(claim{EndpointID: "we_recent", ClientID: "shop"})(unanswered)
	if l := b.snapshot(); len(l.Fast) != 1 || len(l.Silent) != 2 {
		t.Fatalf("within lastKept: fast %v silent %v, want all three remembered", l.Fast, l.Silent)
	}
	now = now.Add(lastKept/2 + time.Second)
	if l := b.snapshot(); len(l.Fast) != 0 || fmt.Sprint(l.Silent) != "[we_recent]" {
		t.Errorf("past lastKept: fast %v silent %v, want only we_recent", l.Fast, l.Silent)
	}
	if len(b.last) != 1 {
		t.Errorf("%d endpoints remembered, want 1", len(b.last))
	}
}
