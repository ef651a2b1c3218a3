-- Statements of package intake, which PostgreSQL and SQLite run as
-- written.

-- name: insert_event
-- Stores a verified event unless one with its id ($1) is stored already:
-- a repeated delivery changes nothing. $2 processor, $3
-- type, $4 payment reference, $5 the processor's time, $6 received at, $7
-- the payload.
INSERT INTO processor_events (id, processor, type, payment_reference, created, received_at, payload)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING

-- name: event_applied
-- Whether the event $1, delivered again (insert_event stored nothing), is
-- applied already.
SELECT applied_at IS NOT NULL FROM processor_events WHERE id = $1

-- name: mark_applied
-- Stamps the event $1 applied at $2, once.
UPDATE processor_events SET applied_at = $2 WHERE id = $1 AND applied_at IS NULL

-- name: unapplied
-- The first page of the retry loop's walk (Retry): up to $1 stored events
-- not applied yet and received after $2, newest first, with the cursor of
-- the next page (received_at, id). The loop walks every unapplied event
-- in the window a page a round, from newest to oldest, and starts again
-- here after a short page: taking the newest page every round, events
-- waiting on payments that stay unresolved would fill it and keep older
-- ones from ever being tried again in the window; past the window the
-- poller has settled their payments.
SELECT received_at, id, payload FROM processor_events WHERE applied_at IS NULL AND received_at > $2
ORDER BY received_at DESC, id DESC LIMIT $1

-- name: unapplied_after
-- The next page of the walk: unapplied's, older than the cursor ($3, $4)
-- that the page before ended on. A row comparison, which both databases
-- take as where to start in idx_processor_events_waiting: the same test
-- spelled with OR is only a filter to PostgreSQL, applied to every entry
-- from the newest on.
SELECT received_at, id, payload FROM processor_events WHERE applied_at IS NULL AND received_at > $2
	AND (received_at, id) < ($3, $4)
ORDER BY received_at DESC, id DESC LIMIT $1

-- name: events_of
-- Every event received for the payment reference $1, in the processor's
-- order: the admin's payment page.
SELECT id, type, created, received_at, applied_at FROM processor_events
WHERE payment_reference = $1 ORDER BY created, id
