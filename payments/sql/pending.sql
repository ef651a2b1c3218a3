-- Pix and boleto paid later (pending.go), which both dialects run as
-- written.

-- name: async_state
-- The next action, payment and expiry times of payment $1.
SELECT next_action_type, pix_code, boleto_line, hosted_url, next_action_expires_at, paid_at, expired_at
FROM payments WHERE id = $1

-- name: create_operation_of
-- The create operation of payment $1: its id and the key it carried.
SELECT id, key FROM processor_operations WHERE payment_id = $1 AND operation = 'CREATE_PAYMENT'
ORDER BY created_at LIMIT 1

-- name: wake_operations
-- Makes the unsettled processor operations of payment $1 due at $2, for
-- the recovery worker: an event says the processor has news of it.
UPDATE processor_operations SET next_try_at = $2 WHERE payment_id = $1 AND settled_at IS NULL AND next_try_at > $2

-- name: settle_paid
-- A PENDING payment the payer paid: CAPTURED in full at $2. Nothing when
-- it is no longer PENDING (another instance, or an earlier event, came
-- first). Returns the payment.
UPDATE payments SET status = 'CAPTURED', captured_minor = amount_minor, captured_at = $2, paid_at = $2,
       processor_updated_at = $2
WHERE id = $1 AND status = 'PENDING'
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: settle_expired
-- A PENDING payment that expired unpaid: EXPIRED at $2, no money moved.
-- Nothing when it is no longer PENDING. Returns the payment.
UPDATE payments SET status = 'EXPIRED', expired_at = $2, processor_updated_at = $2
WHERE id = $1 AND status = 'PENDING'
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: touch_pending
-- Records that the processor was read at $2 for the PENDING payment $1
-- and still says pending: its next poll is PROCESSOR_POLL_AFTER later.
UPDATE payments SET processor_updated_at = $2 WHERE id = $1 AND status = 'PENDING'

-- name: pending_due
-- Up to $3 PENDING payments to read from the processor now: past their
-- expiry ($1 now) and not heard of since it (so read at once when it
-- passes), or not since $4 (a minute ago: a boleto paid on its last day
-- takes days to clear, and is read once a minute meanwhile, not at every
-- tick); or not heard of since $2 (now less PROCESSOR_POLL_AFTER); oldest
-- news first; only those made at the processors $5 and $6, which this
-- instance can read. Through idx_payments_status_created's PENDING range.
SELECT id FROM payments
WHERE status = 'PENDING' AND (next_action_expires_at <= $1
                              AND (COALESCE(processor_updated_at, created_at) < next_action_expires_at
                                   OR COALESCE(processor_updated_at, created_at) <= $4)
                              OR COALESCE(processor_updated_at, created_at) <= $2)
  AND processor IN ($5, $6)
ORDER BY COALESCE(processor_updated_at, created_at) LIMIT $3

-- name: mark_paid_later
-- Stamps a Pix or boleto settled straight from PROCESSING (its create's
-- answer came only after the payer paid, or it expired) with when: $2
-- paid_at for a CAPTURED one, expired_at for an EXPIRED one.
UPDATE payments SET paid_at = CASE WHEN status = 'CAPTURED' THEN $2 ELSE paid_at END,
       expired_at = CASE WHEN status = 'EXPIRED' THEN $2 ELSE expired_at END
WHERE id = $1

