-- Statements of package staff that PostgreSQL and SQLite run as written.

-- name: account
-- The account with the username $1 (stored normalised: trimmed, lower-case).
SELECT id, username, role, password_hash, must_change_password, disabled, created_at, last_sign_in_at
FROM staff_accounts WHERE username = $1

-- name: accounts
-- Every account, by username: the staff page and `cmpay staff list`.
SELECT id, username, role, password_hash, must_change_password, disabled, created_at, last_sign_in_at
FROM staff_accounts ORDER BY username

-- name: add_account
-- Creates an account unless its username is taken: no error, no row. Taken,
-- the statement leaves a PostgreSQL transaction usable, where a unique
-- violation would abort it; and of several instances bootstrapping an
-- empty database at once, exactly one creates the admin.
INSERT INTO staff_accounts (username, role, password_hash, must_change_password, created_at, updated_at, password_changed_at)
VALUES ($1, $2, $3, $4, $5, $5, $5)
ON CONFLICT (username) DO NOTHING

-- name: set_password
-- Sets the account $1's password hash to $2 at $3, whatever it was (the
-- bootstrap's recovery), not to be changed at the next sign-in.
UPDATE staff_accounts
SET password_hash = $2, must_change_password = false, password_changed_at = $3, updated_at = $3
WHERE id = $1

-- name: change_password
-- Replaces the account $1's password hash $2 with $3 at $4, only if it is
-- still $2: of two changes made at once with the same current password,
-- one succeeds.
UPDATE staff_accounts
SET password_hash = $3, must_change_password = false, password_changed_at = $4, updated_at = $4
WHERE id = $1 AND password_hash = $2

-- name: rehash_password
-- Rewrites the account $1's hash $2 as $3, the same password hashed with
-- today's parameters, unless the password changed meanwhile. Not a change
-- of password: nothing else is stamped.
UPDATE staff_accounts SET password_hash = $3 WHERE id = $1 AND password_hash = $2

-- name: set_role
-- Gives the account $1 the role $2, at $3.
UPDATE staff_accounts SET role = $2, updated_at = $3 WHERE id = $1

-- name: disable_account
-- Disables the account $1 at $2. Its sessions are deleted in the same
-- transaction (end_account_sessions).
UPDATE staff_accounts SET disabled = true, disabled_at = $2, updated_at = $2 WHERE id = $1

-- name: mark_sign_in
-- Stamps the account $1's sign-in at $2, in the sign-in's transaction, only
-- if it is not disabled: the row lock makes a sign-in and a disable of the
-- same account take turns, so that the disable either sees the new session
-- (and deletes it) or the sign-in sees the account disabled (and rolls its
-- session back).
UPDATE staff_accounts SET last_sign_in_at = $2 WHERE id = $1 AND NOT disabled

-- name: start_session
-- Stores a session: the SHA-256 $1 of its token, its account $2, started
-- (and last used) at $3, ending at the latest at $4, signed in from $5.
INSERT INTO staff_sessions (id, account_id, created_at, last_used_at, expires_at, address)
VALUES ($1, $2, $3, $3, $4, $5)

-- name: delete_ended_sessions
-- Deletes the sessions past their maximum age at $1 or unused since $2
-- (twice the idle timeout ago): done at each sign-in, so the table holds
-- few that have ended.
DELETE FROM staff_sessions WHERE expires_at <= $1 OR last_used_at <= $2

-- name: session
-- The session $1 with its account as it is now: one read by primary key
-- per admin request. Whether it is still live is the caller's to judge.
SELECT s.account_id, s.created_at, s.last_used_at, s.expires_at,
	a.username, a.role, a.must_change_password, a.disabled, a.created_at
FROM staff_sessions s JOIN staff_accounts a ON a.id = s.account_id
WHERE s.id = $1

-- name: touch_session
-- Records that the session $1 was used at $2 unless a use after $3 (a
-- minute before it) was recorded: of several servers using the session at
-- once one writes, and a write that lands late never moves it back.
UPDATE staff_sessions SET last_used_at = $2 WHERE id = $1 AND last_used_at <= $3

-- name: end_session
-- Ends the session $1 (signed out).
DELETE FROM staff_sessions WHERE id = $1

-- name: end_account_sessions
-- Ends the sessions of the account $1 but the session $2 ('' for none):
-- after a disable or a password change.
DELETE FROM staff_sessions WHERE account_id = $1 AND id <> $2

-- name: insert_audit_entry
-- Appends one line to the audit log, in the transaction of the change it
-- records (that of another package too: a webhook delivery resent, a token
-- created), so that both commit or neither does.
INSERT INTO staff_audit (at, actor, address, action, target, outcome, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7)

-- name: audit_entries
-- The audit table's entries, through idx_staff_audit_at. Each of the audit
-- page's reads reads one side of the log newest first, $4 entries at
-- most, from $1 (inclusive) to the position ($2, $3) (exclusive) in
-- (at, id) order, where the page's time range and cursor end: the caller
-- makes a bound the widest when there is none, so that one statement
-- serves every page. The row comparison is a range of the (…, at, id)
-- index on both databases.
SELECT at, id, actor, address, action, target, outcome, detail
FROM staff_audit
WHERE at >= $1 AND (at, id) < ($2, $3)
ORDER BY at DESC, id DESC LIMIT $4

-- name: audit_entries_by_actor
-- The entries of the staff member $5 (and of the action $6 unless it is
-- empty), through idx_staff_audit_actor_at.
SELECT at, id, actor, address, action, target, outcome, detail
FROM staff_audit
WHERE actor = $5 AND ($6 = '' OR action = $6) AND at >= $1 AND (at, id) < ($2, $3)
ORDER BY at DESC, id DESC LIMIT $4

-- name: audit_entries_by_action
-- The entries of the action $5, through idx_staff_audit_action_at. On
-- PostgreSQL, planned for its arguments every time: for a common action,
-- reading idx_staff_audit_at is as good, and a plan cached for one would
-- scan the whole log for a rare one.
SELECT at, id, actor, address, action, target, outcome, detail
FROM staff_audit
WHERE action = $5 AND at >= $1 AND (at, id) < ($2, $3)
ORDER BY at DESC, id DESC LIMIT $4

-- name: admin_attempts
-- The captures, cancels and refunds made in the admin (of the operation $5
-- unless it is empty): the payments engine's attempts with transport
-- 'admin', written exactly as the partial index's predicate
-- (idx_idempotency_attempts_admin, made by the migration 0006_staff_audit),
-- so that the read is a backward range of it. No join to payments: the
-- planner might hash-join every payment before it limits; currencies are
-- read for the page. On
-- PostgreSQL, planned for its arguments every time (as is
-- admin_attempts_by_actor): a cached generic plan scans
-- idx_idempotency_attempts_at, every attempt, instead.
SELECT at, id, actor, actor_address, operation, payment_id, outcome, refusal, COALESCE(params, '')
FROM idempotency_attempts
WHERE transport = 'admin' AND ($5 = '' OR operation = $5) AND at >= $1 AND (at, id) < ($2, $3)
ORDER BY at DESC, id DESC LIMIT $4

-- name: admin_attempts_by_actor
-- admin_attempts of the staff member $6, through
-- idx_idempotency_attempts_admin_actor.
SELECT at, id, actor, actor_address, operation, payment_id, outcome, refusal, COALESCE(params, '')
FROM idempotency_attempts
WHERE transport = 'admin' AND actor = $6 AND ($5 = '' OR operation = $5) AND at >= $1 AND (at, id) < ($2, $3)
ORDER BY at DESC, id DESC LIMIT $4
