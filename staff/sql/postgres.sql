-- Statements of package staff that only PostgreSQL runs: those that take
-- arrays.

-- name: payment_currencies
-- The currency of each payment the array $1 lists, which the audit page
-- shows an admin refund's amount in: one read by primary key for a page.
SELECT id, currency FROM payments WHERE id = ANY($1)
