-- The events sequencer's record on PostgreSQL: one row per pass, numbering
-- the events whose seqs it lists first_id, first_id+1, …, last_id, in that
-- order. One row per pass rather than a write per event keeps numbering off
-- the events' own rows, which are never updated. (SQLite needs none: an
-- event's id is its seq.) An early development version notified through a
-- trigger, which goes.
CREATE TABLE IF NOT EXISTS event_batches (last_id bigint PRIMARY KEY, first_id bigint NOT NULL, seqs bigint[] NOT NULL);
DROP TRIGGER IF EXISTS payment_events_notify ON payment_events;
DROP FUNCTION IF EXISTS cmpay_payment_events_notify();
