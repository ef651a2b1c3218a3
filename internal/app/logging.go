package app

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/startstop"
)

// bufferedLog batches log lines: the server writes one access line per
// request, and a write system call each would cost a few percent of its CPU
// at thousands of requests a second. Between Start and Stop, lines reach
// the output within flushEvery; Stop writes out the rest. A SIGKILL loses
// at most the last flushEvery of lines; a Go panic's report does not go
// through here.
type bufferedLog struct {
	mu      sync.Mutex
	w       *bufio.Writer
	flusher startstop.Base
}

const flushEvery = 100 * time.Millisecond

func newBufferedLog(out io.Writer) *bufferedLog {
	return &bufferedLog{w: bufio.NewWriterSize(out, 64<<10)}
}

// Start starts flushing every flushEvery.
func (b *bufferedLog) Start(ctx context.Context) error {
	return b.flusher.StartFunc(ctx, nil, func(ctx context.Context) {
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.flush()
			case <-ctx.Done():
				b.flush()
				return
			}
		}
	})
}

// Stop writes out what is buffered and stops flushing.
func (b *bufferedLog) Stop() {
	b.flusher.Stop()
	b.flush()
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bufferedLog) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.w.Flush()
}
