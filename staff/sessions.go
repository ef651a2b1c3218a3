package staff

import (
	"context"
	"errors"
	"time"

	"github.com/cmpay/cmpay/internal/secrets"
	"github.com/cmpay/cmpay/models"
)

// Session is a signed-in browser, with its account as it is now.
type Session struct {
	// ID is the stored id: the SHA-256 of the browser's token, never the
	// token itself.
	ID         string
	Account    Account
	CreatedAt  time.Time
	LastUsedAt time.Time
	ExpiresAt  time.Time
}

// Actor is the session's staff member acting from address.
func (s Session) Actor(address string) Actor {
	return Actor{Username: s.Account.Username, Address: address}
}

// SignInRequest is a sign-in as the form sent it.
type SignInRequest struct {
	Username, Password string
	// Address is where it comes from, for the session and the audit log.
	Address string
	// QuietUnknown leaves a failure with a username that is no account's
	// out of the audit log: the address has spent its budget of such
	// failures, which are then counted, not recorded one by one.
	QuietUnknown bool
}

// ErrUnknownUsername is the ErrBadCredentials of a sign-in whose username
// is no account's, with the same words: callers tell the user no more
// than ErrBadCredentials does.
var ErrUnknownUsername error = unknownUsernameError{}

type unknownUsernameError struct{}

func (unknownUsernameError) Error() string { return ErrBadCredentials.Error() }
func (unknownUsernameError) Unwrap() error { return ErrBadCredentials }

// whyUnknown is verify's reason for a username that is no account's.
const whyUnknown = "unknown username"

// unknownUsername is the staff member of a failed sign-in whose username
// is no account's. What was typed is the entry's target, never its staff
// member: nobody can write a name of their choosing (or "(command line)")
// into that column by failing to sign in.
const unknownUsername = "(unknown username)"

// RecordFailedSignIn audits a failed sign-in made otherwise than with the
// form (HTTP Basic), as SignIn audits the form's.
func (s *Store) RecordFailedSignIn(ctx context.Context, username, address, detail string) error {
	return s.recordSignIn(ctx, username, address, OutcomeFailed, detail)
}

// RecordRefusedSignIn audits a sign-in refused (429) without its password
// being checked: the address has spent its failures for that username.
func (s *Store) RecordRefusedSignIn(ctx context.Context, username, address, detail string) error {
	return s.recordSignIn(ctx, username, address, OutcomeRefused, detail)
}

func (s *Store) recordSignIn(ctx context.Context, username, address, outcome, detail string) error {
	typed := NormalizeUsername(username)
	who := Actor{Username: typed, Address: address}
	_, known, err := s.st.account(ctx, typed)
	if err != nil {
		return err
	}
	if !known {
		who.Username = unknownUsername
	}
	return s.Record(ctx, who, ActSignIn, typed, outcome, detail)
}

// SignIn checks a username and password and, when they are right, starts a
// session and returns its token (for the cookie) and the account. The
// session, the account's last sign-in and the audit entry are written in one
// transaction; a failure is audited on its own, with the reason the user is
// not told (unknown username, wrong password, account disabled). It also
// deletes sessions that have ended: past their maximum age, or unused for
// twice the idle timeout by the stored last use. Session itself ends a
// session idle for the timeout; the margin spares one whose latest use is
// not stored yet (its write in flight, or failed), which Session still
// counts on the server that saw it.
func (s *Store) SignIn(ctx context.Context, req SignInRequest) (token string, acct Account, err error) {
	typed := NormalizeUsername(req.Username)
	who := Actor{Username: typed, Address: req.Address}
	acct, why, err := s.verify(ctx, typed, req.Password)
	if errors.Is(err, ErrBadCredentials) {
		if why == whyUnknown {
			if req.QuietUnknown {
				return "", Account{}, ErrUnknownUsername
			}
			who.Username = unknownUsername
			err = ErrUnknownUsername
		}
		if err := s.Record(ctx, who, ActSignIn, typed, OutcomeFailed, why); err != nil {
			return "", Account{}, err
		}
		return "", Account{}, err
	}
	if err != nil {
		return "", Account{}, err
	}
	token = secrets.Random()
	err = s.st.tx(ctx, func(q queries) error {
		now := s.now()
		if err := q.deleteEndedSessions(ctx, now, now.Add(-2*s.idle)); err != nil {
			return err
		}
		if err := q.startSession(ctx, models.StaffSession{ID: secrets.Hash(token), AccountID: acct.ID, CreatedAt: now,
			ExpiresAt: now.Add(s.maxAge), Address: clip(req.Address, 64)}); err != nil {
			return err
		}
		// Disabled between the password check and now? Then no session.
		enabled, err := q.markSignIn(ctx, acct.ID, now)
		if err != nil {
			return err
		}
		if !enabled {
			return ErrBadCredentials
		}
		acct.LastSignInAt = now
		return appendEntry(ctx, q, now, who, ActSignIn, typed, OutcomeOK, "")
	})
	if err != nil {
		return "", Account{}, err
	}
	return token, acct, nil
}

