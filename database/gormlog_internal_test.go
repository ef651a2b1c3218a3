package database

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestGormLoggerSamplesFailedQueries: in an outage every query fails; the
// GORM logger logs the first failure and the first slow query of a minute
// in full and only counts the others, where it logged a line each.
func TestGormLoggerSamplesFailedQueries(t *testing.T) {
	var buf bytes.Buffer
	l := newGormLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	ctx := context.Background()
	down := errors.New("connection refused")
	for range 50 {
		l.Trace(ctx, time.Now(), func() (string, int64) { return "SELECT 1", 0 }, down)
	}
	l.Trace(ctx, time.Now().Add(-time.Second), func() (string, int64) { return "SELECT pg_sleep(1)", 1 }, nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("50 failed queries and a slow one logged %d lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "connection refused") || !strings.Contains(lines[0], `class="query failed"`) {
		t.Errorf("first line %q does not give the failure", lines[0])
	}
	if !strings.Contains(lines[1], "SLOW SQL") || !strings.Contains(lines[1], `class="slow query"`) {
		t.Errorf("second line %q does not give the slow query", lines[1])
	}
}
