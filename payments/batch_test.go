package payments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// These tests drive the batcher with a fake statement, to pin down how it
// queues, groups and answers. What a batch does in a real database is
// tested against PostgreSQL in create_test.go.

type testJob struct {
	key, name string
	answer    chan error
	sentAgain atomic.Int32 // how often sendAgain was called
}

func (j *testJob) batchKeys() []string { return []string{j.key} }
func (j *testJob) fail(err error)      { j.answer <- err }
func (j *testJob) sendAgain()          { j.sentAgain.Add(1) }

func newTestJob(key, name string) *testJob {
	return &testJob{key: key, name: name, answer: make(chan error, 1)}
}

func byName(a, b *testJob) int { return cmp.Compare(a.name, b.name) }

// newTestBatcher returns a batcher whose statements never count as stalled,
// however slowly a loaded test machine runs them.
func newTestBatcher(exec func(context.Context, []*testJob) error) *batcher[*testJob] {
	return &batcher[*testJob]{exec: exec, order: byName, stallAfter: time.Hour}
}

// fakeStatement records the batches it runs, and which of their jobs had
// been told they were sent again. While hold is set, a statement waits for
// it to be closed, so a test can queue jobs behind it.
type fakeStatement struct {
	mu      sync.Mutex
	batches [][]string
	again   [][]string    // per batch, its jobs marked sent again when it ran
	started chan struct{} // one value per statement started
	hold    chan struct{}
	fail    func(ctx context.Context, batch []*testJob) error
}

func newFakeStatement() *fakeStatement {
	return &fakeStatement{started: make(chan struct{}, 100)}
}

func (f *fakeStatement) exec(ctx context.Context, jobs []*testJob) error {
	names := make([]string, len(jobs))
	var again []string
	for i, j := range jobs {
		names[i] = j.name
		if j.sentAgain.Load() > 0 {
			again = append(again, j.name)
		}
	}
	f.mu.Lock()
	f.batches = append(f.batches, names)
	f.again = append(f.again, again)
	hold := f.hold
	f.mu.Unlock()
	f.started <- struct{}{}
	if hold != nil {
		<-hold
	}
	if f.fail != nil {
		if err := f.fail(ctx, jobs); err != nil {
			return err
		}
	}
	for _, j := range jobs {
		j.answer <- nil
	}
	return nil
}

// wantBatches checks the statements run, each its jobs' names.
func (f *fakeStatement) wantBatches(t *testing.T, want ...[]string) {
	t.Helper()
	if got := f.ran(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// wantSentAgain checks, statement by statement, which jobs ran marked as
// sent again (a statement of none is nil), and that each was marked once:
// a job must know it is sent again before the statement that may find
// what its first run committed.
func (f *fakeStatement) wantSentAgain(t *testing.T, jobs []*testJob, want ...[]string) {
	t.Helper()
	f.mu.Lock()
	got := slices.Clone(f.again)
	f.mu.Unlock()
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("jobs marked sent again per statement %q, want %q", got, want)
	}
	for _, j := range jobs {
		if n := j.sentAgain.Load(); n > 1 {
			t.Errorf("%s marked sent again %d times, want once at most", j.name, n)
		}
	}
}

func (f *fakeStatement) ran() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// busyBatcher returns a batcher whose first statement, carrying the job
// "first", is running and holds until the fake statement's hold is closed:
// what a test submits next queues behind it.
func busyBatcher(t *testing.T) (*batcher[*testJob], *fakeStatement, *testJob) {
	t.Helper()
	f := newFakeStatement()
	f.hold = make(chan struct{})
	b := newTestBatcher(f.exec)
	first := newTestJob("first", "first")
	go b.submit(first)
	<-f.started
	return b, f, first
}

// mustAnswer waits for a job's answer.
func mustAnswer(t *testing.T, j *testJob) error {
	t.Helper()
	select {
	case err := <-j.answer:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("job %s was never answered", j.name)
		return nil
	}
}

// submitAll submits jobs from goroutines of their own, as requests would,
// and returns once every one of them is queued or running.
func submitAll(b *batcher[*testJob], jobs ...*testJob) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { b.submit(j) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		queued := len(b.queue)
		b.mu.Unlock()
		if queued >= len(jobs) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return &wg
}

func TestBatcherSendsALoneJobAtOnce(t *testing.T) {
	t.Parallel()
	f := newFakeStatement()
	b := newTestBatcher(f.exec)
	j := newTestJob("k", "a")
	b.submit(j)
	if err := mustAnswer(t, j); err != nil {
		t.Fatal(err)
	}
	if got := f.ran(); !slices.EqualFunc(got, [][]string{{"a"}}, slices.Equal) {
		t.Errorf("batches %v, want [[a]]", got)
	}
}

func TestBatcherGathersWhatQueuesBehindAStatement(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)

	// Queued behind it: two jobs share key k1, so they cannot share a
	// statement; the rest arrive out of order.
	queued := []*testJob{newTestJob("k3", "d"), newTestJob("k1", "b"), newTestJob("k1", "b2"), newTestJob("k2", "c")}
	wg := submitAll(b, queued...)
	close(f.hold)
	wg.Wait()
	for _, j := range append(queued, first) {
		if err := mustAnswer(t, j); err != nil {
			t.Fatalf("%s: %v", j.name, err)
		}
	}
	got := f.ran()
	want := [][]string{{"first"}, {"b", "c", "d"}, {"b2"}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	// Which of b and b2 goes first depends on which goroutine queued
	// first; the batch is sorted and never holds both.
	second := strings.Join(got[1], ",")
	if second != "b,c,d" && second != "b2,c,d" {
		t.Errorf("second batch %v, want b (or b2), c, d in order", got[1])
	}
	if len(got[2]) != 1 || !strings.HasPrefix(got[2][0], "b") || got[2][0] == got[1][0] {
		t.Errorf("third batch %v, want the other of b and b2", got[2])
	}
}

func TestBatcherCapsABatch(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)

	var queued []*testJob
	for i := range maxBatch + 5 {
		queued = append(queued, newTestJob(fmt.Sprint("k", i), fmt.Sprintf("j%03d", i)))
	}
	wg := submitAll(b, queued...)
	close(f.hold)
	wg.Wait()
	for _, j := range append(queued, first) {
		mustAnswer(t, j)
	}
	got := f.ran()
	if len(got) != 3 || len(got[1]) != maxBatch || len(got[2]) != 5 {
		sizes := make([]int, len(got))
		for i, g := range got {
			sizes[i] = len(g)
		}
		t.Errorf("batch sizes %v, want [1 %d 5]", sizes, maxBatch)
	}
}

