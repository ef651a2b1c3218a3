// Package config reads CMPay's configuration from the environment.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/clientaddr"
)

// Config is everything the server is told from outside. A zero duration,
// URL or key means "not set": the package that uses it applies its own
// default (database.DefaultURL, payments.DefaultKeyTTL,
// staff.DefaultIdleTimeout, webhooks.DefaultRetryMin and DefaultMaxAge),
// so that configuration depends on no domain package.
type Config struct {
	// DatabaseURL selects the database: postgres://… or sqlite:PATH.
	DatabaseURL string
	// ReplicaURL (DATABASE_REPLICA_URL), optional, names a streaming
	// replica of DatabaseURL for reads that may be a few seconds stale.
	ReplicaURL string
	// Addr is the listen address.
	Addr string
	// DebugAddr, when set, is where Go's profiler and expvar are served
	// (DEBUG_ADDR); they are never on Addr.
	DebugAddr string

	// APITokens are the bearer tokens /graphql and /api accept.
	APITokens []string
	// APITokenGenerated is set when API_TOKENS was unset and the one token
	// was made up at start; it is printed once.
	APITokenGenerated bool

	// AdminUser is the first staff account (role admin), created at start
	// if missing; AdminPassword, when set, is set as its password at every
	// start (recovery). When the account is created without one, the
	// server makes up a temporary password and prints it once.
	AdminUser     string
	AdminPassword string
	// AdminSessionIdle ends a staff session unused for this long
	// (ADMIN_SESSION_IDLE).
	AdminSessionIdle time.Duration
	// AdminRequestTimeout bounds an admin page's, action's or sign-in's
	// work with the database (ADMIN_REQUEST_TIMEOUT); zero: web's
	// DefaultAdminRequestTimeout.
	AdminRequestTimeout time.Duration

	// KeyTTL is how long an idempotency key is remembered.
	KeyTTL time.Duration
	// SweepInterval is how often expired keys are swept.
	SweepInterval time.Duration
	// CORSOrigins may call the API from browsers (CORS_ORIGINS).
	CORSOrigins []string
	// TrustedProxies are the networks of the reverse proxies in front of
	// the server (TRUSTED_PROXIES): from them, and only from them, the
	// client address comes from X-Forwarded-For and HTTPS from
	// X-Forwarded-Proto.
	TrustedProxies []netip.Prefix
	// MaxBodyBytes caps request bodies (MAX_BODY_BYTES).
	MaxBodyBytes int64
	// Introspection allows GraphQL schema queries (GRAPHQL_INTROSPECTION).
	Introspection bool
	// MaxDepth and MaxComplexity limit GraphQL operations
	// (GRAPHQL_MAX_DEPTH, GRAPHQL_MAX_COMPLEXITY).
	MaxDepth      int
	MaxComplexity int

	// ShutdownTimeout bounds how long in-flight requests may take to finish
	// after SIGTERM or SIGINT.
	ShutdownTimeout time.Duration

	// WebhookRetryMin is the first wait before a failed webhook delivery is
	// retried (WEBHOOK_RETRY_MIN); WebhookMaxAge how long after its event a
	// delivery is retried before it is marked failed (WEBHOOK_MAX_AGE).
	WebhookRetryMin time.Duration
	WebhookMaxAge   time.Duration
	// WebhookAttemptTimeout is how long an endpoint has to answer a
	// delivery (WEBHOOK_ATTEMPT_TIMEOUT); zero: webhooks' AttemptTimeout.
	WebhookAttemptTimeout time.Duration
	// WebhookAllowPrivate lets webhook URLs reach loopback, private and
	// link-local addresses (WEBHOOK_ALLOW_PRIVATE): development only.
	WebhookAllowPrivate bool
	// WebhookSecretKey, if set, seals webhook signing secrets at rest
	// (WEBHOOK_SECRET_KEY: 32 bytes, as 64 hex digits or base64);
	// WebhookSecretKeyPrevious opens secrets sealed under the key before
	// it, while a key is rotated (WEBHOOK_SECRET_KEY_PREVIOUS).
	WebhookSecretKey, WebhookSecretKeyPrevious []byte
	// WebhookEndpointsPerClient caps the webhook endpoints one client may
	// have (WEBHOOK_ENDPOINTS_PER_CLIENT); zero: webhooks'
	// DefaultEndpointsPerClient.
	WebhookEndpointsPerClient int

	// SubscriptionsPerSocket, SubscriptionsPerToken and
	// SubscriptionsPerInstance cap the open GraphQL subscriptions
	// (SUBSCRIPTIONS_PER_SOCKET, SUBSCRIPTIONS_PER_TOKEN,
	// SUBSCRIPTIONS_PER_INSTANCE); SubscriptionReplayRate is how many
	// events a second the instance's subscriptions may read back from the
	// outbox in all (SUBSCRIPTION_REPLAY_RATE). Zero: not set, the defaults
	// of graph.SubscriptionLimits and events.Options apply. See
	// docs/operations/subscriptions.md.
	SubscriptionsPerSocket   int
	SubscriptionsPerToken    int
	SubscriptionsPerInstance int
	SubscriptionReplayRate   int
}

