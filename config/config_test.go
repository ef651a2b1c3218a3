package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.AdminUser != "admin" || c.DebugAddr != "" {
		t.Errorf("defaults = %+v", c)
	}
	// What is not set stays zero, for the package that uses it to apply
	// its own default (each tested there: database.TestOpenDefault,
	// payments.TestDefaultKeyTTL, staff's TestSessionTimeouts, webhooks'
	// TestDefaults).
	if c.DatabaseURL != "" || c.KeyTTL != 0 || c.AdminSessionIdle != 0 || c.WebhookRetryMin != 0 || c.WebhookMaxAge != 0 || c.WebhookAttemptTimeout != 0 ||
		c.WebhookFailedKeep != 0 ||
		c.AdminRequestTimeout != 0 || c.SweepInterval != 0 || c.MaxBodyBytes != 0 || c.MaxDepth != 0 || c.MaxComplexity != 0 || c.Introspection != nil {
		t.Errorf("unset values: %+v, want them zero", c)
	}
	if c.ShutdownTimeout != DefaultShutdownTimeout {
		t.Errorf("shutdown timeout %s, want %s", c.ShutdownTimeout, DefaultShutdownTimeout)
	}
	if !c.APITokenGenerated || len(c.APITokens) != 1 || len(c.APITokens[0]) < 40 {
		t.Errorf("generated token = %v (generated %v), want one long random token", c.APITokens, c.APITokenGenerated)
	}
	// The admin's password is made up, if needed, where the account is
	// created (staff.Store.Bootstrap), not here.
	if c.AdminPassword != "" {
		t.Errorf("admin password %q, want none", c.AdminPassword)
	}
	again, _ := FromEnv(env(nil))
	if again.APITokens[0] == c.APITokens[0] {
		t.Error("two starts generated the same secret")
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{
		"DATABASE_URL":        "postgres://u:p@db:5432/cmpay",
		"ADDR":                "127.0.0.1:9000",
		"API_TOKENS":          " one, two ,,three ",
		"ADMIN_USER":          "support",
		"ADMIN_PASSWORD":      "secret",
		"IDEMPOTENCY_KEY_TTL": "90m",
		"DEBUG_ADDR":          "127.0.0.1:6060",
		"ADMIN_SESSION_IDLE":  "15m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.APITokens, []string{"one", "two", "three"}) || c.APITokenGenerated {
		t.Errorf("tokens = %q (generated %v)", c.APITokens, c.APITokenGenerated)
	}
	if c.DatabaseURL != "postgres://u:p@db:5432/cmpay" || c.Addr != "127.0.0.1:9000" || c.AdminUser != "support" ||
		c.AdminPassword != "secret" || c.KeyTTL != 90*time.Minute || c.AdminSessionIdle != 15*time.Minute || c.DebugAddr != "127.0.0.1:6060" {
		t.Errorf("config = %+v", c)
	}
}

func TestAdminRequestTimeout(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{"ADMIN_REQUEST_TIMEOUT": "4s"}))
	if err != nil || c.AdminRequestTimeout != 4*time.Second {
		t.Errorf("ADMIN_REQUEST_TIMEOUT=4s: %s, %v", c.AdminRequestTimeout, err)
	}
	if _, err := FromEnv(env(map[string]string{"ADMIN_REQUEST_TIMEOUT": "0s"})); err == nil || !strings.Contains(err.Error(), "ADMIN_REQUEST_TIMEOUT") {
		t.Errorf("ADMIN_REQUEST_TIMEOUT=0s: %v, want it refused", err)
	}
}

func TestFromEnvRefusesBadDurations(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(env(map[string]string{"IDEMPOTENCY_KEY_TTL": "1 day", "SHUTDOWN_TIMEOUT": "-5s", "ADMIN_SESSION_IDLE": "30"}))
	if err == nil || !strings.Contains(err.Error(), "IDEMPOTENCY_KEY_TTL") || !strings.Contains(err.Error(), "SHUTDOWN_TIMEOUT") ||
		!strings.Contains(err.Error(), "ADMIN_SESSION_IDLE") {
		t.Errorf("err = %v, want both variables named", err)
	}
}

