package httpapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/ncruces/go-sqlite3"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// listReads counts, on either dialect, the reads of payments' lists
// (payments/sql/by_payment.sql's statements and the next-action read) as
// the database receives them: what a stream or a page costs per list.
type listReads struct {
	mu     sync.Mutex
	counts map[string]int
}

// listKinds names each list read by a piece of its statement's text.
var listKinds = []struct{ kind, text string }{
	{"attempts", "FROM idempotency_attempts WHERE payment_id"},
	{"refunds", "FROM refunds WHERE payment_id"},
	{"processorCalls", "FROM processor_calls WHERE payment_id"},
	{"async", "next_action_type, pix_code"},
}

func (c *listReads) saw(sql string) {
	for _, k := range listKinds {
		if strings.Contains(sql, k.text) {
			c.mu.Lock()
			c.counts[k.kind]++
			c.mu.Unlock()
		}
	}
}

// take returns the counts since the last take, and starts again.
func (c *listReads) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// TraceQueryStart counts PostgreSQL's statements (pgx.QueryTracer).
func (c *listReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.saw(data.SQL)
	return ctx
}

func (*listReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countedDB is a fresh database of the dialect whose list reads are
// counted. PostgreSQL: a pool with the counter as its tracer. SQLite: the
// pool's one connection (database.Options: one on SQLite) traced by
// SQLite itself, each statement as it starts running.
func countedDB(t testing.TB, dialect string) (dbtest.DB, *listReads) {
	t.Helper()
	c := &listReads{counts: map[string]int{}}
	db := dbtest.Open(t, dialect)
	if dialect == "postgres" {
		traced, err := database.Open(db.URL, database.Options{Tracer: c})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = database.Close(traced) })
		return dbtest.DB{Gorm: traced, Dialect: db.Dialect, URL: db.URL}, c
	}
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	if max := sqlDB.Stats().MaxOpenConnections; max != 1 {
		t.Fatalf("the SQLite pool holds up to %d connections; tracing one counts only its statements", max)
	}
	conn, err := sqlDB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		raw, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			t.Fatalf("the SQLite driver's connection is a %T", dc)
		}
		return raw.Raw().Trace(sqlite3.TRACE_STMT, func(_ sqlite3.TraceEvent, _, sql any) error {
			if s, ok := sql.(string); ok {
				c.saw(s)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, c
}
