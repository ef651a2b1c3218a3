package apitoken

import (
	"context"
	"errors"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// An id or a name PostgreSQL cannot hold as text (a NUL byte, bytes that
// are not UTF-8) is, on both databases, no token's id (ErrNotFound) and a
// name refused as invalid, never a database error.
func TestUnstorableTokenInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		for _, id := range []string{"tok_\x00", "tok_\xff"} {
			if _, err := s.Revoke(ctx, id, nil); !errors.Is(err, ErrNotFound) {
				t.Errorf("Revoke(%q): %v, want ErrNotFound", id, err)
			}
		}
		for _, v := range []string{"n\x00", "n\xff"} {
			if _, _, err := s.Create(ctx, v, "", auth.DefaultScopes, nil); !errors.Is(err, ErrInvalid) {
				t.Errorf("Create named %q: %v, want ErrInvalid", v, err)
			}
			if _, _, err := s.Create(ctx, "n", v, auth.DefaultScopes, nil); !errors.Is(err, ErrInvalid) {
				t.Errorf("Create for client %q: %v, want ErrInvalid", v, err)
			}
		}
	})
}
