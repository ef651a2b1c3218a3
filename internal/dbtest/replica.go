package dbtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
)

// Replicated is a primary and a streaming standby of a test's own.
type Replicated struct {
	Primary, Standby *Cluster
	// URL names both servers, primary first, with
	// target_session_attrs=read-write: pgx connects to whichever of them
	// accepts writes, so a server given this URL follows a failover
	// without a restart.
	URL string
}

// ReplicationOptions choose the kind of standby.
type ReplicationOptions struct {
	// Synchronous makes the primary acknowledge a commit only once the
	// standby has flushed its WAL (synchronous_standby_names = '*',
	// synchronous_commit = on): no acknowledged write is lost when the
	// primary dies and the standby is promoted. Its price in a test: while
	// the standby is down, every commit on the primary waits.
	Synchronous bool
}

// StartReplicated starts a primary and a standby cloned from it with
// pg_basebackup -R, and waits until the standby streams (and, when
// synchronous, until the primary counts it as its synchronous standby).
// Both are stopped and removed when the test ends.
//
// Both run with fsync=off, like every test cluster: the faults under test
// are processes dying, not the machine, and what a dead process wrote is
// still in the OS's page cache.
func StartReplicated(t testing.TB, opts ReplicationOptions) *Replicated {
	t.Helper()
	primarySettings := []string{"wal_level=replica", "max_wal_senders=4", "synchronous_commit=on"}
	if opts.Synchronous {
		primarySettings = append(primarySettings, "synchronous_standby_names=*")
	}
	primary := newCluster(t, primarySettings...)
	primary.initdb()
	primary.Start()

	// The standby's own synchronous_standby_names is empty (given on the
	// command line, so that nothing copied from the primary can set it):
	// once promoted it must not wait for a standby of its own, which it
	// does not have, or its first commit would hang. Its
	// wal_retrieve_retry_interval is 200 ms, not 5 s: a standby that has
	// just lost its stream waits that long before it acts on a promote
	// request (docs/benchmarks/2026-12-02-failover.md), which made one
	// failover test in two take 5 s longer.
	standby := newCluster(t, "synchronous_standby_names=", "hot_standby=on", "wal_level=replica", "synchronous_commit=on",
		"wal_retrieve_retry_interval=200ms")
	// -R writes primary_conninfo and standby.signal; -c fast starts the
	// backup's checkpoint at once instead of spreading it out.
	if out, err := standby.command("pg_basebackup", "-D", standby.data(), "-R", "-X", "stream", "-c", "fast",
		"-h", "127.0.0.1", "-p", fmt.Sprint(primary.port), "-U", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	standby.Start()

	want := "async"
	if opts.Synchronous {
		want = "sync"
	}
	waitForStandby(t, primary, want)
	return &Replicated{
		Primary: primary,
		Standby: standby,
		URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
			primary.port, standby.port),
	}
}

// waitForStandby polls the primary until a standby streams to it with the
// given sync_state.
func waitForStandby(t testing.TB, primary *Cluster, syncState string) {
	t.Helper()
	db, err := database.Open(primary.URL, database.Options{MaxOpenConns: 1, Logger: quiet})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer database.Close(db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var n int64
		err := db.WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = ?`, syncState).Scan(&n).Error
		if err == nil && n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("dbtest: no %s standby streaming after 30s (last error: %v)\nprimary log:\n%s", syncState, err, primary.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
