-- What support staff search by besides a payment's id (lookup.go), which
-- both dialects run as written.

-- name: payment_of_refund
-- The payment of refund $1, by the refunds' primary key.
SELECT payment_id FROM refunds WHERE id = $1

-- name: payment_of_reference
-- The payment a processor other than the sandbox knows as $1 (newest
-- first, should a reference ever repeat), through
-- idx_payments_external_reference, whose condition this repeats word for
-- word (SQLite uses a partial index only so).
SELECT id FROM payments WHERE processor_reference = $1 AND processor <> 'sandbox' ORDER BY created_at DESC LIMIT 1

-- name: payment_of_sandbox_reference
-- The sandbox payment known as $1: no index, read only by a server that
-- runs the sandbox (development, the embedded default).
SELECT id FROM payments WHERE processor_reference = $1 AND processor = 'sandbox' ORDER BY created_at DESC LIMIT 1
