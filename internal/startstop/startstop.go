// Package startstop is how every background service of the server starts
// and stops: Start returns once the service runs (or with the reason it
// could not start), Stop returns once it has stopped. Both may be called
// any number of times, from any goroutine: a second Start while running,
// or a Stop of a service that is not running, does nothing. The
// composition root (internal/app) starts its services in order with a
// Group and stops them in reverse.
//
// The shape follows river's rivershared/startstop: a service holds a Base
// and calls it from its own Start.
package startstop

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Service is something that runs in the background.
type Service interface {
	// Start starts the service and returns once it runs. ctx bounds the
	// starting and the run: when it ends the service stops by itself, but
	// only Stop waits for it.
	Start(ctx context.Context) error
	// Stop ends the service and returns once it has stopped.
	Stop()
}

// Base runs one function in the background for a service: its zero value
// is ready, and its methods implement the contract above. Keep it in a
// field and call StartFunc from the service's Start.
type Base struct {
	// mu is held through a whole Start or Stop, so that a Stop that comes
	// while Start runs waits for it and then stops what it started.
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// StartFunc runs run in a goroutine, with a context that ends at Stop or
// when ctx does. If init is not nil it runs first, in this goroutine with
// ctx, and when it fails nothing runs and its error is returned. When run
// has been started already and not stopped, StartFunc does nothing: a run
// that returned by itself still counts as started until Stop.
func (b *Base) StartFunc(ctx context.Context, init func(context.Context) error, run func(context.Context)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		return nil
	}
	if init != nil {
		if err := init(ctx); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b.cancel, b.done = cancel, done
	go func() {
		defer close(done)
		run(runCtx)
	}()
	return nil
}

// Stop ends the context run was given and waits for run to return.
func (b *Base) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		return
	}
	b.cancel()
	<-b.done
	b.cancel, b.done = nil, nil
}

// Running reports whether the service has been started and not stopped.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done != nil
}

// Runner is a Service made of functions.
type Runner struct {
	base Base
	init func(context.Context) error
	run  func(context.Context)
}

// Func returns a Service that runs run, which must return once its
// context ends.
func Func(run func(ctx context.Context)) *Runner { return &Runner{run: run} }

// Every returns a Service that runs round at once and then every interval
// until stopped; Stop waits for a round under way. round must return once
// its context ends.
func Every(interval time.Duration, round func(ctx context.Context)) *Runner {
	return Func(func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// Jittered returns a Service that runs round every interval on average
// until stopped. Before each round, the first too, it waits a random time
// in [interval/2, 3·interval/2): instances started together (a deploy)
// spread their rounds out instead of all hitting the database at once, and
// a restart does not run a round at once. Stop waits for a round under
// way; round must return once its context ends. An interval under a
// millisecond is taken as one.
func Jittered(interval time.Duration, round func(ctx context.Context)) *Runner {
	interval = max(interval, time.Millisecond)
	return Func(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval/2 + rand.N(interval)):
			}
			round(ctx)
		}
	})
}

// InitFunc returns a Service whose Start runs init (its error is Start's)
// and then run, as Base.StartFunc does.
func InitFunc(init func(ctx context.Context) error, run func(ctx context.Context)) *Runner {
	return &Runner{init: init, run: run}
}

// Start implements Service.
func (r *Runner) Start(ctx context.Context) error { return r.base.StartFunc(ctx, r.init, r.run) }

// Stop implements Service.
func (r *Runner) Stop() { r.base.Stop() }

// Running reports whether the Runner has been started and not stopped.
func (r *Runner) Running() bool { return r.base.Running() }

// Group is a Service made of others: Start starts them in order, Stop
// stops them in reverse order, so that a service stops before those it
// was started after (and may depend on).
type Group struct {
	mu       sync.Mutex
	services []Service
	started  int
}

// NewGroup returns a Group of services, in the order they start.
func NewGroup(services ...Service) *Group { return &Group{services: services} }

// Start starts each service not started yet, in order. When one fails, it
// stops those it started, in reverse, and returns that one's error.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.started < len(g.services) {
		if err := g.services[g.started].Start(ctx); err != nil {
			g.stop()
			return err
		}
		g.started++
	}
	return nil
}

// Stop stops every service it started, the last started first.
func (g *Group) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stop()
}

func (g *Group) stop() {
	for ; g.started > 0; g.started-- {
		g.services[g.started-1].Stop()
	}
}

// StopAll stops services at the same time and returns once all have
// stopped: for services independent of each other that each take a while
// to stop.
func StopAll(services ...Service) {
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(s.Stop)
	}
	wg.Wait()
}
