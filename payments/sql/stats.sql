-- The admin's overview (stats.go), which both dialects run as written.

-- name: waiting_counts
-- How many payments wait for the processor (PROCESSING) or their payer
-- (PENDING) now, whatever their age: work a day old still waits. Through
-- the index on (status, created_at), one range per status; the rows read
-- are the waiting payments alone.
SELECT status, count(*) FROM payments
WHERE status IN ('PROCESSING', 'PENDING')
GROUP BY status

-- name: ended_counts
-- How many payments created since $1 ended with no money moved (DECLINED,
-- EXPIRED), by status. Through the index on (status, created_at).
SELECT status, count(*) FROM payments
WHERE status IN ('DECLINED', 'EXPIRED') AND created_at >= $1
GROUP BY status

-- name: waiting_operations
-- How many captures, cancels and refunds the processor has not settled
-- yet, by operation, whatever their age. Through the partial index on the
-- unsettled operations (idx_processor_operations_due).
SELECT operation, count(*) FROM processor_operations
WHERE settled_at IS NULL AND operation <> 'CREATE_PAYMENT'
GROUP BY operation
