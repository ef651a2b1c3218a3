-- Statements of package events that only PostgreSQL runs: reading events
-- by the ids the sequencer gave them (event_batches), and the sequencer
-- itself (sequencer_postgres.go).

-- name: last_id
-- The highest event id given so far, 0 when none: the newest pass's last_id.
SELECT COALESCE(MAX(last_id), 0) FROM event_batches

-- name: numbered_events
-- The numbered events with $1 < id <= $2, of the client $3 and the payment
-- $4 when they are not empty, oldest first. An event's id comes from the
-- pass that numbered it: the pass's first_id plus the event's place in its
-- list of seqs. Passes number ids without gaps, so the batches that overlap
-- an id range are found by their last_id alone. Run planned for its
-- arguments every time: a cached generic plan would not know that
-- "last_id > $1" means the newest few rows, and scan the whole table.
SELECT b.first_id + u.o - 1 AS id, e.seq, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id,
	e.payment_key, e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor,
	e.refunded_minor, e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor, r.reason, r.idempotency_key, r.created_at, r.status, r.failure_code, r.settled_at, r.returned_at,
	COALESCE(p.processor, 'sandbox'), p.processor_reference, p.decline_code, p.payment_method_token,
	p.next_action_type, p.pix_code, p.boleto_line, p.hosted_url, p.next_action_expires_at, p.paid_at, p.expired_at
FROM event_batches b
CROSS JOIN LATERAL unnest(b.seqs) WITH ORDINALITY AS u(seq, o)
JOIN payment_events e ON e.seq = u.seq
LEFT JOIN refunds r ON r.id = e.refund_id
LEFT JOIN payments p ON p.id = e.payment_id
WHERE b.last_id > $1 AND b.first_id <= $2 AND b.first_id + u.o - 1 > $1 AND b.first_id + u.o - 1 <= $2
	AND ($3::text = '' OR e.client_id = $3::text) AND ($4::text = '' OR e.payment_id = $4::text)
ORDER BY 1

-- name: events_by_seq
-- The events whose seqs $1 lists, with no id (0): the webhook dispatcher
-- knows each one's id from its delivery.
SELECT 0::bigint AS id, e.seq, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id,
	e.payment_key, e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor,
	e.refunded_minor, e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor, r.reason, r.idempotency_key, r.created_at, r.status, r.failure_code, r.settled_at, r.returned_at,
	COALESCE(p.processor, 'sandbox'), p.processor_reference, p.decline_code, p.payment_method_token,
	p.next_action_type, p.pix_code, p.boleto_line, p.hosted_url, p.next_action_expires_at, p.paid_at, p.expired_at
FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
LEFT JOIN payments p ON p.id = e.payment_id
WHERE e.seq = ANY($1::bigint[])

