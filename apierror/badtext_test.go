package apierror_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// What PostgreSQL refuses of a request's values (a NUL byte, bytes that
// are not UTF-8, text that is not of its type) is BAD_USER_INPUT on every
// route, however it is wrapped, never INTERNAL_SERVER_ERROR; other
// database errors stay internal.
func TestValuesTheDatabaseRefusesAreBadInput(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	ctx := context.Background()
	refused := func(query string, args ...any) error {
		t.Helper()
		var out string
		err := db.Gorm.WithContext(ctx).Raw(query, args...).Row().Scan(&out)
		if err == nil {
			t.Fatalf("%s: no error", query)
		}
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	for _, tt := range []struct {
		name string
		err  error
		code string
	}{
		{"NUL", refused("SELECT ?::text", "we_\x00"), apierror.BadUserInput},
		{"not UTF-8", refused("SELECT ?::text", "pay_\xff"), apierror.BadUserInput},
		{"not an integer", refused("SELECT (?::text)::int::text", "12x"), apierror.BadUserInput},
		{"division by zero", refused("SELECT (1/0)::text"), apierror.Internal},
	} {
		if got := apierror.FromDomain(ctx, tt.err); got.Code != tt.code || (tt.code == apierror.BadUserInput) != (got.Status == http.StatusBadRequest) {
			t.Errorf("%s (%v): %+v, want %s", tt.name, tt.err, got, tt.code)
		}
		if got := apierror.FromInternal(ctx, tt.err); got.Code != tt.code {
			t.Errorf("%s through FromInternal: %+v, want %s", tt.name, got, tt.code)
		}
	}
}
