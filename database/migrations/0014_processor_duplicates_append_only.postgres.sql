-- A duplicate the processor holds (models.ProcessorDuplicate) is evidence
-- of money moved twice: its row is written once when found and never
-- changed or removed, so that what staff were shown stays what was found.
-- An UPDATE or DELETE of one fails, and so does a TRUNCATE of the table
-- while it holds any. GORM's tags cannot declare a trigger.
CREATE OR REPLACE FUNCTION processor_duplicates_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		IF EXISTS (SELECT 1 FROM processor_duplicates) THEN
			RAISE EXCEPTION 'processor duplicates are append-only: TRUNCATE refused';
		END IF;
		RETURN NULL;
	END IF;
	RAISE EXCEPTION 'processor duplicates are append-only: % refused', TG_OP;
END $$;

CREATE OR REPLACE TRIGGER processor_duplicates_append_only BEFORE UPDATE OR DELETE ON processor_duplicates
FOR EACH ROW EXECUTE FUNCTION processor_duplicates_append_only();

CREATE OR REPLACE TRIGGER processor_duplicates_no_truncate BEFORE TRUNCATE ON processor_duplicates
FOR EACH STATEMENT EXECUTE FUNCTION processor_duplicates_append_only();
