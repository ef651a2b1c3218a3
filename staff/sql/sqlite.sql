-- Statements of package staff that only SQLite runs: it binds no arrays,
-- so a list comes as JSON.

-- name: payment_currencies
-- The currency of each payment the JSON array $1 lists, which the audit
-- page shows an admin refund's amount in; json_each reads the array.
SELECT id, currency FROM payments WHERE id IN (SELECT value FROM json_each($1))
