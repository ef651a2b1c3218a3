package staff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/models"
)

func accountFromRow(row models.StaffAccount) Account {
	a := Account{
		ID:                 row.ID,
		Username:           row.Username,
		Role:               Role(row.Role),
		MustChangePassword: row.MustChangePassword,
		Disabled:           row.Disabled,
		CreatedAt:          row.CreatedAt.UTC(),
	}
	if row.LastSignInAt != nil {
		a.LastSignInAt = row.LastSignInAt.UTC()
	}
	return a
}

// Bootstrapped says what Bootstrap did.
type Bootstrapped struct {
	// Created is set when the account did not exist.
	Created bool
	// Generated is the temporary password made up for a new account when
	// no password was given: print it once; it must be changed at first
	// sign-in. Empty otherwise.
	Generated string
}

// Bootstrap makes sure the first admin account exists, at every start:
//
//   - missing: it is created with the role admin, with password if one is
//     given, else with a generated temporary one (returned, to be printed
//     once, and changed at first sign-in);
//   - present, password given and not already its password: its password
//     is set to password (recovery), not to be changed, and its sessions
//     end, as after any password change: whoever signed in with the old
//     one is signed out. Its role and whether it is disabled stay as the
//     admins left them. A start with the password it already has changes
//     nothing, so that restarting with ADMIN_PASSWORD in the environment
//     signs nobody out (once only, when the password's hash was made with
//     older parameters, it is rewritten and the sessions end as above);
//   - present, no password: nothing changes.
//
// Each change is audited as made by "(server start)".
func (s *Store) Bootstrap(ctx context.Context, username, password string) (Bootstrapped, error) {
	username = NormalizeUsername(username)
	if err := checkUsername(username); err != nil {
		return Bootstrapped{}, fmt.Errorf("ADMIN_USER: %w", err)
	}
	var out Bootstrapped
	var hash string
	if password != "" {
		current, err := s.hasPassword(ctx, username, password)
		if err != nil || current {
			return out, err
		}
		if err := s.hash(ctx, func() { hash = hashPassword(password, s.params) }); err != nil {
			return out, err
		}
	}
	err := s.st.tx(ctx, func(q queries) error {
		row, ok, err := q.account(ctx, username)
		if err != nil {
			return err
		}
		now := s.now()
		if ok {
			if password == "" {
				return nil
			}
			if err := q.setPassword(ctx, row.ID, hash, now); err != nil {
				return fmt.Errorf("set the admin password: %w", err)
			}
			ended, err := q.endSessions(ctx, row.ID, "")
			if err != nil {
				return err
			}
			return appendEntry(ctx, q, now, ServerStart, ActPasswordSet, username, OutcomeOK,
				fmt.Sprintf("ADMIN_PASSWORD set this account's password; %d session(s) ended", ended))
		}
		must := password == ""
		if must {
			out.Generated = NewPassword()
			// Hashing inside the transaction holds it ~30 ms, once, on a
			// database that has no staff yet.
			if err := s.hash(ctx, func() { hash = hashPassword(out.Generated, s.params) }); err != nil {
				return err
			}
		}
		// Several instances may start at once on an empty database: the
		// unique index lets one create the account; the others find it
		// made and leave it (and its one printed password) alone.
		created, err := q.addAccount(ctx, models.StaffAccount{
			Username: username, Role: string(Admin), PasswordHash: hash, MustChangePassword: must, CreatedAt: now,
		})
		if err != nil {
			return fmt.Errorf("create the admin account: %w", err)
		}
		if !created {
			out.Generated = ""
			return nil
		}
		out.Created = true
		detail := "role admin, from ADMIN_USER and ADMIN_PASSWORD"
		if must {
			detail = "role admin, from ADMIN_USER, with a generated temporary password"
		}
		return appendEntry(ctx, q, now, ServerStart, ActStaffAdd, username, OutcomeOK, detail)
	})
	if err != nil {
		return Bootstrapped{}, fmt.Errorf("bootstrap admin account: %w", err)
	}
	return out, nil
}

