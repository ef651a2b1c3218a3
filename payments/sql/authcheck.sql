-- The reads of old authorizations at their processor (authcheck.go): the
-- claim, one statement per dialect, and what a read that finds the
-- authorization standing records. What a read that finds it canceled or
-- captured writes is learned.sql's settle_elsewhere.

-- name: claim_authorizations_postgres
-- Claims up to $4 AUTHORIZED payments at processor $3 with nothing
-- pending, and a reference there to read them by, whose read is due by $2 (their last read, or their creation,
-- that long ago), the longest due first, through the partial index
-- idx_payments_auth_check on the due time: it stamps each with $1, which
-- keeps every instance from claiming it again until its read is done or
-- a retry's time has passed. SKIP LOCKED: a payment another instance is
-- claiming, or a request is changing, is left to it rather than waited
-- for. The index's own conditions are repeated so that the planner uses it.
UPDATE payments SET auth_checked_at = $1
WHERE id IN (SELECT id FROM payments
             WHERE status = 'AUTHORIZED' AND processor <> 'sandbox'
               AND COALESCE(auth_checked_at, created_at) <= $2
               AND processor = $3 AND pending_operation IS NULL AND processor_reference IS NOT NULL
             ORDER BY COALESCE(auth_checked_at, created_at) LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING id

-- name: claim_authorizations_sqlite
-- claim_authorizations_postgres without row locks: SQLite runs one
-- writing statement at a time, so no two instances claim one payment.
UPDATE payments SET auth_checked_at = $1
WHERE id IN (SELECT id FROM payments
             WHERE status = 'AUTHORIZED' AND processor <> 'sandbox'
               AND COALESCE(auth_checked_at, created_at) <= $2
               AND processor = $3 AND pending_operation IS NULL AND processor_reference IS NOT NULL
             ORDER BY COALESCE(auth_checked_at, created_at) LIMIT $4)
RETURNING id

-- name: authorization_stands
-- Records that the processor said at $2 that payment $1's authorization
-- stands: its next read is due a day later. Nothing when it is no longer
-- AUTHORIZED.
UPDATE payments SET auth_checked_at = $2 WHERE id = $1 AND status = 'AUTHORIZED'
