-- Statements both dialects run as they are (placeholders $1, $2…: sqlq.Lite
-- rewrites them for SQLite), and the fragments a listing is composed of.

-- name: read_payment
-- Reads one payment, in the column order scanPayment reads (rows.go).
SELECT id, client_id, idempotency_key, amount_minor, currency, method, created_at,
       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
FROM payments WHERE id = $1

-- name: read_refund
-- Reads one refund, in the column order scanRefund reads (rows.go).
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at, status, failure_code, returned_at, settled_at
FROM refunds WHERE id = $1

-- name: read_key
-- Reads the key a client ($1) holds ($2), for decide to judge, in
-- scanHeld's column order (rows.go).
SELECT id, operation, params, fingerprint, fingerprint_version, created_at, payment_id, refund_id,
       processor_operation_id
FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2

-- name: payment_in_flight
-- "Payment p has work at its processor that is not settled", a condition
-- for the statements that keep such a payment's keys past their TTL:
-- Payment.inFlight in Go, which the requests use.
(p.status IN ('PROCESSING', 'PENDING') OR p.pending_operation IS NOT NULL OR p.reserved_minor > 0)

-- name: forget_key
-- Deletes a key found past its TTL ($1 its id, $2 expired-before), checking
-- its age again, so that a key another request renewed meanwhile survives.
-- The request that found it then goes round again and claims it as new.
DELETE FROM idempotency_keys WHERE id = $1 AND created_at < $2

-- name: insert_event
-- Writes the event of an applied request to the outbox, in the request's
-- transaction (events.go): the payment as the change left it. Both dialects: SQLite's
-- steps, and the settling of a processor operation (operations.go).
INSERT INTO payment_events (type, at, idempotency_key, refund_id, payment_id, client_id,
                            payment_key, amount_minor, currency, method, payment_created_at, status, captured_minor,
                            refunded_minor, captured_at, canceled_at, replay_count, rejected_count)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)

