// Package payments is CMPay's domain: the idempotent creation of payments,
// the validation and normalisation of what clients send, exact money, and
// the reading and listing of payments and their attempts. The GraphQL API,
// the REST endpoint and the admin UI all go through it.
package payments

import (
	"database/sql"
	"time"

	"gorm.io/gorm"
)

// DefaultKeyTTL is how long an idempotency key is remembered by default.
const DefaultKeyTTL = 24 * time.Hour

// Config tunes a Service. The zero value is usable.
type Config struct {
	// KeyTTL is how long a key is remembered; after it, a request with the
	// key is handled as new. Zero means DefaultKeyTTL.
	KeyTTL time.Duration
	// Now is the clock; tests inject one. Nil means time.Now.
	Now func() time.Time
	// OnAttempt, if set, is told of every recorded attempt after its
	// transaction commits (metrics hook in here).
	OnAttempt func(outcome Outcome, transport string)
}

// Service creates and reads payments in one database.
type Service struct {
	db *gorm.DB
	// postgres says which SQL dialect db speaks. On PostgreSQL, sqlDB runs
	// the create statements past GORM's statement builder (the batched
	// ones on its pgx connections); when it is nil, create uses the
	// portable path.
	postgres bool
	sqlDB    *sql.DB
	// creates gathers PostgreSQL creates into statements (batch.go).
	creates   batcher[*createJob]
	keyTTL    time.Duration
	clock     func() time.Time
	onAttempt func(Outcome, string)
}

// NewService returns a Service over db, whose schema must be migrated.
func NewService(db *gorm.DB, cfg Config) *Service {
	s := &Service{db: db, keyTTL: cfg.KeyTTL, clock: cfg.Now, onAttempt: cfg.OnAttempt}
	s.postgres = db.Dialector.Name() == "postgres"
	if sqlDB, err := db.DB(); err == nil {
		s.sqlDB = sqlDB
	}
	s.creates = batcher[*createJob]{exec: s.execCreates, order: byClientAndKey, stallAfter: defaultStallAfter}
	if s.keyTTL <= 0 {
		s.keyTTL = DefaultKeyTTL
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.onAttempt == nil {
		s.onAttempt = func(Outcome, string) {}
	}
	return s
}

// now is the current time as stored: UTC, truncated to the microsecond
// PostgreSQL keeps, so that what a create returns equals what a replay reads.
func (s *Service) now() time.Time {
	return s.clock().UTC().Truncate(time.Microsecond)
}
