-- Staff actions recorded as payment attempts (transport 'admin': captures,
-- cancels and refunds made from the admin) are part of the audit log, and
-- append-only like staff_audit: an UPDATE or DELETE of one fails. API
-- clients' attempts are not touched. (SQLite has no TRUNCATE; a DELETE
-- without WHERE fires the DELETE trigger.)
CREATE TRIGGER IF NOT EXISTS admin_attempts_no_update BEFORE UPDATE ON idempotency_attempts
WHEN OLD.transport = 'admin'
BEGIN SELECT RAISE(ABORT, 'staff actions in the audit log are append-only: UPDATE refused'); END;

CREATE TRIGGER IF NOT EXISTS admin_attempts_no_delete BEFORE DELETE ON idempotency_attempts
WHEN OLD.transport = 'admin'
BEGIN SELECT RAISE(ABORT, 'staff actions in the audit log are append-only: DELETE refused'); END;
