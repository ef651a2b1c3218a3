package database_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// servedBy returns the port of the server that answered a query on db.
func servedBy(t *testing.T, db *gorm.DB) int {
	t.Helper()
	var port int
	if err := db.Raw(`SELECT inet_server_port()`).Scan(&port).Error; err != nil {
		t.Fatalf("which server: %v", err)
	}
	return port
}

// waitUntil polls cond every 20 ms and returns how long it took to hold.
func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// caughtUp waits until standby has replayed what primary has flushed, so
// that a check now finds it fit.
func caughtUp(t *testing.T, primary, standby *gorm.DB) {
	t.Helper()
	var lsn string
	if err := primary.Raw(`SELECT pg_current_wal_flush_lsn()::text`).Scan(&lsn).Error; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the standby catches up", 10*time.Second, func() bool {
		var done bool
		err := standby.Raw(`SELECT pg_last_wal_replay_lsn() >= ?::pg_lsn`, lsn).Scan(&done).Error
		return err == nil && done
	})
}

// TestReplica runs a Replica against a real streaming replica through its
// states: fit, idle, lagging (replay paused), caught up, stopped, back;
// then Read's fallback when the replica fails a read.
func TestReplica(t *testing.T) {
	t.Parallel()
	rep := dbtest.StartReplicated(t, dbtest.ReplicationOptions{})
	quiet := slog.New(slog.DiscardHandler)
	primary := open(t, rep.Primary.URL, database.Options{Logger: quiet})
	standby := open(t, rep.Standby.URL, database.Options{Logger: quiet}) // straight to the standby, for the test's own queries
	if err := primary.Exec(`CREATE TABLE items (n integer)`).Error; err != nil {
		t.Fatal(err)
	}
	caughtUp(t, primary, standby)
	const maxLag, interval = time.Second, 100 * time.Millisecond
	r, err := database.OpenReplica(primary, rep.Standby.URL, database.ReplicaOptions{
		MaxLag: maxLag, CheckInterval: interval, Pool: database.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// While the replica stops, the reader may still be its pool until the
	// next check: a read failing then is "not yet", as a poll goes (Read,
	// which the server uses, retries such a read on the primary).
	answeredBy := func() int {
		var port int
		if err := r.Reader().Raw(`SELECT inet_server_port()`).Scan(&port).Error; err != nil {
			return 0
		}
		return port
	}
	onStandby := func() bool { return answeredBy() == rep.Standby.Port() }
	onPrimary := func() bool { return answeredBy() == rep.Primary.Port() }

	// Fit from the first read: OpenReplica checks before it returns.
	if !onStandby() {
		t.Fatal("a fresh, caught-up replica does not serve reads")
	}
	// A write there is refused as read-only, which a client would see as
	// SERVICE_UNAVAILABLE (and a caller of Read as a fallback).
	if err := r.Reader().Exec(`INSERT INTO items VALUES (0)`).Error; !database.IsUnavailable(err) {
		t.Errorf("a write on the replica: %v, want a read-only error that is unavailable", err)
	}

	// Idle: nothing is committed for three times MaxLag. A lag measured
	// from the last replayed transaction's timestamp would grow and push
	// reads off a replica that is fully caught up; this one must not.
	for end := time.Now().Add(3 * maxLag); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !onStandby() {
			t.Fatal("an idle primary made its caught-up replica unfit")
		}
	}

	pausedReplay(t, r, primary, standby, onPrimary, onStandby, maxLag)

	// Stopped: reads go to the primary within a check or so.
	rep.Standby.Stop()
	took := waitUntil(t, "reads move to the primary when the replica stops", 5*time.Second, onPrimary)
	t.Logf("replica stopped: reads moved to the primary after %s", took.Round(time.Millisecond))
	rep.Standby.Start()
	took = waitUntil(t, "reads return to the replica once it is back", 10*time.Second, onStandby)
	t.Logf("replica back: reads on it after %s", took.Round(time.Millisecond))

	readFallsBack(t, rep, primary, standby, quiet)
}

// pausedReplay pauses the standby's replay while the primary keeps
// committing: reads move to the primary once the replica is maxLag behind,
// not before, and come back once replay resumes and it has caught up.
func pausedReplay(t *testing.T, r *database.Replica, primary, standby *gorm.DB, onPrimary, onStandby func() bool, maxLag time.Duration) {
	t.Helper()
	pausing := time.Now()
	if err := standby.Exec(`SELECT pg_wal_replay_pause()`).Error; err != nil {
		t.Fatal(err)
	}
	writes := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		defer close(writerDone)
		for n := 1; ; n++ {
			select {
			case <-writes:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if err := primary.Exec(`INSERT INTO items VALUES (?)`, n).Error; err != nil {
				writerDone <- err
				return
			}
		}
	}()
	waitUntil(t, "reads move to the primary while replay is paused", maxLag+3*time.Second, onPrimary)
	// Measured from before the pause. The lag is judged cautiously (a
	// sample is stamped before the primary is asked, and can be up to an
	// interval older than the pause), so reads may move somewhat before a
	// full MaxLag: measured 923 ms to 1.12 s. The floor is half of MaxLag;
	// a check that moved reads early would move them within an interval.
	took := time.Since(pausing)
	if took < maxLag/2 {
		t.Errorf("reads left the replica %s after it stopped replaying; it was not yet %s behind", took, maxLag)
	}
	t.Logf("replay paused: reads moved to the primary after %s (MaxLag %s)", took.Round(time.Millisecond), maxLag)
	var onReader, onReplica int
	if err := r.Reader().Raw(`SELECT count(*) FROM items`).Scan(&onReader).Error; err != nil {
		t.Fatal(err)
	}
	if err := standby.Raw(`SELECT count(*) FROM items`).Scan(&onReplica).Error; err != nil {
		t.Fatal(err)
	}
	if onReplica >= onReader {
		t.Errorf("the paused replica has %d rows, the reader %d: the replica was not behind", onReplica, onReader)
	}

	// Caught up again once replay resumes.
	if err := standby.Exec(`SELECT pg_wal_replay_resume()`).Error; err != nil {
		t.Fatal(err)
	}
	took = waitUntil(t, "reads return to the replica once it has caught up", 5*time.Second, onStandby)
	t.Logf("replay resumed: reads back on the replica after %s", took.Round(time.Millisecond))
	close(writes)
	if err := <-writerDone; err != nil {
		t.Fatalf("writer: %v", err)
	}
}

// readFallsBack checks that Read falls back to the primary at once when the
// replica fails a read, without waiting for the next check: checks far
// apart here, so only the first one, in OpenReplica, runs.
func readFallsBack(t *testing.T, rep *dbtest.Replicated, primary, standby *gorm.DB, quiet *slog.Logger) {
	t.Helper()
	caughtUp(t, primary, standby)
	once, err := database.OpenReplica(primary, rep.Standby.URL, database.ReplicaOptions{
		CheckInterval: time.Hour, Pool: database.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer once.Close()
	if servedBy(t, once.Reader()) != rep.Standby.Port() {
		t.Fatal("the replica does not serve reads")
	}
	rep.Standby.Stop()
	var port int
	err = once.Read(func(db *gorm.DB) error { return db.Raw(`SELECT inet_server_port()`).Scan(&port).Error })
	if err != nil || port != rep.Primary.Port() {
		t.Errorf("Read with the replica gone: port %d, %v; want the primary's answer", port, err)
	}
	if servedBy(t, once.Reader()) != rep.Primary.Port() {
		t.Error("after a failed read the replica still serves reads before any check vouched for it")
	}
	// An error that is the query's own fault is returned, not retried.
	calls := 0
	err = once.Read(func(db *gorm.DB) error { calls++; return db.Exec(`SELECT * FROM no_such_table`).Error })
	if err == nil || calls != 1 {
		t.Errorf("a bad query: %v after %d calls, want its error after 1", err, calls)
	}
}

func TestOpenReplicaConfigurations(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	sqliteDB := open(t, "sqlite:"+t.TempDir()+"/a.db", database.Options{Logger: quiet})

	// No replica: every read goes to the primary, with nothing to check.
	r, err := database.OpenReplica(sqliteDB, "", database.ReplicaOptions{})
	if err != nil || r.Reader() != sqliteDB {
		t.Errorf("no replica URL: %v, reader %p, want the primary %p", err, r.Reader(), sqliteDB)
	}
	if err := r.Close(); err != nil {
		t.Error(err)
	}

	// A replica beside SQLite, or a replica that is not PostgreSQL: refused.
	for _, tc := range []struct {
		primary *gorm.DB
		url     string
	}{
		{sqliteDB, "postgres://u:secret@127.0.0.1:1/db"},
		{dbtest.Postgres(t).Gorm, "sqlite:replica.db"},
		{dbtest.Postgres(t).Gorm, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=nonsense"},
	} {
		if _, err := database.OpenReplica(tc.primary, tc.url, database.ReplicaOptions{}); err == nil {
			t.Errorf("OpenReplica(%s, %q) succeeded, want an error", tc.primary.Dialector.Name(), tc.url)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}

	// A replica that is down at start is no reason not to start: reads go
	// to the primary.
	primary := dbtest.Postgres(t).Gorm
	r, err = database.OpenReplica(primary, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", closedPort(t)),
		database.ReplicaOptions{Pool: database.Options{Logger: quiet}})
	if err != nil {
		t.Fatalf("a replica that is down: %v, want no error", err)
	}
	defer r.Close()
	if r.Reader() != primary {
		t.Error("a replica that is down serves reads")
	}
}
