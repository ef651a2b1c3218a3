package sqlq_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestLoad(t *testing.T) {
	good := "-- The file's header.\n\n-- name: one\n-- Says one.\nSELECT 1\n\n-- name: two\n-- Says two,\n-- on two lines.\nSELECT 2\n-- a comment inside stays\n;\n"
	s, err := sqlq.Load(fstest.MapFS{"a.sql": {Data: []byte(good)}}, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.SQL("one"); got != "SELECT 1" {
		t.Errorf("one = %q", got)
	}
	if got := s.SQL("two"); got != "SELECT 2\n-- a comment inside stays\n;" {
		t.Errorf("two = %q", got)
	}
	if got := strings.Join(s.Names(), ","); got != "one,two" {
		t.Errorf("names = %s", got)
	}

	for name, text := range map[string]string{
		"no comment":     "-- name: x\nSELECT 1\n",
		"empty":          "-- name: x\n-- nothing\n",
		"before a name":  "SELECT 1\n-- name: x\n-- c\nSELECT 2\n",
		"duplicate name": "-- name: x\n-- c\nSELECT 1\n-- name: x\n-- c\nSELECT 2\n",
	} {
		if _, err := sqlq.Load(fstest.MapFS{"a.sql": {Data: []byte(text)}}, "*.sql"); err == nil {
			t.Errorf("%s: loaded without an error", name)
		}
	}
	if _, err := sqlq.Load(fstest.MapFS{}, "*.sql"); err == nil {
		t.Error("no files: loaded without an error")
	}
}

// TestRunner runs the same statements through each dialect's Runner: on
// the pool and in transactions, committed and rolled back.
func TestRunner(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		type runner interface {
			sqlq.Runner
			Tx(ctx context.Context, f func(sqlq.Runner) error) error
		}
		r, err := sqlq.Pick(db.Gorm, func(p *sqlq.PG) runner { return p }, func(l *sqlq.Lite) runner { return l })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Exec(ctx, `CREATE TABLE sqlq_t (k TEXT PRIMARY KEY, n BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		// $2 appears before $1: each is still its own argument.
		n, err := r.Exec(ctx, `INSERT INTO sqlq_t (n, k) VALUES ($2, $1), ($2 + 1, $1 || 'b')`, "a", int64(7))
		if err != nil || n != 2 {
			t.Fatalf("insert: %d rows, %v", n, err)
		}
		var got int64
		if err := r.QueryRow(ctx, `SELECT n FROM sqlq_t WHERE k = $1`, "ab").Scan(&got); err != nil || got != 8 {
			t.Fatalf("read ab: %d, %v", got, err)
		}
		if err := r.QueryRow(ctx, `SELECT n FROM sqlq_t WHERE k = $1`, "zz").Scan(&got); !errors.Is(err, sqlq.ErrNoRows) {
			t.Fatalf("read a missing row: %v, want ErrNoRows", err)
		}

		boom := errors.New("boom")
		for range 2 { // the second time, the statement is prepared (SQLite)
			err = r.Tx(ctx, func(tx sqlq.Runner) error {
				if _, err := tx.Exec(ctx, `UPDATE sqlq_t SET n = n + $1`, int64(100)); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("rolled back tx: %v", err)
			}
		}
		for range 2 {
			if err := r.Tx(ctx, func(tx sqlq.Runner) error {
				_, err := tx.Exec(ctx, `UPDATE sqlq_t SET n = n + $1`, int64(1))
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := sqlq.Collect(ctx, r, `SELECT k, n FROM sqlq_t ORDER BY k`, nil, func(row sqlq.Row) (string, error) {
			var k string
			var n int64
			err := row.Scan(&k, &n)
			return k + "=" + strings.Repeat("+", int(n-7)), err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rows, " "); got != "a=++ ab=+++" {
			t.Errorf("rows after two committed and two rolled back updates: %s", got)
		}
	})
}
