-- An operation's processor key is 'cmpay_' followed by its id, the primary
-- key, in every statement that inserts one: unique already. Its own unique
-- index cost every create an index entry (about 100 bytes of WAL) and was
-- never read.
DROP INDEX IF EXISTS idx_processor_operations_key;
