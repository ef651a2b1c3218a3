// Package logtest helps tests read what the code under test logs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log's output that loggers may write to from several
// goroutines while a test reads it: a bytes.Buffer behind a mutex.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p, as bytes.Buffer's Write does.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
