package events

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// walkTable stores, made at base, kept FAILED deliveries with ids up to
// failed (last tried at base+4h), DELIVERED ones after them up to
// delivered, and one DELIVERED delivery 10 h younger after those, each
// with an attempt. walkCutoffs keeps the FAILED ones and lets the others
// but the young one go.
func walkTable(t *testing.T, db dbtest.DB, base time.Time, failed, delivered int64) {
	t.Helper()
	last := base.Add(4 * time.Hour)
	addDeliveries(t, db, []delivery{{id: 1, status: "FAILED", created: base, lastAttempt: &last}})
	copyDelivery(t, db, 1, failed)
	addDeliveries(t, db, []delivery{{id: failed + 1, status: "DELIVERED", created: base}})
	copyDelivery(t, db, failed+1, delivered)
	addDeliveries(t, db, []delivery{{id: delivered + 1, status: "DELIVERED", created: base.Add(10 * time.Hour)}})
}

// walkCutoffs are the cutoffs walkTable's deliveries are swept by.
func walkCutoffs(base time.Time) cutoffs {
	return cutoffs{old: base.Add(5 * time.Hour), failed: base.Add(3 * time.Hour)}
}

// countDeliveries counts the deliveries left with status and ids in
// [from, to], and those of them with attempts left.
func countDeliveries(t *testing.T, db dbtest.DB, status string, from, to int64) (deliveries, attempts int64) {
	t.Helper()
	if err := db.Gorm.Model(&models.WebhookDelivery{}).Where("status = ? AND id >= ? AND id <= ?", status, from, to).
		Count(&deliveries).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Model(&models.WebhookAttempt{}).Where(`delivery_id IN
		(SELECT id FROM webhook_deliveries WHERE status = ? AND id >= ? AND id <= ?)`, status, from, to).
		Distinct("delivery_id").Count(&attempts).Error; err != nil {
		t.Fatal(err)
	}
	return deliveries, attempts
}

// checkLeft fails t unless each of want's ranges holds exactly its
// count of deliveries with its status, and as many with attempts, and no
// attempt outlived its delivery.
func checkLeft(t *testing.T, db dbtest.DB, what string, want []left) {
	t.Helper()
	for _, w := range want {
		d, a := countDeliveries(t, db, w.status, w.from, w.to)
		if d != w.n || a != w.n {
			t.Errorf("%s: %d %s deliveries in [%d, %d], %d with attempts; want %d", what, d, w.status, w.from, w.to, a, w.n)
		}
	}
	var orphans int64
	if err := db.Gorm.Model(&models.WebhookAttempt{}).Where("delivery_id NOT IN (SELECT id FROM webhook_deliveries)").
		Count(&orphans).Error; err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Errorf("%s: %d attempts left without their delivery", what, orphans)
	}
}

// left is a count of deliveries with a status among the ids [from, to].
type left struct {
	status   string
	from, to int64
	n        int64
}

// stopWalkAt makes deleting the attempts of the delivery id run then
// (a statement on SQLite, plain SQL on PostgreSQL) in the deleting
// transaction, until the returned func is called: a fault the database
// itself raises, at a batch of the walk the test chooses.
func stopWalkAt(t *testing.T, db dbtest.DB, id int64, sqliteThen, postgresThen string) func() {
	t.Helper()
	// A trigger takes no parameters: the id is written in.
	stmts := []string{fmt.Sprintf(`CREATE TRIGGER walk_stop BEFORE DELETE ON webhook_attempts WHEN old.delivery_id = %d
		BEGIN %s; END`, id, sqliteThen)}
	drop := `DROP TRIGGER walk_stop`
	if db.Dialect == "postgres" {
		stmts = []string{`CREATE FUNCTION walk_stop() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN ` + postgresThen + `; RETURN OLD; END $$`,
			fmt.Sprintf(`CREATE TRIGGER walk_stop BEFORE DELETE ON webhook_attempts FOR EACH ROW
			WHEN (OLD.delivery_id = %d) EXECUTE FUNCTION walk_stop()`, id)}
		drop = `DROP TRIGGER walk_stop ON webhook_attempts`
	}
	for _, s := range stmts {
		if err := db.Gorm.Exec(s).Error; err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		if err := db.Gorm.Exec(drop).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// TestInterruptedWalkResumes: a first walk over many deliveries (after an
// upgrade, or after the sweep was off) that fails after its first batch
// has saved the frontier that batch reached, and the next sweep walks on
// from there: it does not read the kept FAILED deliveries again, and
// deletes the DELIVERED ones the failed batch left.
func TestInterruptedWalkResumes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		c := walkCutoffs(base)
		// The first batch: 1000 kept; the second: 500 to delete; then 1501,
		// young.
		walkTable(t, db, base, sweepBatch, 1500)
		resume := stopWalkAt(t, db, 1200, `SELECT RAISE(ABORT, 'the walk is stopped')`,
			`RAISE EXCEPTION 'the walk is stopped'`)
		if _, err := st.sweepDeliveries(ctx, c); err == nil {
			t.Fatal("the sweep stopped in its second batch returned no error")
		}
		if got := sweepFrontier(t, db); got != sweepBatch {
			t.Errorf("after a walk stopped in its second batch the frontier is %d; want %d, the first batch's", got, sweepBatch)
		}
		checkLeft(t, db, "stopped", []left{{"FAILED", 1, 1000, 1000}, {"DELIVERED", 1001, 1501, 501}})

		resume()
		done, err := st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if done.read != 501 || done.deleted != 500 || done.yielded {
			t.Errorf("the next sweep read %d rows, deleted %d (yielded %t); want 501 (1001 to 1501), 500",
				done.read, done.deleted, done.yielded)
		}
		if got := sweepFrontier(t, db); got != 1500 {
			t.Errorf("frontier %d after the walk ended; want 1500", got)
		}
		checkLeft(t, db, "resumed", []left{{"FAILED", 1, 1000, 1000}, {"DELIVERED", 1001, 1500, 0}, {"DELIVERED", 1501, 1501, 1}})
	})
}

