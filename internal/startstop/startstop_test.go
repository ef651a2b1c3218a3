package startstop_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/cmpay/cmpay/internal/startstop"
)

// TestMain fails the run if a test leaves a goroutine running: every
// service here must be stopped by its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter is a service body that counts its runs and says when one is
// running and when it has returned.
type counter struct {
	runs    atomic.Int32
	running chan struct{} // one value per run that started
	ended   atomic.Int32
}

func newCounter() *counter { return &counter{running: make(chan struct{}, 100)} }

func (c *counter) run(ctx context.Context) {
	c.runs.Add(1)
	c.running <- struct{}{}
	<-ctx.Done()
	c.ended.Add(1)
}

// waitRunning fails the test unless a run has started within a few
// seconds.
func (c *counter) waitRunning(t *testing.T) {
	t.Helper()
	select {
	case <-c.running:
	case <-time.After(5 * time.Second):
		t.Fatal("the service did not run within 5s of Start")
	}
}

func TestStartRunsOnceAndStopWaits(t *testing.T) {
	t.Parallel()
	c := newCounter()
	r := startstop.Func(c.run)
	r.Stop() // before Start: nothing to stop
	for range 3 {
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	c.waitRunning(t)
	if !r.Running() {
		t.Error("not running after Start")
	}
	r.Stop()
	if c.ended.Load() != 1 {
		t.Errorf("Stop returned with %d runs ended, want 1: it must wait for the run to return", c.ended.Load())
	}
	r.Stop()
	if got := c.runs.Load(); got != 1 || r.Running() {
		t.Errorf("three Starts and two Stops: %d runs, running %v; want 1 run, stopped", got, r.Running())
	}

	// Started again after a Stop, it runs again.
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.waitRunning(t)
	r.Stop()
	if c.runs.Load() != 2 || c.ended.Load() != 2 {
		t.Errorf("after a restart: %d runs, %d ended; want 2 and 2", c.runs.Load(), c.ended.Load())
	}
}

// The context given to Start ends the run too; Stop then has nothing to
// wait for but still marks the service stopped.
func TestStartContextEndsTheRun(t *testing.T) {
	t.Parallel()
	c := newCounter()
	r := startstop.Func(c.run)
	ctx, cancel := context.WithCancel(t.Context())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitRunning(t)
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for c.ended.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not end within 5s of its context")
		}
		time.Sleep(time.Millisecond)
	}
	r.Stop()
	if r.Running() {
		t.Error("running after Stop")
	}
}

func TestInitFailureRunsNothing(t *testing.T) {
	t.Parallel()
	c := newCounter()
	fail := errors.New("port in use")
	tries := 0
	r := startstop.InitFunc(func(context.Context) error {
		tries++
		if tries == 1 {
			return fail
		}
		return nil
	}, c.run)
	if err := r.Start(t.Context()); !errors.Is(err, fail) {
		t.Fatalf("Start with a failing init: %v, want its error", err)
	}
	if r.Running() || c.runs.Load() != 0 {
		t.Fatalf("after a failed init: running %v, %d runs; want nothing running", r.Running(), c.runs.Load())
	}
	r.Stop()
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.waitRunning(t)
	r.Stop()
}

// Start and Stop from many goroutines at once: no race (go test -race),
// every Stop that returns has left nothing running it started, and the
// last Stop leaves the service stopped (goleak checks no run is left).
func TestConcurrentStartStop(t *testing.T) {
	t.Parallel()
	c := newCounter()
	r := startstop.Func(c.run)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if i%2 == 0 {
				_ = r.Start(t.Context())
				return
			}
			r.Stop()
		})
	}
	wg.Wait()
	r.Stop()
	if r.Running() || c.runs.Load() != c.ended.Load() {
		t.Errorf("running %v, %d runs, %d ended; want stopped and every run ended", r.Running(), c.runs.Load(), c.ended.Load())
	}
}

// recorder is a service that writes its name to a shared log when it
// starts and stops, and fails to start when told to.
type recorder struct {
	name string
	log  *[]string
	fail error
	base startstop.Base
}

func (s *recorder) Start(ctx context.Context) error {
	return s.base.StartFunc(ctx, func(context.Context) error {
		if s.fail != nil {
			return s.fail
		}
		*s.log = append(*s.log, "start "+s.name)
		return nil
	}, func(ctx context.Context) { <-ctx.Done() })
}

func (s *recorder) Stop() {
	if s.base.Running() {
		*s.log = append(*s.log, "stop "+s.name)
	}
	s.base.Stop()
}

func TestGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	t.Parallel()
	var log []string
	g := startstop.NewGroup(&recorder{name: "a", log: &log}, &recorder{name: "b", log: &log}, &recorder{name: "c", log: &log})
	g.Stop() // not started: nothing happens
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(t.Context()); err != nil { // again: nothing more starts
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

func TestGroupStartFailureStopsWhatStarted(t *testing.T) {
	t.Parallel()
	var log []string
	fail := errors.New("no database")
	g := startstop.NewGroup(&recorder{name: "a", log: &log}, &recorder{name: "b", log: &log},
		&recorder{name: "c", log: &log, fail: fail}, &recorder{name: "d", log: &log})
	if err := g.Start(t.Context()); !errors.Is(err, fail) {
		t.Fatalf("Start: %v, want the failing service's error", err)
	}
	g.Stop()
	want := []string{"start a", "start b", "stop b", "stop a"}
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// barrierStop is a service whose Stop waits for every other Stop of its
// barrier to begin, for up to 5 s: StopAll that stopped one service after
// the other would keep each waiting out its 5 s.
type barrierStop struct {
	arrived *sync.WaitGroup
	all     chan struct{}
	late    *atomic.Int32
}

func (b barrierStop) Start(context.Context) error { return nil }

func (b barrierStop) Stop() {
	b.arrived.Done()
	select {
	case <-b.all:
	case <-time.After(5 * time.Second):
		b.late.Add(1)
	}
}

func TestStopAllStopsAtTheSameTime(t *testing.T) {
	t.Parallel()
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var late atomic.Int32
	s := barrierStop{&arrived, all, &late}
	startstop.StopAll(s, s, s)
	if late.Load() > 0 {
		t.Errorf("%d of 3 Stops waited 5s for the others: StopAll stopped them one after the other", late.Load())
	}
}

// Every runs its round at once, then again every interval, and Stop ends
// it; no round runs after Stop returns.
func TestEvery(t *testing.T) {
	rounds := make(chan struct{}, 10)
	var after atomic.Bool
	e := startstop.Every(time.Millisecond, func(ctx context.Context) {
		if after.Load() {
			t.Error("a round ran after Stop")
		}
		select {
		case rounds <- struct{}{}:
		default:
		}
	})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case <-rounds:
		case <-time.After(10 * time.Second):
			t.Fatal("no round within 10 s")
		}
	}
	e.Stop()
	after.Store(true)
	if e.Running() {
		t.Error("still running after Stop")
	}
}

// Jittered waits a random time in [interval/2, 3·interval/2) before each
// round, the first too, and runs until Stop, which waits for a round under
// way. The bubble's fake clock (testing/synctest) makes every wait exact,
// so the bounds are checked without slack and whatever the machine's load.
func TestJittered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Minute
		var starts []time.Time
		var inRound, stopping atomic.Bool
		r := startstop.Jittered(interval, func(ctx context.Context) {
			if stopping.Load() {
				t.Error("a round started after Stop began")
			}
			starts = append(starts, time.Now())
			// Every tenth round lasts until Stop, or half an interval.
			if len(starts)%10 == 0 {
				inRound.Store(true)
				select {
				case <-ctx.Done():
				case <-time.After(interval / 2):
				}
				inRound.Store(false)
			}
		})
		began := time.Now()
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * interval)
		for !inRound.Load() { // stop in the middle of a long round
			time.Sleep(time.Second)
		}
		stopping.Store(true)
		r.Stop()
		if inRound.Load() || r.Running() {
			t.Fatalf("Stop returned with a round under way (%v) or running (%v)", inRound.Load(), r.Running())
		}
		if len(starts) < 60 {
			t.Fatalf("%d rounds in 100 intervals, want about 100", len(starts))
		}

		minGap, maxGap := time.Duration(1<<62), time.Duration(0)
		prev := began
		for i, at := range starts {
			gap := at.Sub(prev)
			if i%10 == 0 && i > 0 { // after a round that lasted half an interval
				gap -= interval / 2
			}
			if gap < interval/2 || gap >= interval*3/2 {
				t.Errorf("round %d waited %s, want within [%s, %s)", i+1, gap, interval/2, interval*3/2)
			}
			minGap, maxGap = min(minGap, gap), max(maxGap, gap)
			prev = at
		}
		// Fixed waits would be in step with another instance's: over ~100
		// waits both ends of the range are reached (each check fails by
		// chance with probability 0.75^100).
		if minGap > interval*3/4 || maxGap < interval*5/4 {
			t.Errorf("waits from %s to %s: want them spread over [%s, %s)", minGap, maxGap, interval/2, interval*3/2)
		}
	})
}
