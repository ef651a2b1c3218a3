-- The staff audit log is append-only whoever writes to the database: an
-- UPDATE, DELETE or TRUNCATE of it fails.
CREATE OR REPLACE FUNCTION staff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
END $$;

CREATE OR REPLACE TRIGGER staff_audit_append_only BEFORE UPDATE OR DELETE ON staff_audit
FOR EACH ROW EXECUTE FUNCTION staff_audit_append_only();

CREATE OR REPLACE TRIGGER staff_audit_no_truncate BEFORE TRUNCATE ON staff_audit
FOR EACH STATEMENT EXECUTE FUNCTION staff_audit_append_only();

-- The audit page reads the admin's payment actions (all, and one staff
-- member's), a sliver of all attempts, through partial indexes.
CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin ON idempotency_attempts (at, id) WHERE transport = 'admin';
CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin_actor ON idempotency_attempts (actor, at, id) WHERE transport = 'admin';
