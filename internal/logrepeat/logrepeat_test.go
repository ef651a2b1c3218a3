package logrepeat_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// captured is a JSON logger writing to a buffer, and its lines decoded.
type captured struct{ buf bytes.Buffer }

func (c *captured) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(&c.buf, nil)) }

func (c *captured) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(c.buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func msgs(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l["level"].(string)+" "+l["msg"].(string))
	}
	return out
}

// A loop failing every second for three minutes logs its first failure,
// one "still failing" line per minute, and one INFO line when it works
// again; a second run of failures starts afresh.
func TestFailuresFirstThenEveryMinuteThenBack(t *testing.T) {
	var out captured
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 31, 5, 0, time.UTC)}
	f := &logrepeat.Failures{Logger: out.logger(), What: "processor recovery", Now: clock.Now}
	boom := errors.New("connection refused")
	for range 180 {
		f.Report(boom, "round", 1)
		clock.Add(time.Second)
	}
	f.Report(nil)
	f.Report(nil) // nothing more: it was said once
	f.Fail(boom)
	want := []string{
		"WARN processor recovery",
		"WARN processor recovery: still failing (61 times since 10:31:05)",
		"WARN processor recovery: still failing (121 times since 10:31:05)",
		"INFO processor recovery: works again after 180 failures",
		"WARN processor recovery",
	}
	lines := out.lines(t)
	if got := msgs(lines); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines[0]["err"] != "connection refused" || lines[0]["round"] != float64(1) {
		t.Errorf("first line %v: want its err and args", lines[0])
	}
	if lines[1]["failures"] != float64(61) || lines[3]["failures"] != float64(180) {
		t.Errorf("counts %v, %v: want 61 and 180", lines[1]["failures"], lines[3]["failures"])
	}
}

// With a Gap, a run of failures that stopped is told with its count when
// the next failure comes: its failures after the last "still failing"
// line are counted nowhere else.
func TestFailuresGapTellsTheEndedRun(t *testing.T) {
	var out captured
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	f := &logrepeat.Failures{Logger: out.logger(), What: "database unavailable", Gap: time.Minute, Now: clock.Now}
	boom := errors.New("down")
	for range 30 { // 30 failures in 30 s: only the first was told
		f.Fail(boom)
		clock.Add(time.Second)
	}
	clock.Add(time.Hour)
	f.Fail(boom)
	want := []string{
		"WARN database unavailable",
		"INFO database unavailable: ended after 30 failures, the last at 10:00:29",
		"WARN database unavailable",
	}
	lines := out.lines(t)
	if got := msgs(lines); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines[1]["failures"] != float64(30) {
		t.Errorf("ended run's line %v: want failures 30", lines[1])
	}
}

// With a Gap, failures far apart are each a first one: a caller that
// never sees success does not report a new outage as the old one.
func TestFailuresGapStartsAfresh(t *testing.T) {
	var out captured
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	f := &logrepeat.Failures{Logger: out.logger(), What: "database unavailable", Level: slog.LevelError,
		Gap: time.Minute, Now: clock.Now}
	boom := errors.New("down")
	for range 3 {
		f.Fail(boom)
		clock.Add(time.Hour)
	}
	want := "ERROR database unavailable"
	got := msgs(out.lines(t))
	if len(got) != 3 || got[0] != want || got[1] != want || got[2] != want {
		t.Fatalf("lines %q; want three %q", got, want)
	}
	if n := f.Failing(); n != 1 {
		t.Errorf("Failing() = %d; want 1", n)
	}
}

// A burst of thousands of events of two classes over two minutes logs
// two lines per class per minute: the first in full, then the count.
func TestSamplerBoundsABurst(t *testing.T) {
	var out captured
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	s := &logrepeat.Sampler{Logger: out.logger(), Now: clock.Now}
	for i := range 12000 { // 100 a second for two minutes
		class := "timeout"
		if i%3 == 0 {
			class = "5xx"
		}
		s.Log(slog.LevelWarn, class, "processor call failed", "payment_id", i)
		clock.Add(10 * time.Millisecond)
	}
	clock.Add(time.Minute) // the burst has stopped; the timer's next Flush
	s.Flush()
	lines := out.lines(t)
	if len(lines) != 8 {
		t.Fatalf("%d lines; want 8 (2 classes, 2 minutes, first and count):\n%s", len(lines), out.buf.String())
	}
	total := 0
	for _, l := range lines {
		if more, ok := l["more"].(float64); ok {
			total += int(more)
		} else {
			total++
		}
	}
	if total != 12000 {
		t.Errorf("lines account for %d events; want 12000", total)
	}
	if lines[0]["class"] != "5xx" || lines[0]["payment_id"] != float64(0) || lines[0]["level"] != "WARN" {
		t.Errorf("first line %v: want the first event in full", lines[0])
	}
}

// Flush tells nothing of an interval still open, nor of a class with a
// single event; it tells a burst that stopped once its interval ended.
func TestSamplerFlush(t *testing.T) {
	var out captured
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	s := &logrepeat.Sampler{Logger: out.logger(), Now: clock.Now, Every: 10 * time.Second}
	s.Log(slog.LevelInfo, "once", "settled")
	s.Log(slog.LevelWarn, "burst", "failed")
	s.Log(slog.LevelWarn, "burst", "failed")
	s.Log(slog.LevelWarn, "burst", "failed")
	s.Flush()
	if n := len(out.lines(t)); n != 2 {
		t.Fatalf("%d lines before the interval ended; want 2", n)
	}
	clock.Add(10 * time.Second)
	s.Flush()
	s.Flush()
	got := msgs(out.lines(t))
	want := "WARN failed: 2 more in the 10s from 10:00:00"
	if len(got) != 3 || got[2] != want {
		t.Fatalf("lines %q; want a third %q", got, want)
	}
}
