-- The late check of the creates and refunds sent again under a new key
-- (latecheck.go): each dialect's claim, then what a read records. Run
-- only through lateSQL, so the other sets do not load them.

-- name: claim_late_checks_postgres
-- Claims until $1 up to $5 creates and refunds at processor $3, settled,
-- sent again under a new key, and not yet read twice, whose read is due:
-- the first once their current key and last send (when stamped) are both
-- $2 or older, the second once the first was made at $6 or earlier; and
-- whose claim, if any, ran out by $4. The oldest key first, through the
-- partial index idx_processor_operations_late_check, whose conditions are
-- repeated so that the planner uses it. SKIP LOCKED: one another instance
-- is claiming is left to it; the claim it writes then keeps it from
-- everyone else.
UPDATE processor_operations SET late_check_lease = $1
WHERE id IN (SELECT id FROM processor_operations
             WHERE key_since IS NOT NULL AND late_rechecked_at IS NULL
               AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')
               AND (late_checked_at IS NULL AND key_since <= $2 AND (last_send_at IS NULL OR last_send_at <= $2)
                    OR late_checked_at <= $6)
               AND settled_at IS NOT NULL AND processor = $3
               AND (late_check_lease IS NULL OR late_check_lease < $4)
             ORDER BY key_since LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING id

-- name: claim_late_checks_sqlite
-- claim_late_checks_postgres without row locks: SQLite runs one writing
-- statement at a time, so no two instances claim one operation.
UPDATE processor_operations SET late_check_lease = $1
WHERE id IN (SELECT id FROM processor_operations INDEXED BY idx_processor_operations_late_check
             WHERE key_since IS NOT NULL AND late_rechecked_at IS NULL
               AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')
               AND (late_checked_at IS NULL AND key_since <= $2 AND (last_send_at IS NULL OR last_send_at <= $2)
                    OR late_checked_at <= $6)
               AND settled_at IS NOT NULL AND processor = $3
               AND (late_check_lease IS NULL OR late_check_lease < $4)
             ORDER BY key_since LIMIT $5)
RETURNING id

-- name: late_checks_made
-- When operation $1 was first read for what its earlier keys made late;
-- NULL before its first read.
SELECT late_checked_at FROM processor_operations WHERE id = $1

-- name: late_checked
-- Records that operation $1 was read at $2, the first time, for what its
-- earlier keys made late: its second read is due a day later. Nothing when
-- another instance, whose claim came after this one's ran out, recorded
-- the first read already.
UPDATE processor_operations SET late_checked_at = $2, late_check_lease = NULL
WHERE id = $1 AND late_checked_at IS NULL

-- name: late_rechecked
-- Records operation $1's second and last read, at $2: it leaves the
-- partial index and is never claimed for that again.
UPDATE processor_operations SET late_rechecked_at = $2, late_check_lease = NULL
WHERE id = $1 AND late_checked_at IS NOT NULL AND late_rechecked_at IS NULL