// FromEnv reads the configuration through getenv (os.Getenv in main, a map
// in tests). Every problem is reported, not just the first.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:     getenv("DATABASE_URL"),
		ReplicaURL:      strings.TrimSpace(getenv("DATABASE_REPLICA_URL")),
		Addr:            or(getenv("ADDR"), ":8080"),
		DebugAddr:       getenv("DEBUG_ADDR"),
		AdminUser:       or(getenv("ADMIN_USER"), "admin"),
		AdminPassword:   getenv("ADMIN_PASSWORD"),
		SweepInterval:   time.Minute,
		ShutdownTimeout: 20 * time.Second,
		MaxBodyBytes:    1 << 20,
		Introspection:   true,
		MaxDepth:        10,
		MaxComplexity:   6000,
	}
	var problems []string
	duration := func(name string, into *time.Duration) {
		v := getenv(name)
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("%s=%q: want a positive Go duration such as 24h or 90m", name, v))
			return
		}
		*into = d
	}
	positive := func(name string, into func(int64)) {
		v := getenv(name)
		if v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			problems = append(problems, fmt.Sprintf("%s=%q: want a positive whole number", name, v))
			return
		}
		into(n)
	}
	positive("MAX_BODY_BYTES", func(n int64) { c.MaxBodyBytes = n })
	positive("GRAPHQL_MAX_DEPTH", func(n int64) { c.MaxDepth = int(n) })
	positive("GRAPHQL_MAX_COMPLEXITY", func(n int64) { c.MaxComplexity = int(n) })
	positive("SUBSCRIPTIONS_PER_SOCKET", func(n int64) { c.SubscriptionsPerSocket = int(n) })
	positive("SUBSCRIPTIONS_PER_TOKEN", func(n int64) { c.SubscriptionsPerToken = int(n) })
	positive("SUBSCRIPTIONS_PER_INSTANCE", func(n int64) { c.SubscriptionsPerInstance = int(n) })
	positive("SUBSCRIPTION_REPLAY_RATE", func(n int64) { c.SubscriptionReplayRate = int(n) })
	positive("WEBHOOK_ENDPOINTS_PER_CLIENT", func(n int64) { c.WebhookEndpointsPerClient = int(n) })
	if v := getenv("GRAPHQL_INTROSPECTION"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("GRAPHQL_INTROSPECTION=%q: want true or false", v))
		}
		c.Introspection = on
	}
	if c.ReplicaURL != "" && !(isPostgres(c.ReplicaURL) && isPostgres(c.DatabaseURL)) {
		problems = append(problems, "DATABASE_REPLICA_URL: want a postgres://… URL, beside a postgres://… DATABASE_URL (a streaming replica is PostgreSQL's)")
	}
	if v := getenv("WEBHOOK_ALLOW_PRIVATE"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("WEBHOOK_ALLOW_PRIVATE=%q: want true or false", v))
		}
		c.WebhookAllowPrivate = on
	}
	secretKey := func(name string, into *[]byte) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		key, ok := decodeKey(v)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: want %d random bytes as %d hex digits or as base64 "+
				"(openssl rand -base64 %d)", name, SecretKeySize, 2*SecretKeySize, SecretKeySize))
			return
		}
		*into = key
	}
	secretKey("WEBHOOK_SECRET_KEY", &c.WebhookSecretKey)
	secretKey("WEBHOOK_SECRET_KEY_PREVIOUS", &c.WebhookSecretKeyPrevious)
	if len(c.WebhookSecretKeyPrevious) > 0 && len(c.WebhookSecretKey) == 0 {
		problems = append(problems, "WEBHOOK_SECRET_KEY_PREVIOUS without WEBHOOK_SECRET_KEY: give the new key beside the old one")
	}
	duration("WEBHOOK_RETRY_MIN", &c.WebhookRetryMin)
	duration("WEBHOOK_MAX_AGE", &c.WebhookMaxAge)
	duration("WEBHOOK_ATTEMPT_TIMEOUT", &c.WebhookAttemptTimeout)
	c.CORSOrigins = list(getenv("CORS_ORIGINS"))
	if proxies, err := clientaddr.ParsePrefixes(list(getenv("TRUSTED_PROXIES"))); err != nil {
		problems = append(problems, fmt.Sprintf("TRUSTED_PROXIES: %v", err))
	} else {
		c.TrustedProxies = proxies
	}
	duration("IDEMPOTENCY_KEY_TTL", &c.KeyTTL)
	duration("SWEEP_INTERVAL", &c.SweepInterval)
	duration("SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	duration("ADMIN_SESSION_IDLE", &c.AdminSessionIdle)
	duration("ADMIN_REQUEST_TIMEOUT", &c.AdminRequestTimeout)

	c.APITokens = list(getenv("API_TOKENS"))
	if len(c.APITokens) == 0 {
		c.APITokens = []string{"cmpay_" + randomSecret()}
		c.APITokenGenerated = true
	}

	if len(problems) > 0 {
		return Config{}, fmt.Errorf("configuration: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// SecretKeySize is the length in bytes of WEBHOOK_SECRET_KEY and
// WEBHOOK_SECRET_KEY_PREVIOUS, as documented: the key of the AES-256 that
// seals webhook secrets (webhooks.KeySize; internal/app's tests check that
// the two agree). The decoder needs it to tell hex from base64.
const SecretKeySize = 32

// decodeKey reads a secret key of SecretKeySize bytes written as hex or as
// base64 (standard or URL-safe, padded or not).
func decodeKey(v string) ([]byte, bool) {
	if b, err := hex.DecodeString(v); err == nil && len(b) == SecretKeySize {
		return b, true
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == SecretKeySize {
			return b, true
		}
	}
	return nil, false
}

// isPostgres says whether a database URL selects PostgreSQL.
func isPostgres(u string) bool {
	scheme, _, _ := strings.Cut(u, ":")
	scheme = strings.ToLower(scheme)
	return scheme == "postgres" || scheme == "postgresql"
}

// list splits a comma-separated value, dropping blanks.
func list(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func or(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}

// randomSecret returns 32 random bytes, URL-safe base64 encoded.
func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand.Read panics rather than return an error
	return base64.RawURLEncoding.EncodeToString(b)
}
