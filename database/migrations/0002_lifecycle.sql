-- The payment lifecycle (v2): payments stored before it were captured when
-- they were created, and an attempt names the key it was made with (before
-- the lifecycle, always its payment's).
UPDATE payments SET captured_minor = amount_minor, captured_at = created_at
WHERE status = 'CAPTURED' AND captured_at IS NULL;

UPDATE idempotency_attempts SET idempotency_key =
	(SELECT p.idempotency_key FROM payments p WHERE p.id = idempotency_attempts.payment_id)
WHERE idempotency_key = '';
