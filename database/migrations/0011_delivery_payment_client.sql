-- Webhook deliveries carry their event's payment and client (payment_id,
-- client_id: AutoMigrate adds them, '' by default), which the pass that
-- makes deliveries now writes, so that the admin's filters by payment and
-- by client read the deliveries' own indexes and no request pays for an
-- index on payment_events. The deliveries already made get them from
-- their event; one whose event is already swept (a finished delivery,
-- which the sweep deletes in turn) keeps ''. The table is small, as the
-- sweep keeps it, so this reads it once.
UPDATE webhook_deliveries SET payment_id = e.payment_id, client_id = e.client_id
FROM payment_events e
WHERE e.seq = webhook_deliveries.event_seq AND webhook_deliveries.payment_id = '';

-- Indexes an unreleased build made, which the filters no longer use and
-- which would cost every event, claim and record an entry: gone from a
-- development database too.
DROP INDEX IF EXISTS idx_payment_events_payment;
DROP INDEX IF EXISTS idx_payment_events_client;
DROP INDEX IF EXISTS idx_webhook_deliveries_status;
-- An unreleased build indexed every payment's processor reference, which
-- cost every create an entry; idx_payments_external_reference leaves the
-- sandbox's out.
DROP INDEX IF EXISTS idx_payments_processor_reference;
