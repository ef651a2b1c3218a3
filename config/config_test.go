package config

import (
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
	if c.DatabaseURL != "sqlite:cmpay.db" || c.Addr != ":8080" || c.AdminUser != "admin" || c.KeyTTL != 24*time.Hour {
		t.Errorf("defaults = %+v", c)
	}
	if !c.APITokenGenerated || len(c.APITokens) != 1 || len(c.APITokens[0]) < 40 {
		t.Errorf("generated token = %v (generated %v), want one long random token", c.APITokens, c.APITokenGenerated)
	}
	if !c.AdminPasswordGenerated || len(c.AdminPassword) < 40 {
		t.Errorf("generated admin password %q (generated %v), want a long random one", c.AdminPassword, c.AdminPasswordGenerated)
	}
	again, _ := FromEnv(env(nil))
	if again.APITokens[0] == c.APITokens[0] || again.AdminPassword == c.AdminPassword {
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
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.APITokens, []string{"one", "two", "three"}) || c.APITokenGenerated {
		t.Errorf("tokens = %q (generated %v)", c.APITokens, c.APITokenGenerated)
	}
	if c.DatabaseURL != "postgres://u:p@db:5432/cmpay" || c.Addr != "127.0.0.1:9000" || c.AdminUser != "support" ||
		c.AdminPassword != "secret" || c.AdminPasswordGenerated || c.KeyTTL != 90*time.Minute {
		t.Errorf("config = %+v", c)
	}
}

func TestFromEnvRefusesBadDurations(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(env(map[string]string{"IDEMPOTENCY_KEY_TTL": "1 day", "SHUTDOWN_TIMEOUT": "-5s"}))
	if err == nil || !strings.Contains(err.Error(), "IDEMPOTENCY_KEY_TTL") || !strings.Contains(err.Error(), "SHUTDOWN_TIMEOUT") {
		t.Errorf("err = %v, want both variables named", err)
	}
}

func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookRetryMin != 5*time.Second || c.WebhookMaxAge != 72*time.Hour || c.WebhookAllowPrivate {
		t.Errorf("webhook defaults: %s, %s, %v", c.WebhookRetryMin, c.WebhookMaxAge, c.WebhookAllowPrivate)
	}
	c, err = FromEnv(env(map[string]string{"WEBHOOK_RETRY_MIN": "250ms", "WEBHOOK_MAX_AGE": "1h", "WEBHOOK_ALLOW_PRIVATE": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookRetryMin != 250*time.Millisecond || c.WebhookMaxAge != time.Hour || !c.WebhookAllowPrivate {
		t.Errorf("webhook settings: %s, %s, %v", c.WebhookRetryMin, c.WebhookMaxAge, c.WebhookAllowPrivate)
	}
	_, err = FromEnv(env(map[string]string{"WEBHOOK_RETRY_MIN": "soon", "WEBHOOK_ALLOW_PRIVATE": "maybe"}))
	if err == nil || !strings.Contains(err.Error(), "WEBHOOK_RETRY_MIN") || !strings.Contains(err.Error(), "WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("err = %v, want both variables named", err)
	}
}