func TestBatcherRunsAFailedBatchJobByJob(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)
	poisoned := errors.New("bad row")
	// A statement fails as a whole if any of its jobs is "bad". (The
	// running statement reads this once its hold is closed, below.)
	f.fail = func(_ context.Context, batch []*testJob) error {
		for _, j := range batch {
			if j.name == "bad" {
				return poisoned
			}
		}
		return nil
	}

	good1, bad, good2 := newTestJob("k1", "good1"), newTestJob("k2", "bad"), newTestJob("k3", "good2")
	wg := submitAll(b, good1, bad, good2)
	close(f.hold)
	wg.Wait()
	mustAnswer(t, first)
	for _, j := range []*testJob{good1, good2} {
		if err := mustAnswer(t, j); err != nil {
			t.Errorf("%s: %v; another job's failure must not be its", j.name, err)
		}
	}
	if err := mustAnswer(t, bad); !errors.Is(err, poisoned) {
		t.Errorf("bad: %v, want its own error", err)
	}
	got := f.ran()
	want := [][]string{{"first"}, {"bad", "good1", "good2"}, {"bad"}, {"good1"}, {"good2"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	f.wantSentAgain(t, []*testJob{first, good1, bad, good2}, nil, nil, []string{"bad"}, []string{"good1"}, []string{"good2"})
}

func TestBatcherAnswersAPanickingStatement(t *testing.T) {
	t.Parallel()
	b := newTestBatcher(func(context.Context, []*testJob) error { panic("boom") })
	j := newTestJob("k", "a")
	b.submit(j)
	if err := mustAnswer(t, j); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("answer %v, want the panic as an error", err)
	}
	// The slot is free again: the next job runs.
	next := newTestJob("k", "b")
	b.submit(next)
	mustAnswer(t, next)
}

func TestBatcherStartsAnotherStatementBesideAStalledOne(t *testing.T) {
	t.Parallel()
	b, f, stalled := busyBatcher(t)
	b.mu.Lock()
	b.stallAfter = time.Hour
	b.mu.Unlock()

	// Within stallAfter of its start, a job queues behind it...
	queued := newTestJob("k2", "queued")
	wg := submitAll(b, queued)
	b.mu.Lock()
	inQueue := len(b.queue) == 1
	// ...and once the statement in flight is older than stallAfter (its
	// start moved back, rather than an hour waited), the next job starts
	// a statement of its own, which takes the queued job along.
	b.lastStart = b.lastStart.Add(-b.stallAfter - time.Millisecond)
	b.mu.Unlock()
	if !inQueue {
		close(f.hold) // let the statements end
		t.Fatal("a job started a statement of its own within stallAfter of the one in flight")
	}
	f.mu.Lock()
	release := f.hold
	f.hold = nil
	f.mu.Unlock()
	late := newTestJob("k3", "late")
	b.submit(late)
	mustAnswer(t, queued)
	mustAnswer(t, late)
	select {
	case <-stalled.answer:
		t.Fatal("the stalled statement answered before it was released")
	default:
	}
	close(release)
	wg.Wait()
	mustAnswer(t, stalled)
	if got := f.ran(); len(got) != 2 || !slices.Equal(got[1], []string{"late", "queued"}) {
		t.Errorf("batches %v, want [[first] [late queued]]", got)
	}
}

