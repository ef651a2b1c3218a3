package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// bufferedLog batches log lines: the server writes one access line per
// request, and a write system call each would cost a few percent of its CPU
// at thousands of requests a second. Lines reach the output within
// flushEvery, and all of them on Close. A SIGKILL loses at most the last
// flushEvery of lines; a Go panic's report does not go through here.
type bufferedLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	done chan struct{}
	wg   sync.WaitGroup
}

const flushEvery = 100 * time.Millisecond

func newBufferedLog(out io.Writer) *bufferedLog {
	b := &bufferedLog{w: bufio.NewWriterSize(out, 64<<10), done: make(chan struct{})}
	b.wg.Go(func() {
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.flush()
			case <-b.done:
				b.flush()
				return
			}
		}
	})
	return b
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

// Close writes out what is buffered and stops the flusher.
func (b *bufferedLog) Close() {
	close(b.done)
	b.wg.Wait()
}
