-- What CMPay learns from its processor's events about a payment or refund
-- it had settled (learned.go), which both dialects run as written.

-- name: settle_elsewhere
-- An AUTHORIZED payment $1 with nothing pending that its processor
-- captured ($2 'CAPTURED', $3 the amount captured) or canceled ($2
-- 'CANCELED') without CMPay: the authorization expired uncaptured, or it
-- was captured in the processor's dashboard; $4 now. Nothing when it is no
-- longer so (a capture or cancel of CMPay's started, or an earlier event
-- came first). Returns the payment.
UPDATE payments SET status = CAST($2 AS TEXT),
       captured_minor = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN $3 ELSE captured_minor END,
       captured_at = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN $4 ELSE captured_at END,
       canceled_at = CASE WHEN CAST($2 AS TEXT) = 'CANCELED' THEN $4 ELSE canceled_at END
WHERE id = $1 AND status = 'AUTHORIZED' AND pending_operation IS NULL
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: refund_named
-- The refund of payment $1 an event names: the one the processor knows as
-- $2, else the one whose id the processor keeps in its metadata, $3. Its
-- id, status, amount and reference.
SELECT id, status, amount_minor, processor_reference FROM refunds
WHERE payment_id = $1 AND (processor_reference = $2 OR id = $3)
ORDER BY CASE WHEN processor_reference = $2 THEN 0 ELSE 1 END LIMIT 1

-- name: refund_operation
-- The processor operation of refund $1: its id and the key it carried.
SELECT id, key FROM processor_operations WHERE refund_id = $1 ORDER BY created_at LIMIT 1

-- name: fail_succeeded_refund
-- Fails refund $1, which had SUCCEEDED, with the processor's code $2: the
-- payer's bank returned it, as CMPay learned at $3. Nothing when it is no
-- longer SUCCEEDED (an earlier event, or another instance, came first).
UPDATE refunds SET status = 'FAILED', failure_code = $2, returned_at = $3 WHERE id = $1 AND status = 'SUCCEEDED'

-- name: unrefund
-- Takes a returned refund's $2 minor units off payment $1's refunded
-- amount: CAPTURED again when nothing is left refunded, else
-- PARTIALLY_REFUNDED. Returns the payment; no row if it had not counted
-- that much refunded.
UPDATE payments SET refunded_minor = refunded_minor - $2,
       status = CASE WHEN refunded_minor = $2 THEN 'CAPTURED' ELSE 'PARTIALLY_REFUNDED' END
WHERE id = $1 AND status IN ('PARTIALLY_REFUNDED', 'REFUNDED') AND refunded_minor >= $2
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
