-- A capture, cancel or refund asked at a processor is recorded APPLIED
-- when it is stored, before the processor answers; if the processor
-- refuses it (or fails the refund), that attempt becomes REFUSED with
-- refusal PROCESSOR_REFUSED, in the transaction that settles it
-- (payments: refuse_attempt). Staff actions stay append-only otherwise:
-- 0007's update trigger again, letting that one change through when no
-- other column changes (every column the table has at this version).
DROP TRIGGER IF EXISTS admin_attempts_no_update;

CREATE TRIGGER admin_attempts_no_update BEFORE UPDATE ON idempotency_attempts
WHEN OLD.transport = 'admin' AND NOT (
	OLD.outcome = 'APPLIED' AND OLD.request_id IS NOT NULL AND NEW.outcome = 'REFUSED' AND NEW.refusal = 'PROCESSOR_REFUSED'
	AND NEW.id IS OLD.id AND NEW.payment_id IS OLD.payment_id AND NEW.operation IS OLD.operation AND NEW.at IS OLD.at
	AND NEW.idempotency_key IS OLD.idempotency_key AND NEW.params IS OLD.params AND NEW.held_params IS OLD.held_params
	AND NEW.refund_id IS OLD.refund_id AND NEW.differing_fields IS OLD.differing_fields
	AND NEW.attempted_amount_minor IS OLD.attempted_amount_minor AND NEW.attempted_currency IS OLD.attempted_currency
	AND NEW.attempted_method IS OLD.attempted_method AND NEW.transport IS OLD.transport AND NEW.actor IS OLD.actor
	AND NEW.actor_address IS OLD.actor_address AND NEW.request_id IS OLD.request_id)
BEGIN SELECT RAISE(ABORT, 'staff actions in the audit log are append-only: UPDATE refused'); END;
