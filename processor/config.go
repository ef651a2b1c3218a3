package processor

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// The processors by name.
const (
	NameSandbox = "sandbox"
	NameStripe  = "stripe"
)

// SandboxMethods says how the sandbox handles Pix and boleto.
type SandboxMethods string

// The sandbox's modes.
const (
	// SandboxInstant pays Pix and boleto at once (the default), so that a
	// client written before Pix and boleto waited for the payer sees them
	// paid without a second step.
	SandboxInstant SandboxMethods = "instant"
	// SandboxAsync leaves them pending until the payer pays (Pay).
	SandboxAsync SandboxMethods = "async"
)

// DefaultStripeAPIBase is Stripe's own API.
const DefaultStripeAPIBase = "https://api.stripe.com"

// DefaultStripeSearchLag is StripeSearchLag's default: Stripe documents
// its search as showing a new PaymentIntent within a minute in normal
// operation (up to an hour in an outage), and the contract bounds a
// create's recovery by that minute. Search matters only when the clocks
// are more than 15 minutes apart (payments: listMargin); the consistent
// list covers the rest.
const DefaultStripeSearchLag = time.Minute

// Secret is a string that never shows: fmt, %#v, JSON and slog print
// "[redacted]" (or "" when empty). Reveal gives the value.
type Secret string

const redacted = "[redacted]"

func (s Secret) show() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Reveal is the secret itself, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// String redacts.
func (s Secret) String() string { return s.show() }

// GoString redacts (%#v).
func (s Secret) GoString() string { return `"` + s.show() + `"` }

// MarshalText redacts (JSON, and anything else that marshals text).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.show()), nil }

// LogValue redacts in slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.show()) }

// Config is the processor's configuration, read by ConfigFromEnv.
type Config struct {
	// Processor is NameSandbox or NameStripe (PROCESSOR).
	Processor string
	// StripeAPIKey is Stripe's secret key (STRIPE_API_KEY), required with
	// PROCESSOR=stripe; never logged or shown.
	StripeAPIKey Secret
	// StripeAPIBase is where Stripe's API is (STRIPE_API_BASE).
	StripeAPIBase string
	// StripeWebhookSecret verifies the events Stripe posts
	// (STRIPE_WEBHOOK_SECRET, whsec_…); empty: the events route is off.
	StripeWebhookSecret Secret
	// Timeout is the most one processor call may take (PROCESSOR_TIMEOUT).
	Timeout time.Duration
	// RecoveryAfter is how long an unknown outcome waits before CMPay
	// resolves it by itself (PROCESSOR_RECOVERY_AFTER).
	RecoveryAfter time.Duration
	// PollAfter is how long a pending payment may go without an event
	// before it is read from the processor (PROCESSOR_POLL_AFTER).
	PollAfter time.Duration
	// StripeSearchLag is how long Stripe's search may take to show a new
	// PaymentIntent (STRIPE_SEARCH_LAG): after a stored error, a create
	// found nowhere is sent again only once this long has passed.
	StripeSearchLag time.Duration
	// SandboxMethods is SandboxInstant or SandboxAsync (SANDBOX_METHODS).
	SandboxMethods SandboxMethods
	// SandboxPixExpiry and SandboxBoletoExpiry are how long a sandbox Pix
	// or boleto stays payable (SANDBOX_PIX_EXPIRY, SANDBOX_BOLETO_EXPIRY).
	SandboxPixExpiry    time.Duration
	SandboxBoletoExpiry time.Duration
}

// DefaultConfig is the configuration with nothing set: the sandbox.
func DefaultConfig() Config {
	return Config{
		Processor:           NameSandbox,
		StripeAPIBase:       DefaultStripeAPIBase,
		Timeout:             10 * time.Second,
		RecoveryAfter:       30 * time.Second,
		PollAfter:           5 * time.Minute,
		StripeSearchLag:     DefaultStripeSearchLag,
		SandboxMethods:      SandboxInstant,
		SandboxPixExpiry:    15 * time.Minute,
		SandboxBoletoExpiry: 72 * time.Hour,
	}
}

// String shows the configuration with its secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("processor=%s stripe_api_key=%q stripe_api_base=%s stripe_webhook_secret=%q "+
		"timeout=%s recovery_after=%s poll_after=%s stripe_search_lag=%s sandbox_methods=%s pix_expiry=%s boleto_expiry=%s",
		c.Processor, c.StripeAPIKey.show(), c.StripeAPIBase, c.StripeWebhookSecret.show(),
		c.Timeout, c.RecoveryAfter, c.PollAfter, c.StripeSearchLag, c.SandboxMethods, c.SandboxPixExpiry, c.SandboxBoletoExpiry)
}

// ConfigFromEnv reads the configuration from getenv (os.Getenv in the
// server), every problem in one error that names the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	var errs []error
	if v := strings.TrimSpace(getenv("PROCESSOR")); v != "" {
		c.Processor = strings.ToLower(v)
	}
	if c.Processor != NameSandbox && c.Processor != NameStripe {
		errs = append(errs, fmt.Errorf("PROCESSOR must be %q or %q, got %q", NameSandbox, NameStripe, c.Processor))
	}
	c.StripeAPIKey = Secret(strings.TrimSpace(getenv("STRIPE_API_KEY")))
	if c.Processor == NameStripe && c.StripeAPIKey == "" {
		errs = append(errs, errors.New("STRIPE_API_KEY is required with PROCESSOR=stripe"))
	}
	if v := strings.TrimSpace(getenv("STRIPE_API_BASE")); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("STRIPE_API_BASE must be an http or https URL such as %s, got %q", DefaultStripeAPIBase, v))
		}
		c.StripeAPIBase = strings.TrimRight(v, "/")
	}
	c.StripeWebhookSecret = Secret(strings.TrimSpace(getenv("STRIPE_WEBHOOK_SECRET")))
	if c.StripeWebhookSecret != "" && !strings.HasPrefix(string(c.StripeWebhookSecret), "whsec_") {
		errs = append(errs, errors.New("STRIPE_WEBHOOK_SECRET must start with whsec_"))
	}
	if v := strings.TrimSpace(getenv("SANDBOX_METHODS")); v != "" {
		c.SandboxMethods = SandboxMethods(strings.ToLower(v))
	}
	if c.SandboxMethods != SandboxInstant && c.SandboxMethods != SandboxAsync {
		errs = append(errs, fmt.Errorf("SANDBOX_METHODS must be %q or %q, got %q", SandboxInstant, SandboxAsync, c.SandboxMethods))
	}
	durations := []struct {
		name string
		dst  *time.Duration
	}{
		{"PROCESSOR_TIMEOUT", &c.Timeout}, {"PROCESSOR_RECOVERY_AFTER", &c.RecoveryAfter},
		{"PROCESSOR_POLL_AFTER", &c.PollAfter}, {"STRIPE_SEARCH_LAG", &c.StripeSearchLag},
		{"SANDBOX_PIX_EXPIRY", &c.SandboxPixExpiry},
		{"SANDBOX_BOLETO_EXPIRY", &c.SandboxBoletoExpiry},
	}
	for _, d := range durations {
		v := strings.TrimSpace(getenv(d.name))
		if v == "" {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration such as 10s or 5m, got %q", d.name, v))
			continue
		}
		*d.dst = parsed
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("processor configuration: %w", err)
	}
	return c, nil
}
