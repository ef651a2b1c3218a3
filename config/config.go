// Package config reads CMPay's configuration from the environment.
package config

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/internal/secrets"
)

// Config is what the server is told from outside, but for the processor's
// settings: processor.ConfigFromEnv reads those, since their checks and
// defaults are the processor's and configuration may depend on no domain
// package. For the same reason a value left unset stays zero (nil for
// Introspection) and the package that uses it applies its own default
// (database.DefaultURL, payments.DefaultKeyTTL and DefaultSweepInterval,
// staff.DefaultIdleTimeout, webhooks.DefaultRetryMin and DefaultMaxAge,
// httpapi.DefaultMaxBodyBytes, graph.DefaultOptions…). Config itself
// defaults only what no package owns: the listen address, the first
// admin's name and the shutdown timeout.
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
	// SweepInterval is how often expired keys, old events and old
	// processor events are swept (SWEEP_INTERVAL).
	SweepInterval time.Duration
	// CORSOrigins may call the API from browsers (CORS_ORIGINS).
	CORSOrigins []string
	// TrustedProxies are the networks of the reverse proxies in front of
	// the server (TRUSTED_PROXIES): from them, and only from them, the
	// client address comes from X-Forwarded-For and HTTPS from
	// X-Forwarded-Proto.
	TrustedProxies []netip.Prefix
	// MaxBodyBytes caps request bodies (MAX_BODY_BYTES); zero: httpapi's
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Introspection allows GraphQL schema queries (GRAPHQL_INTROSPECTION);
	// nil: not set.
	Introspection *bool
	// MaxDepth and MaxComplexity limit GraphQL operations
	// (GRAPHQL_MAX_DEPTH, GRAPHQL_MAX_COMPLEXITY); zero: graph's
	// DefaultOptions.
	MaxDepth      int
	MaxComplexity int

	// ShutdownTimeout bounds how long in-flight requests may take to finish
	// after SIGTERM or SIGINT (SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration

	// WebhookRetryMin is the first wait before a failed webhook delivery is
	// retried (WEBHOOK_RETRY_MIN); WebhookMaxAge how long after its event a
	// delivery is retried before it is marked failed (WEBHOOK_MAX_AGE).
	WebhookRetryMin time.Duration
	WebhookMaxAge   time.Duration
	// WebhookFailedKeep is how long after its last attempt a FAILED
	// delivery is kept, with the body it sent, so that it can still be
	// resent (WEBHOOK_FAILED_KEEP); zero: events.DefaultFailedKeep, a week.
	WebhookFailedKeep time.Duration
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

// DefaultShutdownTimeout is how long in-flight requests may take to
// finish after SIGTERM or SIGINT when SHUTDOWN_TIMEOUT is not set: within
// the 30 s a container orchestrator usually waits before it kills.
const DefaultShutdownTimeout = 20 * time.Second

