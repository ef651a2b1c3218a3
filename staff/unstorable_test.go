package staff_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// A username PostgreSQL cannot hold as text (a NUL byte, bytes that are not
// UTF-8) is no account's, on both databases: a sign-in with it is an
// unknown username, a lookup finds nothing, an audit filter with it is bad
// input, and an entry recording it is written with U+FFFD in their place.
func TestUnstorableUsernames(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		mustAdd(t, s, "admin", staff.Admin, "admin-password-1")
		for _, user := range []string{"ad\x00min", "ad\xffmin", "admin\x00"} {
			if _, err := s.Verify(ctx, user, "admin-password-1"); !errors.Is(err, staff.ErrUnknownUsername) {
				t.Errorf("Verify(%q): %v, want ErrUnknownUsername", user, err)
			}
			_, _, err := s.SignIn(ctx, staff.SignInRequest{Username: user, Password: "admin-password-1", Address: "203.0.113.9"})
			if !errors.Is(err, staff.ErrUnknownUsername) {
				t.Errorf("SignIn(%q): %v, want ErrUnknownUsername", user, err)
			}
			if _, err := s.Get(ctx, user); !errors.Is(err, staff.ErrNotFound) {
				t.Errorf("Get(%q): %v, want ErrNotFound", user, err)
			}
			if err := s.Disable(ctx, admin, user); !errors.Is(err, staff.ErrNotFound) {
				t.Errorf("Disable(%q): %v, want ErrNotFound", user, err)
			}
		}
		if _, err := s.Verify(ctx, "nobody", "x"); !errors.Is(err, staff.ErrUnknownUsername) {
			t.Errorf("Verify of an unknown username: %v, want ErrUnknownUsername", err)
		}
		var bad *staff.InputError
		for _, f := range []staff.AuditFilter{{Actor: "ad\x00min"}, {Action: "sign-in\x00"}, {Actor: "\xff"}} {
			if _, err := s.AuditLog(ctx, f, 10, ""); !errors.As(err, &bad) {
				t.Errorf("AuditLog(%+v): %v, want an InputError", f, err)
			}
		}
		got := entries(t, s, staff.AuditFilter{Action: staff.ActSignIn})
		var targets []string
		for _, e := range got {
			targets = append(targets, e.Target)
		}
		if want := "admin\uFFFD|ad\uFFFDmin|ad\uFFFDmin"; strings.Join(targets, "|") != want {
			t.Errorf("audited sign-ins name %q, want %q", strings.Join(targets, "|"), want)
		}
	})
}