func TestReplicaURL(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(nil))
	if err != nil || c.ReplicaURL != "" {
		t.Errorf("default: %q, %v; want no replica", c.ReplicaURL, err)
	}
	c, err = FromEnv(env(map[string]string{
		"DATABASE_URL":         "postgres://u:p@h1:5432,h2:5432/cmpay?target_session_attrs=read-write",
		"DATABASE_REPLICA_URL": "postgresql://u:p@h3:5432/cmpay",
	}))
	if err != nil || c.ReplicaURL != "postgresql://u:p@h3:5432/cmpay" {
		t.Errorf("replica: %q, %v", c.ReplicaURL, err)
	}
	for _, vars := range []map[string]string{
		{"DATABASE_REPLICA_URL": "postgres://u:p@h3/cmpay"}, // beside the SQLite default
		{"DATABASE_URL": "postgres://u:p@h1/cmpay", "DATABASE_REPLICA_URL": "sqlite:replica.db"},
	} {
		if _, err := FromEnv(env(vars)); err == nil || !strings.Contains(err.Error(), "DATABASE_REPLICA_URL") {
			t.Errorf("%v: %v, want an error naming DATABASE_REPLICA_URL", vars, err)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value   string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"10.0.0.0/8, 192.0.2.7 ,fd00::/8", []string{"10.0.0.0/8", "192.0.2.7/32", "fd00::/8"}, false},
		{"10.0.0.0/33", nil, true},
		{"proxy.internal", nil, true},
	}
	for _, tt := range tests {
		c, err := FromEnv(env(map[string]string{"TRUSTED_PROXIES": tt.value}))
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
				t.Errorf("%q: err = %v, want one naming TRUSTED_PROXIES", tt.value, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.value, err)
			continue
		}
		var got []string
		for _, p := range c.TrustedProxies {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v, want %v", tt.value, got, tt.want)
		}
	}
}

func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookAllowPrivate {
		t.Error("private webhook addresses allowed by default")
	}
	c, err = FromEnv(env(map[string]string{"WEBHOOK_RETRY_MIN": "250ms", "WEBHOOK_MAX_AGE": "1h", "WEBHOOK_ALLOW_PRIVATE": "true",
		"WEBHOOK_ATTEMPT_TIMEOUT": "2s"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookRetryMin != 250*time.Millisecond || c.WebhookMaxAge != time.Hour || !c.WebhookAllowPrivate || c.WebhookAttemptTimeout != 2*time.Second {
		t.Errorf("webhook settings: %s, %s, %v, %s", c.WebhookRetryMin, c.WebhookMaxAge, c.WebhookAllowPrivate, c.WebhookAttemptTimeout)
	}
	_, err = FromEnv(env(map[string]string{"WEBHOOK_RETRY_MIN": "soon", "WEBHOOK_ALLOW_PRIVATE": "maybe"}))
	if err == nil || !strings.Contains(err.Error(), "WEBHOOK_RETRY_MIN") || !strings.Contains(err.Error(), "WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("err = %v, want both variables named", err)
	}
}

// TestWebhookFailedKeep: WEBHOOK_FAILED_KEEP is a positive Go duration,
// like the other durations; unset, it stays zero for events to apply its
// default, a week (events' TestFailedKeepDefault).
func TestWebhookFailedKeep(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{"WEBHOOK_FAILED_KEEP": "336h"}))
	if err != nil || c.WebhookFailedKeep != 336*time.Hour {
		t.Errorf("WEBHOOK_FAILED_KEEP=336h: %s, %v", c.WebhookFailedKeep, err)
	}
	for _, bad := range []string{"a week", "7d", "0s", "-1h"} {
		_, err := FromEnv(env(map[string]string{"WEBHOOK_FAILED_KEEP": bad}))
		if err == nil || !strings.Contains(err.Error(), "WEBHOOK_FAILED_KEEP") {
			t.Errorf("WEBHOOK_FAILED_KEEP=%q: %v, want an error naming it", bad, err)
		}
	}
}

