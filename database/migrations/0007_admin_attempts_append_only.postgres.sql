-- Staff actions recorded as payment attempts (transport 'admin': captures,
-- cancels and refunds made from the admin) are part of the audit log, and
-- append-only like staff_audit: an UPDATE or DELETE of one fails, and so
-- does a TRUNCATE of the table while it holds any. API clients' attempts
-- are not touched.
CREATE OR REPLACE FUNCTION admin_attempts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		IF EXISTS (SELECT 1 FROM idempotency_attempts WHERE transport = 'admin') THEN
			RAISE EXCEPTION 'staff actions in the audit log are append-only: TRUNCATE refused';
		END IF;
		RETURN NULL;
	END IF;
	IF OLD.transport = 'admin' THEN
		RAISE EXCEPTION 'staff actions in the audit log are append-only: % refused', TG_OP;
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER admin_attempts_append_only BEFORE UPDATE OR DELETE ON idempotency_attempts
FOR EACH ROW EXECUTE FUNCTION admin_attempts_append_only();

CREATE OR REPLACE TRIGGER admin_attempts_no_truncate BEFORE TRUNCATE ON idempotency_attempts
FOR EACH STATEMENT EXECUTE FUNCTION admin_attempts_append_only();
