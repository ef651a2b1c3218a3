package database

import (
	"fmt"

	"gorm.io/gorm"
)

// EventsChannelPrefix and SequencedChannelPrefix name the PostgreSQL
// notification channels of the outbox, each followed by the schema that
// holds payment_events (channels are per database, and several schemas may
// hold a CMPay each: the tests do).
//
//   - "cmpay_events:<schema>": sent by every transaction that writes events,
//     as it commits; the payload lists the seq of each event it wrote ("*"
//     when there are too many to list). PostgreSQL delivers notifications in
//     commit order, which is what lets the sequencer number events in the
//     order their transactions committed (package events).
//   - "cmpay_sequenced:<schema>": sent by the sequencer when it has given
//     events their ids; the payload is the highest id.
const (
	EventsChannelPrefix    = "cmpay_events:"
	SequencedChannelPrefix = "cmpay_sequenced:"
)

// maxListedSeqs caps how many seqs one notification lists, well inside
// PostgreSQL's 8000-byte payload limit; a transaction that writes more
// sends "*" instead (the sequencer then takes every visible event in seq
// order).
const maxListedSeqs = 300

// migrateEventsNotify installs, on PostgreSQL, the statement-level trigger
// through which every statement that inserts events announces them when its
// transaction commits. A trigger rather than a pg_notify in each statement:
// every way of inserting events announces them, and a statement that
// inserts none (a batch of replays) sends nothing and so does not take the
// notification queue's commit lock.
func migrateEventsNotify(tx *gorm.DB) error {
	stmts := []string{
		`CREATE OR REPLACE FUNCTION cmpay_payment_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	seqs text;
BEGIN
	SELECT count(*), string_agg(seq::text, ',' ORDER BY seq) INTO n, seqs FROM inserted;
	IF n = 0 THEN
		RETURN NULL;
	END IF;
	IF n > ` + fmt.Sprint(maxListedSeqs) + ` THEN
		seqs := '*';
	END IF;
	PERFORM pg_notify('` + EventsChannelPrefix + `' || TG_TABLE_SCHEMA, seqs);
	RETURN NULL;
END
$$`,
		`DROP TRIGGER IF EXISTS payment_events_notify ON payment_events`,
		`CREATE TRIGGER payment_events_notify AFTER INSERT ON payment_events
			REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION cmpay_payment_events_notify()`,
	}
	for _, s := range stmts {
		if err := tx.Exec(s).Error; err != nil {
			return fmt.Errorf("install the events trigger: %w", err)
		}
	}
	return nil
}
