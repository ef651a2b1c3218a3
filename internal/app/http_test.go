package app

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/graph"
)

func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 || d > 5*time.Minute {
			t.Errorf("%s = %s, want a bound", name, d)
		}
	}
	if srv.ReadHeaderTimeout > 10*time.Second || srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("header limits: %s, %d bytes", srv.ReadHeaderTimeout, srv.MaxHeaderBytes)
	}
}

// TestGraphQLOptionsFromConfig: what the environment leaves unset is
// graph's default, and what it sets replaces it, introspection off too.
func TestGraphQLOptionsFromConfig(t *testing.T) {
	t.Parallel()
	def := graph.DefaultOptions()
	unset, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if o := graphQLOptions(unset); o.Introspection != def.Introspection || o.MaxDepth != def.MaxDepth || o.MaxComplexity != def.MaxComplexity {
		t.Errorf("unset: %+v, want graph's defaults %+v", *o, def)
	}
	vars := map[string]string{"GRAPHQL_INTROSPECTION": "false", "GRAPHQL_MAX_DEPTH": "3", "GRAPHQL_MAX_COMPLEXITY": "40"}
	set, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o := graphQLOptions(set); o.Introspection || o.MaxDepth != 3 || o.MaxComplexity != 40 {
		t.Errorf("set: introspection %v, depth %d, complexity %d", o.Introspection, o.MaxDepth, o.MaxComplexity)
	}
}

// TestEventsOptionsFromConfig: the retention is the longer of the key TTL
// and WEBHOOK_MAX_AGE, plus an hour, defaults included; WEBHOOK_FAILED_KEEP
// reaches the events package, and unset stays zero for its default.
func TestEventsOptionsFromConfig(t *testing.T) {
	t.Parallel()
	unset, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if o := eventsOptions(unset); o.Retention != 73*time.Hour || o.FailedKeep != 0 {
		t.Errorf("unset: retention %s, failed keep %s; want 73h and 0 (events.DefaultFailedKeep)", o.Retention, o.FailedKeep)
	}
	vars := map[string]string{"WEBHOOK_MAX_AGE": "100h", "WEBHOOK_FAILED_KEEP": "336h"}
	set, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o := eventsOptions(set); o.Retention != 101*time.Hour || o.FailedKeep != 336*time.Hour {
		t.Errorf("set: retention %s, failed keep %s; want 101h and 336h", o.Retention, o.FailedKeep)
	}
}
