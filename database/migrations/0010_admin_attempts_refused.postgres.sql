-- A capture, cancel or refund asked at a processor is recorded APPLIED
-- when it is stored, before the processor answers; if the processor
-- refuses it (or fails the refund), that attempt becomes REFUSED with
-- refusal PROCESSOR_REFUSED, in the transaction that settles it
-- (payments: refuse_attempt). Staff actions stay append-only otherwise:
-- that one change, and no other column, is let through. 0007's function,
-- with the exception.
CREATE OR REPLACE FUNCTION admin_attempts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		IF EXISTS (SELECT 1 FROM idempotency_attempts WHERE transport = 'admin') THEN
			RAISE EXCEPTION 'staff actions in the audit log are append-only: TRUNCATE refused';
		END IF;
		RETURN NULL;
	END IF;
	IF OLD.transport = 'admin' THEN
		-- Every other column as it was: the rows compared whole, whatever
		-- columns later versions add.
		IF TG_OP = 'UPDATE' AND OLD.outcome = 'APPLIED' AND OLD.request_id IS NOT NULL
		   AND NEW.outcome = 'REFUSED' AND NEW.refusal = 'PROCESSOR_REFUSED'
		   AND to_jsonb(NEW) - 'outcome' - 'refusal' = to_jsonb(OLD) - 'outcome' - 'refusal' THEN
			RETURN NEW;
		END IF;
		RAISE EXCEPTION 'staff actions in the audit log are append-only: % refused', TG_OP;
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END $$;
