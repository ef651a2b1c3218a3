-- The retrier reads the events not applied yet through
-- idx_processor_events_waiting, keyed on (received_at, id) in the order it
-- walks them (models.ProcessorEvent). The index it replaces, keyed on
-- applied_at, held the same rows but not in that order, and cost every new
-- event an entry of its own.
DROP INDEX IF EXISTS idx_processor_events_unapplied;
