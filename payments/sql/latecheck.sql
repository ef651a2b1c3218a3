-- The late check of the creates and refunds sent again under a new key
-- (latecheck.go): each dialect's claim, then what a read records. Run
-- only through lateSQL, so the other sets do not load them.

-- name: claim_late_checks_postgres
-- Claims until $1 up to $5 creates and refunds at processor $3, settled,
-- sent again under a new key, and not yet late-checked, whose current key
-- and last send (when stamped) are both $2 or older, and whose claim, if
-- any, ran out by $4; the oldest key first, through the partial index
-- idx_processor_operations_late_check, whose conditions are repeated so
-- that the planner uses it. SKIP LOCKED: one another instance is claiming
-- is left to it; the claim it writes then keeps it from everyone else.
UPDATE processor_operations SET late_check_lease = $1
WHERE id IN (SELECT id FROM processor_operations
             WHERE key_since IS NOT NULL AND late_checked_at IS NULL
               AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')
               AND key_since <= $2 AND (last_send_at IS NULL OR last_send_at <= $2)
               AND settled_at IS NOT NULL AND processor = $3
               AND (late_check_lease IS NULL OR late_check_lease < $4)
             ORDER BY key_since LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING id

-- name: claim_late_checks_sqlite
-- claim_late_checks_postgres without row locks: SQLite runs one writing
-- statement at a time, so no two instances claim one operation.
UPDATE processor_operations SET late_check_lease = $1
WHERE id IN (SELECT id FROM processor_operations INDEXED BY idx_processor_operations_late_check
             WHERE key_since IS NOT NULL AND late_checked_at IS NULL
               AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')
               AND key_since <= $2 AND (last_send_at IS NULL OR last_send_at <= $2)
               AND settled_at IS NOT NULL AND processor = $3
               AND (late_check_lease IS NULL OR late_check_lease < $4)
             ORDER BY key_since LIMIT $5)
RETURNING id

-- name: late_checked
-- Records that operation $1 was read at $2 for what its earlier keys made
-- late: it is never claimed for that again.
UPDATE processor_operations SET late_checked_at = $2, late_check_lease = NULL
WHERE id = $1 AND late_checked_at IS NULL
