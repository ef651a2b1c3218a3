-- The deliveries sweep (package events) walks from a saved frontier and
-- no longer reads the kept FAILED deliveries behind it: it finds those
-- whose keep (WEBHOOK_FAILED_KEEP) is over through this index, which holds
-- only the FAILED ones, by their last attempt (else their creation).
-- GORM's tags cannot declare an index on an expression.
CREATE INDEX IF NOT EXISTS idx_webhook_deliveries_failed_at ON webhook_deliveries ((COALESCE(last_attempt_at, created_at)))
WHERE status = 'FAILED';

-- The resent deliveries (a resend sets expires_at; the sequencer never
-- does), which may be delivered or cancelled after the walk passed them:
-- the sweep finds those behind its frontier here. Few rows: only support's
-- resends, so a claim or record of any other delivery adds no entry.
CREATE INDEX IF NOT EXISTS idx_webhook_deliveries_resent ON webhook_deliveries (id)
WHERE expires_at IS NOT NULL;
