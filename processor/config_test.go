package processor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigDefaults(t *testing.T) {
	c, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c != DefaultConfig() {
		t.Errorf("defaults: %v", c)
	}
	want := Config{Processor: "sandbox", StripeAPIBase: "https://api.stripe.com", Timeout: 10 * time.Second,
		RecoveryAfter: 30 * time.Second, PollAfter: 5 * time.Minute, StripeSearchLag: time.Minute,
		SandboxMethods: "instant", SandboxPixExpiry: 15 * time.Minute, SandboxBoletoExpiry: 72 * time.Hour}
	if c != want {
		t.Errorf("defaults = %v, want %v", c, want)
	}
}

func TestConfigFromEnv(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{
		"PROCESSOR": "Stripe", "STRIPE_API_KEY": "sk_test_123", "STRIPE_API_BASE": "http://127.0.0.1:12111/",
		"STRIPE_WEBHOOK_SECRET": "whsec_abc", "PROCESSOR_TIMEOUT": "2s", "PROCESSOR_RECOVERY_AFTER": "1m",
		"PROCESSOR_POLL_AFTER": "30s", "SANDBOX_METHODS": "async", "SANDBOX_PIX_EXPIRY": "1m",
		"SANDBOX_BOLETO_EXPIRY": "1h", "STRIPE_SEARCH_LAG": "5m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Processor: "stripe", StripeAPIKey: "sk_test_123", StripeAPIBase: "http://127.0.0.1:12111",
		StripeWebhookSecret: "whsec_abc", Timeout: 2 * time.Second, RecoveryAfter: time.Minute,
		PollAfter: 30 * time.Second, StripeSearchLag: 5 * time.Minute, SandboxMethods: SandboxAsync,
		SandboxPixExpiry: time.Minute, SandboxBoletoExpiry: time.Hour}
	if c != want {
		t.Errorf("got %v, want %v", c, want)
	}
}

// Each bad value is refused with its variable's name, all of them at once.
func TestConfigErrors(t *testing.T) {
	_, err := ConfigFromEnv(env(map[string]string{
		"PROCESSOR": "stripe", "STRIPE_API_BASE": "ftp://x", "STRIPE_WEBHOOK_SECRET": "abc",
		"PROCESSOR_TIMEOUT": "-1s", "PROCESSOR_RECOVERY_AFTER": "soon", "PROCESSOR_POLL_AFTER": "0s",
		"SANDBOX_METHODS": "later", "SANDBOX_PIX_EXPIRY": "1", "SANDBOX_BOLETO_EXPIRY": "x", "STRIPE_SEARCH_LAG": "0s",
	}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, name := range []string{"STRIPE_API_KEY", "STRIPE_API_BASE", "STRIPE_WEBHOOK_SECRET", "PROCESSOR_TIMEOUT",
		"PROCESSOR_RECOVERY_AFTER", "PROCESSOR_POLL_AFTER", "SANDBOX_METHODS", "SANDBOX_PIX_EXPIRY", "SANDBOX_BOLETO_EXPIRY",
		"STRIPE_SEARCH_LAG"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	if _, err := ConfigFromEnv(env(map[string]string{"PROCESSOR": "adyen"})); err == nil || !strings.Contains(err.Error(), "PROCESSOR") {
		t.Errorf("PROCESSOR=adyen: %v", err)
	}
}

// The key and the webhook secret never show, however the config is printed.
func TestConfigRedactsSecrets(t *testing.T) {
	c := DefaultConfig()
	c.StripeAPIKey = "sk_live_SECRET1"
	c.StripeWebhookSecret = "whsec_SECRET2"
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", c, "key", c.StripeAPIKey)
	js, _ := json.Marshal(c)
	for _, out := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), string(js), logged.String()} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("secret shown: %s", out)
		}
		if !strings.Contains(out, redacted) {
			t.Errorf("no redaction mark: %s", out)
		}
	}
	if c.StripeAPIKey.Reveal() != "sk_live_SECRET1" {
		t.Error("Reveal")
	}
}