-- name: outbox_schema
-- The schema that holds payment_events, as the connection's search_path
-- finds it: several schemas of one database may each hold a CMPay (the
-- tests' do), and each has its own leader and notification channel.
SELECT n.nspname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE t.oid = 'payment_events'::regclass

-- name: try_lead
-- Takes the leader's lock $1 if no session holds it. Session-level, so that
-- a leader that dies or loses its connection hands over at once.
SELECT pg_try_advisory_lock($1)

-- name: set_listen_channel
-- Puts the notification channel's name in the session, for listen: LISTEN
-- takes no parameter.
SELECT set_config('cmpay.sequenced_channel', $1, false)

-- name: listen
-- Listens on the channel set_listen_channel named, quoted by format's %I.
DO $$ BEGIN EXECUTE format('LISTEN %I', current_setting('cmpay.sequenced_channel')); END $$

-- name: read_cursor
-- The state the last leader saved (save_cursor), if any.
SELECT frontier, numbered, last_id FROM event_cursors WHERE name = 'sequencer'

-- name: passes_since
-- The seqs above the frontier $2 numbered by the passes after the last id
-- $1: those a leader made after it last saved its state. Run planned for
-- its arguments, like numbered_events.
SELECT u.seq FROM event_batches b CROSS JOIN LATERAL unnest(b.seqs) AS u(seq)
WHERE b.last_id > $1 AND u.seq > $2

-- name: poll
-- One look at the outbox, in one snapshot: the oldest transaction still
-- running (xmin); an xid above every xid assigned before the snapshot was
-- taken (the poll's own, assigned while the statement runs, after its
-- snapshot); and the committed events past the frontier $1, in seq order.
--
-- Not the snapshot's xmax: that is one past the highest *completed* xid,
-- and a transaction that had its xid (and then its event's seq) before the
-- snapshot, but after the last one to complete, is at or above it. Moving
-- the frontier by that xmax let such an event, committed later with a seq
-- below the frontier, go unnumbered.
--
-- The upper bound on seq is never reached (5000 rows come first); it makes
-- the cached generic plan an index range scan (a bounded range is estimated
-- narrow), where "seq > $1" alone would be estimated a third of the table.
SELECT pg_snapshot_xmin(s)::text::bigint, pg_current_xact_id()::text::bigint,
	ARRAY(SELECT seq FROM payment_events WHERE seq > $1 AND seq <= $1 + 1000000000 ORDER BY seq LIMIT 5000)
FROM pg_current_snapshot() AS s

-- name: pass
-- Numbers the events $1 lists (committed, not numbered yet), in that order:
-- records the batch (first_id = the last id given + 1, and on), creates
-- their deliveries (created at $2) for every endpoint that receives them
-- (not deleted, bound to no client or to the event's, subscribed to every
-- type or to the event's), each with the event's payment and client (for
-- the admin's filters: written here, off the request path), and tells
-- every instance on the channel $3 the new highest id and how many
-- deliveries were created. One statement: one round trip, one
-- transaction, one row for the whole batch. The last id is read in the
-- statement's snapshot: only the leader numbers events, one pass at a
-- time, and the primary key on last_id would refuse a second leader's pass
-- rather than give an id twice.
WITH todo AS (
	SELECT seq, rn FROM unnest($1::bigint[]) WITH ORDINALITY AS t(seq, rn)
), base AS (
	SELECT COALESCE((SELECT last_id FROM event_batches ORDER BY last_id DESC LIMIT 1), 0) AS b
), batch AS (
	INSERT INTO event_batches (last_id, first_id, seqs)
	SELECT base.b + cardinality($1::bigint[]), base.b + 1, $1::bigint[] FROM base
	RETURNING last_id
), delivery AS (
	INSERT INTO webhook_deliveries (event_id, event_seq, endpoint_id, payment_id, client_id, status, event_at, created_at,
		attempts, retries, next_attempt_at, claim_token, last_status, last_error)
	SELECT base.b + t.rn, e.seq, w.id, e.payment_id, e.client_id, 'PENDING', e.at, $2::timestamptz, 0, 0, $2::timestamptz,
		0, 0, ''
	FROM todo t CROSS JOIN base JOIN payment_events e ON e.seq = t.seq
	JOIN webhook_endpoints w ON w.deleted_at IS NULL AND (w.client_id = '' OR w.client_id = e.client_id)
		AND (w.event_types = '' OR w.event_types LIKE '%,' || e.type || ',%')
	RETURNING 1
), total AS (
	SELECT (SELECT last_id FROM batch) AS top, (SELECT count(*) FROM delivery) AS deliveries
)
SELECT t.top, t.deliveries, (SELECT true FROM pg_notify($3::text, t.top::text || ':' || t.deliveries))
FROM total t

-- name: save_cursor
-- Saves the leader's state, about once a second: the frontier $1, the
-- numbered seqs above it $2 ("12,15"), and the last id given then $3. A new
-- leader adds the seqs of the passes numbered since (passes_since).
INSERT INTO event_cursors (name, frontier, numbered, last_id) VALUES ('sequencer', $1, $2, $3)
ON CONFLICT (name) DO UPDATE SET frontier = EXCLUDED.frontier, numbered = EXCLUDED.numbered, last_id = EXCLUDED.last_id

-- name: old_passes
-- Up to 100 passes after the last id $1, oldest first, but never the newest
-- (whose last_id the next pass counts from): each with its seqs, its newest
-- event's time, and whether a delivery without a stored body still needs
-- one of its events: one pending, or one FAILED before bodies were stored,
-- which a resend builds its body from. A delivery with a body (stored
-- when it failed) needs no event. Whatever its keep, a FAILED one counts
-- while it is there (expire_failed, earlier in the sweep, takes it at
-- the end of its keep): a resend only turns FAILED into PENDING, so none
-- can make an event needed after this statement found it not, and
-- delete_pass may delete without asking again. Run planned for its
-- arguments, like numbered_events.
SELECT b.last_id, b.seqs,
	(SELECT max(e.at) FROM payment_events e WHERE e.seq = ANY(b.seqs)),
	EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = ANY(b.seqs) AND d.body IS NULL
		AND (d.status = 'PENDING' OR d.status = 'FAILED'))
FROM event_batches b
WHERE b.last_id > $1 AND b.last_id < (SELECT max(last_id) FROM event_batches)
ORDER BY b.last_id LIMIT 100

-- name: delete_pass
-- Deletes the pass whose last id is $2 and its events, the seqs $1: one
-- statement, so that a pass's row never outlives its events nor they it.
WITH gone AS (DELETE FROM payment_events WHERE seq = ANY($1))
DELETE FROM event_batches WHERE last_id = $2

-- name: expire_failed
-- Deletes up to $2 FAILED deliveries last tried (else created) before $1,
-- whose keep is over, and their attempts, in one statement: found through
-- idx_webhook_deliveries_failed_at (migration 0012), which holds the FAILED
-- ones only, by that time. The outer conditions repeat the inner ones, so
-- that a delivery resent meanwhile (then PENDING) is left: the resend or
-- the delete wins whole, and the attempts go only with a delivery that
-- went. Says how many deliveries it deleted.
WITH gone AS (
	DELETE FROM webhook_deliveries
	WHERE id IN (SELECT id FROM webhook_deliveries
	             WHERE status = 'FAILED' AND COALESCE(last_attempt_at, created_at) < $1 LIMIT $2)
		AND status = 'FAILED' AND COALESCE(last_attempt_at, created_at) < $1
	RETURNING id
), attempts AS (
	DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone)
)
SELECT count(*) FROM gone

-- name: delivery_sweep_frontier
-- The deliveries sweep's frontier (0 before the first sweep): every
-- delivery with an id at or below it is gone, FAILED (expire_failed takes
-- it at the end of its keep), resent (delete_resent_behind takes it once
-- delivered or cancelled), or a FAILED one cancelled with its endpoint
-- after the sweep passed it (delete_canceled_behind). So a sweep walks
-- from it, not from the oldest kept delivery. The frontier stored, then
-- where to walk from: 0 when the stored one is past the last id the
-- table's sequence has given, since ids given again from 1 (the table
-- truncated with RESTART IDENTITY, the sequence reset) would otherwise all
-- lie behind it, never met by the walk. Deleting the newest deliveries
-- moves neither, so a quiet spell does not send the walk back to 0.
SELECT f.frontier, CASE WHEN f.frontier > COALESCE(pg_sequence_last_value(pg_get_serial_sequence('webhook_deliveries', 'id')), 0)
	THEN 0 ELSE f.frontier END
FROM (SELECT COALESCE((SELECT frontier FROM event_cursors WHERE name = 'delivery_sweep'), 0) AS frontier) f