// A batcher capped at one statement, as SQLite's are, queues a job behind
// a stalled statement instead of starting another beside it.
func TestBatcherCappedAtOneQueuesBehindAStalledStatement(t *testing.T) {
	t.Parallel()
	b, f, stalled := busyBatcher(t)
	b.mu.Lock()
	b.most = 1
	b.lastStart = b.lastStart.Add(-b.stallAfter - time.Second) // stalled, by the rule
	b.mu.Unlock()
	queued := newTestJob("k2", "queued")
	wg := submitAll(b, queued)
	// submit queues the job and decides whether it leads a statement in one
	// critical section: once either shows, the decision is made.
	var inFlight, waiting int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		inFlight, waiting = b.inFlight, len(b.queue)
		b.mu.Unlock()
		if inFlight > 1 || waiting == 1 || time.Now().After(deadline) {
			break
		}
	}
	got := f.ran()
	close(f.hold)
	wg.Wait()
	if inFlight != 1 || waiting != 1 || len(got) != 1 {
		t.Fatalf("%d statements in flight, %d jobs queued, started %v; want the first alone in flight, the job queued behind it",
			inFlight, waiting, got)
	}
	mustAnswer(t, stalled)
	mustAnswer(t, queued)
	if got := f.ran(); len(got) != 2 || !slices.Equal(got[1], []string{"queued"}) {
		t.Errorf("batches %v, want [[first] [queued]]", got)
	}
}

// A service's batchers run one statement at a time on SQLite, which has
// one writer, and up to maxInFlight on PostgreSQL.
func TestBatchersOnSQLiteRunOneStatement(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, err := NewService(db.Gorm, Config{})
		if err != nil {
			t.Fatal(err)
		}
		want := maxInFlight
		if db.Dialect == "sqlite" {
			want = 1
		}
		for name, got := range map[string]int{"creates": s.creates.limit(), "changes": s.changes.limit(), "records": s.records.limit()} {
			if got != want {
				t.Errorf("%s: at most %d statements, want %d", name, got, want)
			}
		}
		if s.settles != nil && s.settles.limit() != want {
			t.Errorf("settles: at most %d statements, want %d", s.settles.limit(), want)
		}
	})
}

// errDown stands for an error that says the database is unavailable.
var errDown = errors.New("database unavailable")

func isDown(err error) bool { return errors.Is(err, errDown) }

// isDownOrLate is final as database.IsUnavailable is: a deadline counts as
// the database not answering.
func isDownOrLate(err error) bool { return isDown(err) || errors.Is(err, context.DeadlineExceeded) }

// A job that has waited a whole statementTimeout in the queue (behind
// statements stalled on a silent database) is answered, unavailable, and
// not sent; a statement's deadline is its oldest job's.
func TestBatcherKeepsEachJobWithinItsDeadline(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)
	var deadlines []time.Time
	exec := f.exec
	// The statements after the first, which is running already; b.exec is
	// read once the hold is closed.
	b.exec = func(ctx context.Context, jobs []*testJob) error {
		d, _ := ctx.Deadline()
		deadlines = append(deadlines, d)
		return exec(ctx, jobs)
	}
	old, aging, fresh := newTestJob("k1", "old"), newTestJob("k2", "aging"), newTestJob("k3", "fresh")
	wg := submitAll(b, old, aging, fresh)
	// As if old had queued a statementTimeout ago, and aging a little less.
	ageJobs(b, map[string]time.Duration{"old": 0, "aging": time.Second})
	close(f.hold)
	wg.Wait()
	mustAnswer(t, first)
	if err := mustAnswer(t, old); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("old: %v, want an answer that it was not sent in time (context.DeadlineExceeded)", err)
	}
	for _, j := range []*testJob{aging, fresh} {
		if err := mustAnswer(t, j); err != nil {
			t.Errorf("%s: %v, want it sent and answered", j.name, err)
		}
	}
	f.wantBatches(t, []string{"first"}, []string{"aging", "fresh"})
	// The second statement had what was left of aging's time: about a
	// second, not a fresh statementTimeout.
	if len(deadlines) != 1 || time.Until(deadlines[0]) > 2*time.Second {
		t.Errorf("deadlines %v, want one statement after the first, within aging's remaining second", deadlines)
	}
}

