-- The late check's partial index first held the resent operations not yet
-- read once; it now holds those not yet read twice, under a new name
-- (idx_processor_operations_late_reads): AutoMigrate never redefines an
-- index that exists, so the old name would have kept the old predicate.
DROP INDEX IF EXISTS idx_processor_operations_late_check;
