-- The staff audit log is append-only whoever writes to the database: an
-- UPDATE or DELETE of it fails (SQLite has no TRUNCATE; a DELETE without
-- WHERE fires the DELETE trigger).
CREATE TRIGGER IF NOT EXISTS staff_audit_no_update BEFORE UPDATE ON staff_audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE refused'); END;

CREATE TRIGGER IF NOT EXISTS staff_audit_no_delete BEFORE DELETE ON staff_audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE refused'); END;

-- The audit page reads the admin's payment actions (all, and one staff
-- member's), a sliver of all attempts, through partial indexes.
CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin ON idempotency_attempts (at, id) WHERE transport = 'admin';
CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin_actor ON idempotency_attempts (actor, at, id) WHERE transport = 'admin';