// TestSubscriptionSettings: the subscription caps and the replay rate
// take positive whole numbers; unset, they stay zero for graph and events
// to apply their defaults (graph's TestSubscriptionLimitDefaults, events'
// TestReplayBudgetDefaults).
func TestSubscriptionSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.SubscriptionsPerSocket != 0 || c.SubscriptionsPerToken != 0 || c.SubscriptionsPerInstance != 0 || c.SubscriptionReplayRate != 0 {
		t.Errorf("unset subscription settings: %d, %d, %d, %d; want them zero", c.SubscriptionsPerSocket, c.SubscriptionsPerToken, c.SubscriptionsPerInstance, c.SubscriptionReplayRate)
	}
	c, err = FromEnv(env(map[string]string{"SUBSCRIPTIONS_PER_SOCKET": "5", "SUBSCRIPTIONS_PER_TOKEN": "6",
		"SUBSCRIPTIONS_PER_INSTANCE": "7", "SUBSCRIPTION_REPLAY_RATE": "8"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.SubscriptionsPerSocket != 5 || c.SubscriptionsPerToken != 6 || c.SubscriptionsPerInstance != 7 || c.SubscriptionReplayRate != 8 {
		t.Errorf("subscription settings: %d, %d, %d, %d", c.SubscriptionsPerSocket, c.SubscriptionsPerToken, c.SubscriptionsPerInstance, c.SubscriptionReplayRate)
	}
	if c, err := FromEnv(env(map[string]string{"WEBHOOK_ENDPOINTS_PER_CLIENT": "3"})); err != nil || c.WebhookEndpointsPerClient != 3 {
		t.Errorf("WEBHOOK_ENDPOINTS_PER_CLIENT=3: %d, %v", c.WebhookEndpointsPerClient, err)
	}
	_, err = FromEnv(env(map[string]string{"SUBSCRIPTIONS_PER_TOKEN": "0", "SUBSCRIPTION_REPLAY_RATE": "fast"}))
	if err == nil || !strings.Contains(err.Error(), "SUBSCRIPTIONS_PER_TOKEN") || !strings.Contains(err.Error(), "SUBSCRIPTION_REPLAY_RATE") {
		t.Errorf("err = %v, want both variables named", err)
	}
}

// TestWebhookSecretKeys: the key that seals webhook secrets is 32 bytes,
// given as hex or base64; anything else, or a previous key alone, is
// refused with the variable named.
func TestWebhookSecretKeys(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xab}, 32)
	for _, tc := range []struct {
		name, value string
		want        []byte
		wantErr     bool
	}{
		{"unset", "", nil, false},
		{"hex", hex.EncodeToString(key), key, false},
		{"base64", base64.StdEncoding.EncodeToString(key), key, false},
		{"base64 without padding", base64.RawStdEncoding.EncodeToString(key), key, false},
		{"URL-safe base64", base64.URLEncoding.EncodeToString(key), key, false},
		{"too short", hex.EncodeToString(key[:16]), nil, true},
		{"a password", "correct horse battery staple", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromEnv(env(map[string]string{"WEBHOOK_SECRET_KEY": tc.value}))
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET_KEY") {
					t.Errorf("err = %v, want WEBHOOK_SECRET_KEY named", err)
				}
				return
			}
			if err != nil || !bytes.Equal(c.WebhookSecretKey, tc.want) {
				t.Errorf("key %x, %v; want %x", c.WebhookSecretKey, err, tc.want)
			}
		})
	}
	c, err := FromEnv(env(map[string]string{"WEBHOOK_SECRET_KEY": hex.EncodeToString(key),
		"WEBHOOK_SECRET_KEY_PREVIOUS": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))}))
	if err != nil || !bytes.Equal(c.WebhookSecretKeyPrevious, bytes.Repeat([]byte{1}, 32)) {
		t.Errorf("previous key %x, %v", c.WebhookSecretKeyPrevious, err)
	}
	_, err = FromEnv(env(map[string]string{"WEBHOOK_SECRET_KEY_PREVIOUS": hex.EncodeToString(key)}))
	if err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET_KEY_PREVIOUS without WEBHOOK_SECRET_KEY") {
		t.Errorf("a previous key alone: err = %v", err)
	}
}

// TestRequestLimits: the body and GraphQL limits take positive whole
// numbers and introspection true or false; unset, they stay zero (nil) for
// httpapi and graph to apply their defaults.
func TestRequestLimits(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(map[string]string{"MAX_BODY_BYTES": "2048", "GRAPHQL_MAX_DEPTH": "4",
		"GRAPHQL_MAX_COMPLEXITY": "99", "GRAPHQL_INTROSPECTION": "false", "SWEEP_INTERVAL": "5m"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyBytes != 2048 || c.MaxDepth != 4 || c.MaxComplexity != 99 || c.Introspection == nil || *c.Introspection ||
		c.SweepInterval != 5*time.Minute {
		t.Errorf("limits: %d, %d, %d, %v, %s", c.MaxBodyBytes, c.MaxDepth, c.MaxComplexity, c.Introspection, c.SweepInterval)
	}
	_, err = FromEnv(env(map[string]string{"MAX_BODY_BYTES": "-1", "GRAPHQL_MAX_DEPTH": "deep", "GRAPHQL_INTROSPECTION": "sometimes"}))
	for _, name := range []string{"MAX_BODY_BYTES", "GRAPHQL_MAX_DEPTH", "GRAPHQL_INTROSPECTION"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want %s named", err, name)
		}
	}
}
