-- The late check of the creates and refunds sent again under a new key
-- (latecheck.go): each dialect's claim, then what a read records. Run
-- only through lateSQL, so the other sets do not load them.

-- name: claim_late_checks_postgres
-- Claims until $1 up to $5 creates and refunds at processor $3, settled,
-- sent again under a new key, and not yet read twice, whose read is due:
-- the first once their current key and last send (when stamped) are both
-- $2 or older, the second once the first was made at $6 or earlier; and
-- whose claim, if any, ran out by $4. The oldest key first, through the
-- partial index idx_processor_operations_late_reads, whose conditions are
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
WHERE id IN (SELECT id FROM processor_operations INDEXED BY idx_processor_operations_late_reads
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

-- name: late_refund_state
-- Refund $1 as CMPay holds it, for the late check of its operation: its
-- status, its reference at the processor (NULL when it settled without
-- one) and its amount.
SELECT status, processor_reference, amount_minor FROM refunds WHERE id = $1

-- name: succeed_failed_refund
-- Settles refund $1, which CMPay FAILED without a reference (its new
-- key's request refused, no refund with its id listed then), SUCCEEDED
-- as the processor's refund $2 that carries its id; $3 now. Nothing when
-- it is no longer so (another instance came first), or when $2 is
-- recorded as a duplicate: the late check's last read recorded it as the
-- only refund made of one CMPay shows FAILED, and an event settling on it
-- afterwards would turn that record into a second refund.
UPDATE refunds SET status = 'SUCCEEDED', failure_code = NULL, processor_reference = $2, settled_at = $3
WHERE id = $1 AND status = 'FAILED' AND processor_reference IS NULL
  AND NOT EXISTS (SELECT 1 FROM processor_duplicates WHERE reference = $2)

-- name: count_refund_made
-- Counts $2 minor units refunded on payment $1 for a refund settled
-- SUCCEEDED after it had FAILED: REFUNDED when that is all it captured,
-- else PARTIALLY_REFUNDED. No row when the payment cannot count it (not
-- captured, or its other refunds, succeeded or in flight, leave less):
-- returns the payment otherwise.
UPDATE payments SET refunded_minor = refunded_minor + $2,
       status = CASE WHEN refunded_minor + $2 = captured_minor THEN 'REFUNDED' ELSE 'PARTIALLY_REFUNDED' END
WHERE id = $1 AND status IN ('CAPTURED', 'PARTIALLY_REFUNDED') AND captured_minor - refunded_minor - reserved_minor >= $2
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