// TestWalkStopsWhenTheFrontierMoves: a sweep whose save after a batch
// finds the frontier moved by another sweep (a leader handing over) stops
// its walk there, with no error, and leaves the frontier as the other
// saved it; the next sweep walks on from there.
func TestWalkStopsWhenTheFrontierMoves(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		c := walkCutoffs(base)
		walkTable(t, db, base, sweepBatch, 2500)
		// Deleting the second batch, "another sweep" saves 1100.
		const moved = `UPDATE event_cursors SET frontier = 1100 WHERE name = 'delivery_sweep'`
		resume := stopWalkAt(t, db, 1200, moved, moved)
		done, err := st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if done.read != 2*sweepBatch || !done.yielded {
			t.Errorf("the sweep that lost the frontier read %d rows (yielded %t); want %d, and to yield",
				done.read, done.yielded, 2*sweepBatch)
		}
		if got := sweepFrontier(t, db); got != 1100 {
			t.Errorf("frontier %d; want 1100, as the other sweep saved it", got)
		}
		checkLeft(t, db, "yielded", []left{{"FAILED", 1, 1000, 1000}, {"DELIVERED", 1001, 2000, 0}, {"DELIVERED", 2001, 2501, 501}})

		resume()
		done, err = st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if done.read != 501 || done.deleted != 500 || done.yielded {
			t.Errorf("the next sweep read %d rows, deleted %d (yielded %t); want 501 (2001 to 2501), 500",
				done.read, done.deleted, done.yielded)
		}
		if got := sweepFrontier(t, db); got != 2500 {
			t.Errorf("frontier %d after the walk ended; want 2500", got)
		}
		checkLeft(t, db, "walked on", []left{{"FAILED", 1, 1000, 1000}, {"DELIVERED", 1001, 2501, 1}})
	})
}

// TestSweepsAtOnceAgree: two sweeps (two instances' stores) walking the
// same deliveries at once, each saving the frontier after its batches,
// end with the frontier where one sweep alone leaves it (before the
// pending delivery), every finished old delivery deleted, the kept ones
// kept; and the next sweep reads only what lies past it.
func TestSweepsAtOnceAgree(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := t.Context()
		base := now()
		c := walkCutoffs(base)
		last := base.Add(4 * time.Hour)
		// 1 to 1500 kept; 1501 to 3000 delivered; 3001 to 3500 kept; 3501
		// pending; 3502 to 4000 delivered; 4001 young.
		addDeliveries(t, db, []delivery{{id: 1, status: "FAILED", created: base, lastAttempt: &last}})
		copyDelivery(t, db, 1, 1500)
		addDeliveries(t, db, []delivery{{id: 1501, status: "DELIVERED", created: base}})
		copyDelivery(t, db, 1501, 3000)
		addDeliveries(t, db, []delivery{{id: 3001, status: "FAILED", created: base, lastAttempt: &last}})
		copyDelivery(t, db, 3001, 3500)
		addDeliveries(t, db, []delivery{{id: 3501, status: "PENDING", created: base}, {id: 3502, status: "DELIVERED", created: base}})
		copyDelivery(t, db, 3502, 4000)
		addDeliveries(t, db, []delivery{{id: 4001, status: "DELIVERED", created: base.Add(10 * time.Hour)}})

		stores := []store{openStore(t, db), openStore(t, db)}
		start := make(chan struct{})
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i, st := range stores {
			wg.Go(func() {
				<-start
				_, errs[i] = st.sweepDeliveries(ctx, c)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("sweep %d: %v", i, err)
			}
		}
		if got := sweepFrontier(t, db); got != 3500 {
			t.Errorf("frontier %d after two sweeps at once; want 3500, before the pending one", got)
		}
		checkLeft(t, db, "two sweeps", []left{{"FAILED", 1, 3500, 2000}, {"DELIVERED", 1, 4000, 0},
			{"PENDING", 3501, 3501, 1}, {"DELIVERED", 4001, 4001, 1}})
		done, err := stores[0].sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if done.read != 2 || done.deleted != 0 {
			t.Errorf("the next sweep read %d rows and deleted %d; want 2 (3501, pending; 4001, young), none", done.read, done.deleted)
		}
	})
}