-- name: apply_change
-- The one place a capture, cancel or refund changes a payment, included by
-- name ({{apply_change}}) in PostgreSQL's change_batch and SQLite's
-- apply_one_change (sql.go).
--
-- A conditional update whose WHERE is the payment lifecycle, so that the
-- database, not a check in Go, decides whether a change is allowed:
-- concurrent requests on one payment queue on its row lock, and each is
-- judged against the row as the ones before it left it. Refunds can never
-- add up to more than was captured; of a capture and a cancel, one wins.
-- (The check constraint on payments backs this up: models.Payment.)
-- decide.go holds the same rules in Go, to say why a request was refused;
-- TestLifecycleRules (lifecycle_test.go) checks that the two agree for
-- every status and operation.
--
-- It reads its requests from a relation named target, one row per payment:
--   req_operation   CAPTURE_PAYMENT, CANCEL_PAYMENT or REFUND_PAYMENT
--   req_payment_id  the payment
--   req_amount      the amount in minor units (0 for a cancel): the one
--                   given, or all that was available when the request read
--                   the payment
--   req_all         no amount was given: a refund then applies only if what
--                   is left is still what the request read, so that "refund
--                   all that is left" never refunds a stale figure
--   req_ready       false when an earlier check already stopped the request
--   req_now         the time of the change
-- and returns the changed payments. (SQLite's RETURNING may name only the
-- updated table's columns, and only bare: hence no "p." below.)
UPDATE payments AS p SET
	status = CASE t.req_operation
		WHEN 'CAPTURE_PAYMENT' THEN 'CAPTURED'
		WHEN 'CANCEL_PAYMENT' THEN 'CANCELED'
		WHEN 'REFUND_PAYMENT' THEN CASE
			WHEN p.refunded_minor + t.req_amount = p.captured_minor THEN 'REFUNDED'
			ELSE 'PARTIALLY_REFUNDED' END
		END,
	captured_minor = CASE t.req_operation WHEN 'CAPTURE_PAYMENT' THEN t.req_amount ELSE p.captured_minor END,
	captured_at = CASE t.req_operation WHEN 'CAPTURE_PAYMENT' THEN t.req_now ELSE p.captured_at END,
	canceled_at = CASE t.req_operation WHEN 'CANCEL_PAYMENT' THEN t.req_now ELSE p.canceled_at END,
	refunded_minor = CASE t.req_operation WHEN 'REFUND_PAYMENT' THEN p.refunded_minor + t.req_amount ELSE p.refunded_minor END
FROM target AS t
-- Nothing may be in flight at the processor for the payment (a capture or
-- cancel pending, a refund's amount reserved, by the phased way of
-- changes.go): such a payment's request is sent that way too, where the
-- work in flight is judged.
WHERE p.id = t.req_payment_id AND t.req_ready AND p.pending_operation IS NULL AND p.reserved_minor = 0
	AND CASE t.req_operation
	-- A capture takes an authorization, for at most what was authorized
	-- (capturing less releases the rest).
	WHEN 'CAPTURE_PAYMENT' THEN p.status = 'AUTHORIZED' AND t.req_amount BETWEEN 1 AND p.amount_minor
	-- A cancel takes an authorization that was not captured.
	WHEN 'CANCEL_PAYMENT' THEN p.status = 'AUTHORIZED'
	-- A refund takes a captured payment with something left, for at most
	-- what is left (a REFUNDED one is a state conflict: decide.go's rules).
	WHEN 'REFUND_PAYMENT' THEN p.status IN ('CAPTURED', 'PARTIALLY_REFUNDED')
		AND t.req_amount BETWEEN 1 AND p.captured_minor - p.refunded_minor
		AND (NOT t.req_all OR t.req_amount = p.captured_minor - p.refunded_minor)
	ELSE false END
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: page_select
-- Where a page of payments starts: a payment's columns, in scanPayment's
-- order, and a WHERE that every filter fragment adds to. A page (List,
-- Export) is page_select, the page_* fragments of the filters that are
-- set, and page_order (list.go: pageQuery). Their parameters are named
-- (@client_id…), not numbered, so that a fragment means the same whichever
-- others come with it: pgx.NamedArgs numbers them for PostgreSQL, SQLite
-- binds names itself. Each predicate is written exactly as its index's
-- (models.Payment: the partial ones included), so the planner can use the
-- index; every such index ends in (created_at, id), the page's order, so a
-- page is an index range read.
SELECT id, client_id, idempotency_key, amount_minor, currency, method, created_at,
       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
FROM payments WHERE true

-- name: page_client
-- One client's payments (idx_payments_client_created).
AND client_id = @client_id

-- name: page_key
-- The payments of one idempotency key, across clients (idx_payments_key_created).
AND idempotency_key = @idempotency_key

-- name: page_flagged
-- Payments whose key was replayed or rejected (idx_payments_flagged_at).
AND (replayed_at IS NOT NULL OR rejected_at IS NOT NULL)

-- name: page_replayed
-- Payments whose key was replayed (idx_payments_replayed_at).
AND replayed_at IS NOT NULL

-- name: page_rejected
-- Payments whose key was reused for another payload (idx_payments_rejected_at).
AND rejected_at IS NOT NULL

-- name: page_amount
-- Payments of exactly one amount and currency: a filter on the rows the
-- other conditions' index reads (no index of its own).
AND amount_minor = @amount_minor AND currency = @currency

-- name: page_status
-- Payments in one status (idx_payments_status_created).
AND status = @status

-- name: page_waiting_operation
-- Payments with a capture, cancel or refund the processor has not settled
-- (idx_payments_waiting_op, whose condition this is, word for word: SQLite
-- uses a partial index only for a query that repeats its WHERE term).
AND (pending_operation IS NOT NULL OR reserved_minor > 0)

-- name: page_from
-- Created at or after @created_from.
AND created_at >= @created_from

-- name: page_to
-- Created before @created_before.
AND created_at < @created_before

-- name: page_after
-- The keyset cursor: the payments after the last one a page showed, in the
-- page's order, so that a page never skips or repeats a payment however
-- many are created meanwhile.
AND (created_at, id) < (@after_at, @after_id)

-- name: page_search_id
-- A search's read by payment id (the primary key: one payment at most).
AND id = @search

-- name: page_search_client
-- A search's read by client id (idx_payments_client_created).
AND client_id = @search

-- name: page_search_key
-- A search's read by idempotency key (idx_payments_key_created).
AND idempotency_key = @search

-- name: page_order
-- Newest first, the order every listing index ends in; at most @page_size.
ORDER BY created_at DESC, id DESC LIMIT @page_size

-- name: search_open
-- A search (Filter.Search: an id, client id or key, whichever the customer
-- gave) is three reads, each a page of its own in index order (page_select,
-- the filters, page_search_id, _client or _key, page_order), merged by the
-- database: "id = q OR client_id = q OR idempotency_key = q" would make it
-- sort every payment of a large client, where this reads about 2 × the
-- page size, since an id matches one payment at most. list.go composes
-- search_open, the read by id, search_then_client, the read by client,
-- search_then_key, the read by key, search_close.
SELECT * FROM (

-- name: search_then_client
-- Ends a search's read by id and opens its read by client (search_open).
) AS by_id UNION SELECT * FROM (

-- name: search_then_key
-- Ends a search's read by client and opens its read by key (search_open).
) AS by_client UNION SELECT * FROM (

-- name: search_close
-- Ends a search's read by key, and merges the three reads newest first, at
-- most @page_size (search_open).
) AS by_key ORDER BY created_at DESC, id DESC LIMIT @page_size

-- name: insert_operation
-- Stores a processor operation before its processor is asked (operations.go;
-- PostgreSQL's creates store theirs in create_batch): $1 id, $2 payment,
-- $3 refund, $4 operation, $5 processor, $6 amount, $7 currency, $8 request
-- (JSON), $9 state, $10 code, $11 sends, $12 lease owner, $13 lease end,
-- $14 next try, $15 now, $16 settled at (NULL while unsettled). Each is
-- sent right after, so it is stamped sent at $15 (last_send_at).
INSERT INTO processor_operations (id, payment_id, refund_id, operation, processor, key, amount_minor, currency,
                                  request, state, code, sends, lease_owner, lease_until, next_try_at, created_at,
                                  settled_at, last_send_at)
VALUES (CAST($1 AS TEXT), $2, $3, $4, $5, 'cmpay_' || CAST($1 AS TEXT), $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
        $16, $15)

-- name: insert_call
-- Records one processor call of an operation: $1 operation id, $2 payment,
-- $3 operation, $4 the key it carried, $5 WRITE or READ, $6 outcome,
-- $7 code, $8 when, $9 how long in ms, $10 the state of the processor's
-- record its answer gave.
INSERT INTO processor_calls (operation_id, payment_id, operation, processor_key, kind, outcome, code, at, duration_ms,
                             record_state)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: last_write_under_key
-- When operation $2 of payment $1 was last sent under key $3 (no row:
-- never): a refund whose key is a day old is sent under a new key only once
-- no request under its old one can still be running (recovery.go, atRest).
-- (Not MAX(at): SQLite would answer it as text.)
SELECT at FROM processor_calls
WHERE payment_id = $1 AND operation_id = $2 AND processor_key = $3 AND kind = 'WRITE'
ORDER BY at DESC LIMIT 1

-- name: last_write_of_operation
-- When operation $2 of payment $1 was last sent, under any of its keys, as
-- recorded (no row: no send was): with its last_send_at, what a create a
-- day old waits for and its processor's list by creation time covers
-- before it is declined (dayold.go).
SELECT at FROM processor_calls
WHERE payment_id = $1 AND operation_id = $2 AND kind = 'WRITE'
ORDER BY at DESC LIMIT 1

-- name: read_operation
-- Reads one processor operation, in scanOperation's column order
-- (operations.go).
SELECT id, payment_id, refund_id, operation, processor, key, amount_minor, currency, request, state, sends,
       last_error, created_at, key_since, stored_at, last_send_at
FROM processor_operations WHERE id = $1

-- name: settle_operation
-- Settles operation $1 with state $2 and code $3 at $4, counting $5 more
-- sends, unless it is settled already: the first word of the processor
-- to arrive settles it, whoever carried it (the request, a retry, the
-- recovery worker of any instance); one row changed if this one did.
UPDATE processor_operations SET state = $2, code = $3, settled_at = $4, sends = sends + $5,
       lease_owner = NULL, lease_until = NULL, last_error = NULL
WHERE id = $1 AND settled_at IS NULL

-- name: postpone_operation
-- Leaves operation $1 unsettled after a call that did not settle it:
-- UNKNOWN, $2 more sends, next due at $3, $4 the error that says what to do
-- next, the lease released. Only by the lease's holder $5 (or when no one
-- holds it): a holder whose lease ran out leaves it to the new one. $6 is
-- now when the key's answer is a stored error, else NULL: stored_at keeps
-- when that was first seen.
UPDATE processor_operations SET state = 'UNKNOWN', sends = sends + $2, next_try_at = $3, last_error = $4,
       lease_owner = NULL, lease_until = NULL, stored_at = COALESCE(stored_at, $6)
WHERE id = $1 AND settled_at IS NULL AND (lease_owner IS NULL OR lease_owner = $5)

-- name: rekey_operation
-- Gives operation $1 the key $3 in place of $2, to send it again under
-- (payments/resend.go): only while it is unsettled, still has key $2, and
-- $4 holds its lease, so of two instances that judged it one stores a key
-- and the other finds no row. It is then asked again (last_error NULL),
-- its lease renewed to $5 for the send. The new key's age counts from $6
-- (key_since), and no stored error has been seen under it yet; $6 is also
-- when it was last about to be sent (last_send_at).
UPDATE processor_operations SET key = $3, last_error = NULL, lease_until = $5, key_since = $6, stored_at = NULL,
       last_send_at = $6
WHERE id = $1 AND key = $2 AND settled_at IS NULL AND lease_owner = $4

-- name: settle_created
-- Sets a created payment to what its processor said ($2 status, $3
-- reference, $4 decline code, $5 now: the capture's time; for a PENDING
-- Pix or boleto, its next action: $6 type, $7 Pix code, $8 boleto line, $9
-- hosted URL, $10 expiry), and returns it.
UPDATE payments SET status = CAST($2 AS TEXT), processor_reference = COALESCE($3, processor_reference), decline_code = $4,
       captured_minor = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN amount_minor ELSE captured_minor END,
       captured_at = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN $5 ELSE captured_at END,
       next_action_type = $6, pix_code = $7, boleto_line = $8, hosted_url = $9, next_action_expires_at = $10,
       processor_updated_at = $5
WHERE id = $1
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: count_unknown
-- Counts the processor operations whose outcome is unknown and not yet
-- resolved (the metrics' gauge), through the partial index on next_try_at.
SELECT count(*) FROM processor_operations WHERE settled_at IS NULL AND state = 'UNKNOWN'

-- name: claim_key
-- Claims a key for its client unless the client holds it already: one row
-- changed if claimed, none if held. $1 client, $2 key, $3 operation,
-- $4 fingerprint, $5 its version, $6 canonical params, $7 payment, $8 the
-- refund a refund creates, $9 now, $10 the processor operation a
-- capture, cancel or refund starts (changes.go), or, when the sandbox
-- foresees the change, the id of its one call (store_sqlite.go).
INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params,
                              payment_id, refund_id, created_at, processor_operation_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (client_id, idempotency_key) DO NOTHING

-- name: insert_attempt
-- Records one request on a payment: its operation, key, outcome and
-- parameters, and for a rejection the held key's parameters, for a refusal
-- the rule, for a refund the refund; for a replay, rejection or refusal,
-- the request's id ($13), and for a capture, cancel or refund asked at a
-- processor, its operation's (refuse_attempt), or, foreseen by the
-- sandbox, the operation of its one call (processor_calls_of).
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at,
                                  params, held_params, refusal, refund_id, transport, actor, actor_address, differing_fields,
                                  request_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, '', $13)

-- name: refuse_attempt
-- The processor refused (or failed the refund of) processor operation $2
-- of payment $1: the APPLIED attempt of the request that started it (which
-- names it as its request_id, changes.go: storeChange) becomes REFUSED,
-- in the transaction that settles the operation. Returns its transport,
-- for the metrics; no row for an attempt stored before attempts named
-- their operation. Read through the payment's attempts.
UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED'
WHERE payment_id = $1 AND request_id = $2 AND outcome = 'APPLIED'
RETURNING transport

-- name: applied_attempt
-- The transport of the APPLIED attempt that started processor operation
-- $2 of payment $1, settled as it asked: for the metrics.
SELECT transport FROM idempotency_attempts WHERE payment_id = $1 AND request_id = $2 AND outcome = 'APPLIED'

-- name: recorded_attempt
-- Whether payment $1 has an attempt of request $2: a replay, rejection or
-- refusal an earlier run of the request's statement recorded (read through
-- the payment's attempts, only for a request sent before).
SELECT count(*) FROM idempotency_attempts WHERE payment_id = $1 AND request_id = $2

-- name: count_replay
-- Counts a replay on payment $2 at $1 and returns the payment as it is
-- now; the first replay also stamps it (models.Payment.ReplayedAt).
UPDATE payments SET replay_count = replay_count + 1, replayed_at = COALESCE(replayed_at, $1) WHERE id = $2
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: count_rejection
-- Counts a rejection as count_replay counts a replay.
UPDATE payments SET rejected_count = rejected_count + 1, rejected_at = COALESCE(rejected_at, $1) WHERE id = $2
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: key_operation
-- The processor operation a key ($1) started, as it stands: its id, state
-- and code; no row for a key that started none (a change the sandbox
-- foresaw names only its call).
SELECT o.id, o.state, o.code FROM idempotency_keys k JOIN processor_operations o ON o.id = k.processor_operation_id
WHERE k.id = $1

-- name: operation_state
-- The state and code of processor operation $1, as it stands: what its
-- key's replays answer (key_operation), read by a request whose own answer
-- did not settle it.
SELECT state, code FROM processor_operations WHERE id = $1

-- name: start_pending
-- Marks a capture or cancel ($2) sent to the processor on payment $1,
-- which keeps its status meanwhile (changes.go checked the rules under the
-- payment's lock).
UPDATE payments SET pending_operation = $2 WHERE id = $1

-- name: reserve_refund
-- Counts a refund in flight, $2 minor units, against what is left to
-- refund of payment $1.
UPDATE payments SET reserved_minor = reserved_minor + $2 WHERE id = $1

-- name: insert_pending_refund
-- Creates a refund PROCESSING until its processor answers: $1 id, $2
-- payment, $3 amount, $4 reason, $5 key, $6 now.
INSERT INTO refunds (id, payment_id, amount_minor, reason, idempotency_key, created_at, status)
VALUES ($1, $2, $3, $4, $5, $6, 'PROCESSING')

-- name: settle_change
-- Applies a capture's or cancel's processor answer to payment $1 and
-- clears its pending operation: $2 the status it ends in (AUTHORIZED when
-- refused), $3 the amount captured, $4 now. Returns the payment.
UPDATE payments SET status = CAST($2 AS TEXT), pending_operation = NULL,
       captured_minor = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN $3 ELSE captured_minor END,
       captured_at = CASE WHEN CAST($2 AS TEXT) = 'CAPTURED' THEN $4 ELSE captured_at END,
       canceled_at = CASE WHEN CAST($2 AS TEXT) = 'CANCELED' THEN $4 ELSE canceled_at END
WHERE id = $1
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: settle_refund_payment
-- Releases a settled refund's reservation of $2 on payment $1 and counts
-- $3 of it refunded ($2 when it succeeded, 0 when it failed). Returns the
-- payment.
UPDATE payments SET reserved_minor = reserved_minor - $2, refunded_minor = refunded_minor + $3,
       status = CASE WHEN $3 > 0 AND refunded_minor + $3 = captured_minor THEN 'REFUNDED'
                     WHEN $3 > 0 THEN 'PARTIALLY_REFUNDED' ELSE status END
WHERE id = $1
RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token

-- name: settle_refund
-- Ends refund $1 as its processor said: $2 SUCCEEDED or FAILED, $3 the
-- failure code, $4 its reference there, $5 now.
UPDATE refunds SET status = $2, failure_code = $3, processor_reference = COALESCE($4, processor_reference), settled_at = $5
WHERE id = $1

-- name: refund_reference
-- A refund's processor reference, NULL until known.
SELECT processor_reference FROM refunds WHERE id = $1

-- name: operation_key
-- The key of the request that started processor operation $1.
SELECT idempotency_key FROM idempotency_keys WHERE processor_operation_id = $1

-- name: renew_lease
-- Extends to $3 the lease of operation $1 while $2 still holds it and it is
-- unsettled: recovery renews a claimed operation's lease just before asking,
-- since a batch's later operations wait for the earlier ones' calls. $4 is
-- now when it asks by a send, stamped before the send starts (last_send_at);
-- NULL for a read. No row: another instance took it over, or someone
-- settled it.
UPDATE processor_operations SET lease_until = $3, last_send_at = COALESCE($4, last_send_at)
WHERE id = $1 AND lease_owner = $2 AND settled_at IS NULL
