-- Statements of the duplicates the processor holds (duplicates.go), which
-- both dialects run as written.

-- name: insert_duplicate
-- Records a duplicate unless one with its processor id ($1) is recorded
-- already: finding it again (a second event, another read) changes
-- nothing. $2 processor, $3 payment, $4 refund (NULL for a payment's), $5
-- operation, $6 amount in minor units, $7 currency, $8 state, $9 what
-- found it, $10 when.
INSERT INTO processor_duplicates (reference, processor, payment_id, refund_id, operation, amount_minor, currency,
	state, found_by, found_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (reference) DO NOTHING

-- name: duplicate_state
-- The state duplicate $1 was recorded in: recordDuplicate reads it when it
-- finds a recorded duplicate again, to tell a second payment recorded
-- waiting for its payer that has moved money since; learnFailedRefund, to
-- leave alone a refund the late check recorded.
SELECT state FROM processor_duplicates WHERE reference = $1

-- name: duplicates_of
-- The duplicates recorded for payment $1, oldest found first: the admin's
-- payment page.
SELECT reference, processor, payment_id, refund_id, operation, amount_minor, currency, state, found_by, found_at
FROM processor_duplicates WHERE payment_id = $1 ORDER BY found_at, reference
