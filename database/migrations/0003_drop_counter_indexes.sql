-- Partial indexes on the replay and rejection counters made every replay
-- rewrite all of the payments' indexes; the listing's filters now use
-- indexes on replayed_at and rejected_at, which a replay never changes
-- after the first (models.Payment).
DROP INDEX IF EXISTS idx_payments_flagged_created;
DROP INDEX IF EXISTS idx_payments_replayed_created;
DROP INDEX IF EXISTS idx_payments_rejected_created;
