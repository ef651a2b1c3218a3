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
		{result{status: 500, took: 20 * time.Millisecond}, answeredFast},
		{result{status: 204, took: 1500 * time.Millisecond}, answeredSlowly},
		{result{took: 10 * time.Second, problem: "no answer within 10s"}, unanswered},
		{result{took: time.Millisecond, problem: "connection refused"}, unanswered},
		{result{problem: "bad url"}, notMade},
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