// Session returns the live session a token names, with its account as it
// is now, or ErrNoSession: no such session, signed out, idle longer than
// the idle timeout, older than the maximum age, or its account disabled.
// It is one primary-key read per request. LastUsedAt is rewritten at most
// once a minute (touchEvery), beside the request: a database slow to take
// that write delays and fails no page.
//
// A write that lags or fails extends no session: it records the time of
// a use, never of the write, and only over an older one (touch_session's
// condition), so the stored last use never passes a real one. Nor does it
// end one early on this server: until the write lands, the idle timeout
// counts from the newer of the stored use and the one being written or
// whose write failed (Unwritten), and SignIn's sweep leaves it alone.
// What sees only the stored use (another server; the sweep, once writes
// have failed for twice the idle timeout) may end a session early while
// writes fail: the safe error, an end too early, never too late.
func (s *Store) Session(ctx context.Context, token string) (Session, error) {
	if token == "" {
		return Session{}, ErrNoSession
	}
	id := secrets.Hash(token)
	// Asked before the read: a write landing between the two would
	// otherwise be in neither.
	unwritten, _ := s.touches.Unwritten(id)
	r, ok, err := s.st.session(ctx, id)
	if err != nil {
		return Session{}, err
	}
	if !ok {
		return Session{}, ErrNoSession
	}
	now := s.now()
	last := r.lastUsedAt
	if unwritten.After(last) {
		last = unwritten
	}
	if r.disabled || !now.Before(r.expiresAt) || now.Sub(last) >= s.idle {
		return Session{}, ErrNoSession
	}
	if now.Sub(last) >= touchEvery {
		s.touch(id, now)
		last = now
	}
	return Session{
		ID: id,
		Account: Account{ID: r.accountID, Username: r.username, Role: Role(r.role),
			MustChangePassword: r.mustChangePassword, CreatedAt: r.accountCreatedAt.UTC()},
		CreatedAt:  r.createdAt.UTC(),
		LastUsedAt: last.UTC(),
		ExpiresAt:  r.expiresAt.UTC(),
	}, nil
}

// touch records the session id's use at now in the background, unless a
// write of it is in flight or failed within touchEvery (lastuse.Writer).
// The UPDATE writes only over a use touchEvery older: of several servers
// using the session at once one writes, and a write that lands late never
// moves the last use back.
func (s *Store) touch(id string, now time.Time) {
	s.touches.Start(id, now, func(ctx context.Context) error {
		return s.st.touchSession(ctx, id, now, now.Add(-touchEvery))
	})
}

// SignOut ends a session and audits it, in one transaction.
func (s *Store) SignOut(ctx context.Context, sess Session, address string) error {
	return s.st.tx(ctx, func(q queries) error {
		if err := q.endSession(ctx, sess.ID); err != nil {
			return err
		}
		return appendEntry(ctx, q, s.now(), sess.Actor(address), ActSignOut, sess.Account.Username, OutcomeOK, "")
	})
}