// ageJobs makes the queued jobs named in left look as if they had queued
// long ago, with that much of their time left.
func ageJobs(b *batcher[*testJob], left map[string]time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if d, ok := left[q.job.name]; ok {
			b.queue[i].since = time.Now().Add(d - statementTimeout)
		}
	}
}

// A statement cut by its oldest job's deadline answers that job, and only
// that job: a fresh job in it is sent again with the time it has left.
func TestBatcherAFreshJobOutlivesItsOldNeighboursDeadline(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)
	b.final = isDownOrLate
	// With the old job, a statement waits for its deadline (a lock held
	// that long); without it, it is answered at once. (The running
	// statement reads this once its hold is closed.)
	f.fail = func(ctx context.Context, batch []*testJob) error {
		if slices.ContainsFunc(batch, func(j *testJob) bool { return j.name == "old" }) {
			<-ctx.Done()
			return fmt.Errorf("statement: %w", ctx.Err())
		}
		return nil
	}
	old, fresh := newTestJob("k1", "old"), newTestJob("k2", "fresh")
	wg := submitAll(b, old, fresh)
	ageJobs(b, map[string]time.Duration{"old": 50 * time.Millisecond})
	close(f.hold)
	wg.Wait()
	mustAnswer(t, first)
	if err := mustAnswer(t, old); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("old: %v, want its deadline", err)
	}
	if err := mustAnswer(t, fresh); err != nil {
		t.Errorf("fresh: %v, want it sent again and answered: its own time was not up", err)
	}
	f.wantBatches(t, []string{"first"}, []string{"fresh", "old"}, []string{"fresh"})
	f.wantSentAgain(t, []*testJob{old, fresh}, nil, nil, []string{"fresh"})
	if old.sentAgain.Load() != 0 {
		t.Error("old was marked sent again; it was answered, not sent")
	}
}

// Run alone after a failed statement, a job whose time ran out meanwhile
// is answered unsent, and the jobs after it are still sent.
func TestBatcherRunsJobByJobWithinEachJobsDeadline(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)
	b.final = isDownOrLate
	f.fail = func(_ context.Context, batch []*testJob) error {
		switch {
		case len(batch) > 1:
			return errors.New("deadlock detected")
		case batch[0].name == "x":
			time.Sleep(100 * time.Millisecond) // y's time runs out meanwhile
		}
		return nil
	}
	x, y, z := newTestJob("k1", "x"), newTestJob("k2", "y"), newTestJob("k3", "z")
	wg := submitAll(b, x, y, z)
	ageJobs(b, map[string]time.Duration{"y": 50 * time.Millisecond})
	close(f.hold)
	wg.Wait()
	mustAnswer(t, first)
	for _, j := range []*testJob{x, z} {
		if err := mustAnswer(t, j); err != nil {
			t.Errorf("%s: %v, want it run alone and answered", j.name, err)
		}
	}
	if err := mustAnswer(t, y); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("y: %v, want it answered unsent, its time up", err)
	}
	f.wantBatches(t, []string{"first"}, []string{"x", "y", "z"}, []string{"x"}, []string{"z"})
	f.wantSentAgain(t, []*testJob{x, y, z}, nil, nil, []string{"x"}, []string{"z"})
}

func TestBatcherStopsRunningJobByJobWhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	b, f, first := busyBatcher(t)
	b.final = isDown
	// The batch fails for its bad job; run alone, the first job ("a")
	// finds the database gone.
	f.fail = func(_ context.Context, batch []*testJob) error {
		switch {
		case len(batch) > 1:
			return errors.New("bad row")
		case batch[0].name == "a":
			return errDown
		}
		return nil
	}
	a, bad, c := newTestJob("k1", "a"), newTestJob("k2", "bad"), newTestJob("k3", "c")
	wg := submitAll(b, a, bad, c)
	close(f.hold)
	wg.Wait()
	mustAnswer(t, first)
	for _, j := range []*testJob{a, bad, c} {
		if err := mustAnswer(t, j); !isDown(err) {
			t.Errorf("%s: %v, want the unavailable statement's error", j.name, err)
		}
	}
	want := [][]string{{"first"}, {"a", "bad", "c"}, {"a"}}
	if got := f.ran(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}