// FromEnv reads the configuration through getenv (os.Getenv in main, a map
// in tests). Every problem is reported, not just the first.
func FromEnv(getenv func(string) string) (Config, error) {
	r := &reader{getenv: getenv}
	c := Config{
		DatabaseURL:     getenv("DATABASE_URL"),
		ReplicaURL:      strings.TrimSpace(getenv("DATABASE_REPLICA_URL")),
		Addr:            cmp.Or(getenv("ADDR"), ":8080"),
		DebugAddr:       getenv("DEBUG_ADDR"),
		AdminUser:       cmp.Or(getenv("ADMIN_USER"), "admin"),
		AdminPassword:   getenv("ADMIN_PASSWORD"),
		ShutdownTimeout: DefaultShutdownTimeout,
		CORSOrigins:     list(getenv("CORS_ORIGINS")),
		APITokens:       list(getenv("API_TOKENS")),
	}
	if c.ReplicaURL != "" && !(isPostgres(c.ReplicaURL) && isPostgres(c.DatabaseURL)) {
		r.problem("DATABASE_REPLICA_URL: want a postgres://… URL, beside a postgres://… DATABASE_URL (a streaming replica is PostgreSQL's)")
	}
	if proxies, err := clientaddr.ParsePrefixes(list(getenv("TRUSTED_PROXIES"))); err != nil {
		r.problem(fmt.Sprintf("TRUSTED_PROXIES: %v", err))
	} else {
		c.TrustedProxies = proxies
	}
	r.duration("IDEMPOTENCY_KEY_TTL", &c.KeyTTL)
	r.duration("SWEEP_INTERVAL", &c.SweepInterval)
	r.duration("SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	r.duration("ADMIN_SESSION_IDLE", &c.AdminSessionIdle)
	r.duration("ADMIN_REQUEST_TIMEOUT", &c.AdminRequestTimeout)
	positive(r, "MAX_BODY_BYTES", &c.MaxBodyBytes)
	readGraphQL(r, &c)
	readWebhooks(r, &c)
	if len(c.APITokens) == 0 {
		c.APITokens = []string{"cmpay_" + secrets.Random()}
		c.APITokenGenerated = true
	}
	if len(r.problems) > 0 {
		return Config{}, fmt.Errorf("configuration: %s", strings.Join(r.problems, "; "))
	}
	return c, nil
}

// readGraphQL reads the GraphQL API's limits and its subscriptions'.
func readGraphQL(r *reader, c *Config) {
	r.boolean("GRAPHQL_INTROSPECTION", &c.Introspection)
	positive(r, "GRAPHQL_MAX_DEPTH", &c.MaxDepth)
	positive(r, "GRAPHQL_MAX_COMPLEXITY", &c.MaxComplexity)
	positive(r, "SUBSCRIPTIONS_PER_SOCKET", &c.SubscriptionsPerSocket)
	positive(r, "SUBSCRIPTIONS_PER_TOKEN", &c.SubscriptionsPerToken)
	positive(r, "SUBSCRIPTIONS_PER_INSTANCE", &c.SubscriptionsPerInstance)
	positive(r, "SUBSCRIPTION_REPLAY_RATE", &c.SubscriptionReplayRate)
}

// readWebhooks reads the webhook dispatcher's settings and the keys that
// seal its secrets.
func readWebhooks(r *reader, c *Config) {
	r.duration("WEBHOOK_RETRY_MIN", &c.WebhookRetryMin)
	r.duration("WEBHOOK_MAX_AGE", &c.WebhookMaxAge)
	r.duration("WEBHOOK_FAILED_KEEP", &c.WebhookFailedKeep)
	r.duration("WEBHOOK_ATTEMPT_TIMEOUT", &c.WebhookAttemptTimeout)
	positive(r, "WEBHOOK_ENDPOINTS_PER_CLIENT", &c.WebhookEndpointsPerClient)
	var allowPrivate *bool
	r.boolean("WEBHOOK_ALLOW_PRIVATE", &allowPrivate)
	c.WebhookAllowPrivate = allowPrivate != nil && *allowPrivate
	r.secretKey("WEBHOOK_SECRET_KEY", &c.WebhookSecretKey)
	r.secretKey("WEBHOOK_SECRET_KEY_PREVIOUS", &c.WebhookSecretKeyPrevious)
	if len(c.WebhookSecretKeyPrevious) > 0 && len(c.WebhookSecretKey) == 0 {
		r.problem("WEBHOOK_SECRET_KEY_PREVIOUS without WEBHOOK_SECRET_KEY: give the new key beside the old one")
	}
}

// reader reads typed variables and collects what is wrong with them, so
// that one start names every problem. A variable unset or empty leaves its
// field as it was.
type reader struct {
	getenv   func(string) string
	problems []string
}

func (r *reader) problem(p string) { r.problems = append(r.problems, p) }

// duration reads a positive Go duration.
func (r *reader) duration(name string, into *time.Duration) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.problem(fmt.Sprintf("%s=%q: want a positive Go duration such as 24h or 90m", name, v))
		return
	}
	*into = d
}

// positive reads a positive whole number.
func positive[N int | int64](r *reader, name string, into *N) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || int64(N(n)) != n {
		r.problem(fmt.Sprintf("%s=%q: want a positive whole number", name, v))
		return
	}
	*into = N(n)
}

// boolean reads true or false (strconv.ParseBool's spellings).
func (r *reader) boolean(name string, into **bool) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		r.problem(fmt.Sprintf("%s=%q: want true or false", name, v))
		return
	}
	*into = &on
}

// secretKey reads a key of SecretKeySize bytes (decodeKey).
func (r *reader) secretKey(name string, into *[]byte) {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return
	}
	key, ok := decodeKey(v)
	if !ok {
		r.problem(fmt.Sprintf("%s: want %d random bytes as %d hex digits or as base64 "+
			"(openssl rand -base64 %d)", name, SecretKeySize, 2*SecretKeySize, SecretKeySize))
		return
	}
	*into = key
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