// hasPassword reports whether username's account exists, already has
// password, and is not asked to change it: a start with ADMIN_PASSWORD
// then has nothing to do. A hash made with older parameters counts as not
// having it, so that the start rewrites it.
func (s *Store) hasPassword(ctx context.Context, username, password string) (bool, error) {
	row, ok, err := s.st.account(ctx, username)
	if err != nil || !ok || row.MustChangePassword {
		return false, err
	}
	var good, stale bool
	if err := s.hash(ctx, func() { good, stale = checkPassword(row.PasswordHash, password, s.params) }); err != nil {
		return false, err
	}
	return good && !stale, nil
}

func createAccount(ctx context.Context, q queries, now time.Time, username string, role Role, hash string, mustChange bool) error {
	created, err := q.addAccount(ctx, models.StaffAccount{
		Username: username, Role: string(role), PasswordHash: hash, MustChangePassword: mustChange, CreatedAt: now,
	})
	if err != nil {
		return err
	}
	if !created {
		return invalid(fmt.Sprintf("there is already a staff account %q", username))
	}
	return nil
}

// Add creates a staff account. Without a password, a temporary one is made
// up and returned (to be shown once; it must be changed at first sign-in);
// with one, that password is set (checked against the password rules) and
// not asked to be changed. by is who adds it, for the audit log.
func (s *Store) Add(ctx context.Context, by Actor, username string, role Role, password string) (temporary string, err error) {
	username = NormalizeUsername(username)
	if err := checkUsername(username); err != nil {
		return "", err
	}
	if !role.Valid() {
		return "", invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", role))
	}
	must := password == ""
	if must {
		password = NewPassword()
	} else if err := CheckNewPassword(username, password); err != nil {
		return "", err
	}
	var hash string
	if err := s.hash(ctx, func() { hash = hashPassword(password, s.params) }); err != nil {
		return "", err
	}
	err = s.st.tx(ctx, func(q queries) error {
		now := s.now()
		if err := createAccount(ctx, q, now, username, role, hash, must); err != nil {
			return err
		}
		detail := "role " + string(role) + ", temporary password"
		if !must {
			detail = "role " + string(role) + ", password given"
		}
		return appendEntry(ctx, q, now, by, ActStaffAdd, username, OutcomeOK, detail)
	})
	if err != nil {
		return "", err
	}
	if must {
		return password, nil
	}
	return "", nil
}

// List returns every account, by username.
func (s *Store) List(ctx context.Context) ([]Account, error) {
	rows, err := s.st.accounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Account, len(rows))
	for i, r := range rows {
		out[i] = accountFromRow(r)
	}
	return out, nil
}

// Get returns one account.
func (s *Store) Get(ctx context.Context, username string) (Account, error) {
	row, ok, err := s.st.account(ctx, NormalizeUsername(username))
	if err != nil {
		return Account{}, err
	}
	if !ok {
		return Account{}, ErrNotFound
	}
	return accountFromRow(row), nil
}

// SetRole changes an account's role; it takes effect on the account's next
// request. Nobody changes their own role, so an admin cannot demote the
// last admin by mistake: the one acting stays.
func (s *Store) SetRole(ctx context.Context, by Actor, username string, role Role) error {
	username = NormalizeUsername(username)
	if !role.Valid() {
		return invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", role))
	}
	if username == by.Username {
		return invalid("you cannot change your own role")
	}
	return s.st.tx(ctx, func(q queries) error {
		row, ok, err := q.account(ctx, username)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if Role(row.Role) == role {
			return nil
		}
		now := s.now()
		if err := q.setRole(ctx, row.ID, role, now); err != nil {
			return err
		}
		return appendEntry(ctx, q, now, by, ActStaffRole, username, OutcomeOK, "from "+row.Role+" to "+string(role))
	})
}

// Disable disables an account and ends its sessions, in one transaction:
// its next request, on any instance, finds no session. Nobody disables
// themselves.
func (s *Store) Disable(ctx context.Context, by Actor, username string) error {
	username = NormalizeUsername(username)
	if username == by.Username {
		return invalid("you cannot disable your own account")
	}
	return s.st.tx(ctx, func(q queries) error {
		row, ok, err := q.account(ctx, username)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if row.Disabled {
			return nil
		}
		now := s.now()
		if err := q.disable(ctx, row.ID, now); err != nil {
			return err
		}
		ended, err := q.endSessions(ctx, row.ID, "")
		if err != nil {
			return err
		}
		return appendEntry(ctx, q, now, by, ActStaffDisable, username, OutcomeOK, fmt.Sprintf("%d session(s) ended", ended))
	})
}

