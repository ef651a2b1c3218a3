// Package sqlq runs CMPay's hand-written SQL, one way per dialect: on
// PostgreSQL through pgx (PG), on SQLite through database/sql with each
// statement prepared once (Lite). Statements live in embedded .sql files
// (Load), each with a name and a comment that says what it does. GORM
// declares the tables (package models) and migrates them; it runs none of
// the statements here.
//
// Pick is the one place in CMPay that branches on the dialect: a consumer
// owns the interface of the storage it needs, writes one implementation
// per dialect, and lets Pick choose.
package sqlq

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// Dialect names a database CMPay runs on.
type Dialect string

// The dialects CMPay runs on.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// ErrNoRows is what Row.Scan returns when a query found nothing, on both
// dialects (pgx's own ErrNoRows matches it with errors.Is).
var ErrNoRows = sql.ErrNoRows

// Of says which dialect db speaks.
func Of(db *gorm.DB) (Dialect, error) {
	switch name := db.Dialector.Name(); name {
	case string(Postgres):
		return Postgres, nil
	case string(SQLite):
		return SQLite, nil
	default:
		return "", fmt.Errorf("unsupported database %q", name)
	}
}

// Pick builds the implementation of T for db's dialect with postgres or
// sqlite: the one place that branches on it.
func Pick[T any](db *gorm.DB, postgres func(*PG) T, sqlite func(*Lite) T) (T, error) {
	var zero T
	d, err := Of(db)
	if err != nil {
		return zero, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return zero, fmt.Errorf("sqlq: %w", err)
	}
	if d == Postgres {
		return postgres(NewPG(sqlDB)), nil
	}
	return sqlite(NewLite(sqlDB)), nil
}

// Runner runs statements on a pool, a connection or a transaction.
// Placeholders are $1, $2…, on both dialects.
type Runner interface {
	// Exec runs a statement that returns no rows and says how many rows
	// it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query for at most one row; its Scan returns
	// ErrNoRows when there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query and calls each for every row, in order, until
	// each fails or the rows end. It returns once the rows are closed.
	Query(ctx context.Context, query string, args []any, each func(Row) error) error
}

// Row is one row of a query's answer.
type Row interface {
	Scan(dest ...any) error
}

// Collect runs query on r and returns what scan makes of each row.
func Collect[T any](ctx context.Context, r Runner, query string, args []any, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := r.Query(ctx, query, args, func(row Row) error {
		v, err := scan(row)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
