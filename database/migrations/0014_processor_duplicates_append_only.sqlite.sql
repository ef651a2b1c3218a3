-- A duplicate the processor holds (models.ProcessorDuplicate) is evidence
-- of money moved twice: its row is written once when found and never
-- changed or removed. An UPDATE or DELETE of one fails. (SQLite has no
-- TRUNCATE; a DELETE without WHERE fires the DELETE trigger.)
CREATE TRIGGER IF NOT EXISTS processor_duplicates_no_update BEFORE UPDATE ON processor_duplicates
BEGIN SELECT RAISE(ABORT, 'processor duplicates are append-only: UPDATE refused'); END;

CREATE TRIGGER IF NOT EXISTS processor_duplicates_no_delete BEFORE DELETE ON processor_duplicates
BEGIN SELECT RAISE(ABORT, 'processor duplicates are append-only: DELETE refused'); END;