// ChangePassword sets a new password for the session's account after
// checking its current one, clears the must-change flag, and ends the
// account's other sessions: whoever else knew the old password is signed
// out. A wrong current password is ErrBadCredentials and is audited.
func (s *Store) ChangePassword(ctx context.Context, sess Session, address, current, next string) error {
	who := Actor{Username: sess.Account.Username, Address: address}
	if err := CheckNewPassword(sess.Account.Username, next); err != nil {
		return err
	}
	if current == next {
		return invalid("the new password must differ from the current one")
	}
	row, ok, err := s.st.account(ctx, sess.Account.Username)
	if err != nil {
		return err
	}
	if !ok || row.Disabled {
		return ErrNoSession
	}
	var good bool
	var hash string
	if err := s.hash(ctx, func() { good, _ = checkPassword(row.PasswordHash, current, s.params) }); err != nil {
		return err
	}
	if !good {
		if err := s.Record(ctx, who, ActPasswordChange, row.Username, OutcomeFailed, "wrong current password"); err != nil {
			return err
		}
		return ErrBadCredentials
	}
	if err := s.hash(ctx, func() { hash = hashPassword(next, s.params) }); err != nil {
		return err
	}
	return s.st.tx(ctx, func(q queries) error {
		now := s.now()
		// The hash read above must still be the account's: two changes at
		// once, the second with the old password, must not both succeed.
		changed, err := q.changePassword(ctx, row.ID, row.PasswordHash, hash, now)
		if err != nil {
			return err
		}
		if !changed {
			return invalid("the password was changed meanwhile; sign in again")
		}
		ended, err := q.endSessions(ctx, row.ID, sess.ID)
		if err != nil {
			return err
		}
		return appendEntry(ctx, q, now, who, ActPasswordChange, row.Username, OutcomeOK,
			fmt.Sprintf("%d other session(s) ended", ended))
	})
}

// Verify checks a username and password without signing in (HTTP Basic on
// /metrics). An unknown username costs as much as a wrong password, and a
// disabled account is refused like both: ErrBadCredentials for all three,
// ErrUnknownUsername (which is one) for the first, so that the caller can
// count such failures under a budget of their own as SignIn's caller does.
func (s *Store) Verify(ctx context.Context, username, password string) (Account, error) {
	acct, why, err := s.verify(ctx, username, password)
	if errors.Is(err, ErrBadCredentials) && why == whyUnknown {
		return Account{}, ErrUnknownUsername
	}
	return acct, err
}

// verify is Verify that also says why it refused, for the audit log, and
// returns the row for a sign-in to update.
func (s *Store) verify(ctx context.Context, username, password string) (Account, string, error) {
	username = NormalizeUsername(username)
	row, ok, err := s.st.account(ctx, username)
	if err != nil {
		return Account{}, "", err
	}
	var good, stale bool
	err = s.hash(ctx, func() {
		if !ok {
			burnHash(password, s.params)
			return
		}
		good, stale = checkPassword(row.PasswordHash, password, s.params)
	})
	if err != nil {
		return Account{}, "", err
	}
	switch {
	case !ok:
		return Account{}, whyUnknown, ErrBadCredentials
	case !good:
		return Account{}, "wrong password", ErrBadCredentials
	case row.Disabled:
		return Account{}, "account disabled", ErrBadCredentials
	}
	if stale {
		// Older parameters: rewrite the hash with today's, while the
		// password is at hand. Failing to is no reason to refuse.
		var hash string
		if s.hash(ctx, func() { hash = hashPassword(password, s.params) }) == nil {
			_ = s.st.rehashPassword(ctx, row.ID, row.PasswordHash, hash)
		}
	}
	return accountFromRow(row), "", nil
}
