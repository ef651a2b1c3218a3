-- What support staff search by besides a payment's id (lookup.go), which
-- both dialects run as written.

-- name: payment_of_refund
-- The payment of refund $1, by the refunds' primary key.
SELECT payment_id FROM refunds WHERE id = $1

-- name: payment_of_reference
-- The payment the processor knows as $1 (newest first, should a reference
-- ever repeat), through idx_payments_processor_reference.
SELECT id FROM payments WHERE processor_reference = $1 ORDER BY created_at DESC LIMIT 1
