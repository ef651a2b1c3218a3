package apitoken

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// store is the seam between a Store and a database: what it keeps of
// tokens. Both dialects run every statement as written (sql/common.sql),
// so one implementation (sqlStore) serves both, over the runner sqlq.Pick
// builds for the dialect. One test suite runs it on both (store_test.go).
type store interface {
	// create stores a new token and runs audit in the same transaction.
	create(ctx context.Context, row models.APIToken, audit Audit) error
	// revoke stamps the token id revoked at at unless it is already, and
	// runs audit in the same transaction, told whether it changed
	// nothing. It returns the token as it is then; ok is false when no
	// token has that id (audit is not run).
	revoke(ctx context.Context, id string, at time.Time, audit Audit) (row models.APIToken, ok bool, err error)
	// tokens lists every token, revoked ones too, oldest first.
	tokens(ctx context.Context) ([]models.APIToken, error)
	// byHash reads the token whose secret has the SHA-256 hash; ok is
	// false when there is none.
	byHash(ctx context.Context, hash string) (row models.APIToken, ok bool, err error)
	// touch records the token id's use at at unless one was recorded
	// after stale, and says whether it did.
	touch(ctx context.Context, id string, at, stale time.Time) (bool, error)
}

// newStore is the store for db's dialect.
func newStore(db *gorm.DB) (store, error) {
	return sqlq.Pick(db,
		func(pg *sqlq.PG) store { return sqlStore{db: pg} },
		func(lite *sqlq.Lite) store { return sqlStore{db: lite} })
}

//go:embed sql/common.sql
var sqlFiles embed.FS

// statements are the package's SQL, which both dialects run as written.
var statements = sqlq.MustLoad(sqlFiles, "sql/common.sql")

// sqlStore runs the statements on db, either dialect's.
type sqlStore struct {
	db sqlq.DB
}

func (st sqlStore) create(ctx context.Context, row models.APIToken, audit Audit) error {
	return st.db.Tx(ctx, func(tx sqlq.Runner) error {
		_, err := tx.Exec(ctx, statements.SQL("insert_token"), row.ID, row.Name, row.ClientID, row.Scopes, row.TokenHash, row.CreatedAt)
		if err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		return audit.write(ctx, tx, tokenOf(row), false)
	})
}

func (st sqlStore) revoke(ctx context.Context, id string, at time.Time, audit Audit) (models.APIToken, bool, error) {
	var row models.APIToken
	var found bool
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		changed, err := tx.Exec(ctx, statements.SQL("revoke_token"), id, at)
		if err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		row, found, err = readToken(ctx, tx, statements.SQL("token"), id)
		if err != nil || !found {
			return err
		}
		return audit.write(ctx, tx, tokenOf(row), changed == 0)
	})
	return row, found, err
}

func (st sqlStore) tokens(ctx context.Context) ([]models.APIToken, error) {
	rows, err := sqlq.Collect(ctx, st.db, statements.SQL("tokens"), nil, scanToken)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return rows, nil
}

func (st sqlStore) byHash(ctx context.Context, hash string) (models.APIToken, bool, error) {
	return readToken(ctx, st.db, statements.SQL("token_by_hash"), hash)
}

func (st sqlStore) touch(ctx context.Context, id string, at, stale time.Time) (bool, error) {
	n, err := st.db.Exec(ctx, statements.SQL("touch_token"), id, at, stale)
	if err != nil {
		return false, fmt.Errorf("record token use: %w", err)
	}
	return n == 1, nil
}

// readToken runs query, a read of one token by key, on r.
func readToken(ctx context.Context, r sqlq.Runner, query string, key string) (models.APIToken, bool, error) {
	row, err := scanToken(r.QueryRow(ctx, query, key))
	if errors.Is(err, sqlq.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("read token: %w", err)
	}
	return row, true, nil
}

// scanToken reads a row of the statements that read tokens.
func scanToken(r sqlq.Row) (models.APIToken, error) {
	var t models.APIToken
	err := r.Scan(&t.ID, &t.Name, &t.ClientID, &t.Scopes, &t.TokenHash, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}
