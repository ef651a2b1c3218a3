// Package logrepeat keeps what repeats from flooding the logs while
// still saying when it starts, how often it goes on, and when it ends.
//
// Failures is for one thing that fails again and again (a background
// loop's round while the database is down, the requests that find it
// down): the first failure is logged, then at most one "still failing"
// line per interval, then one line when it works again. Sampler is for
// events of a few classes that may come by the thousand (processor calls
// that failed): the first of each class per interval is logged in full,
// then one line counts the others of the interval.
//
// Both are hand-written: slog has no rate limiting, and the samplers of
// other loggers (zap's) drop lines without saying how many, which is the
// count an operator needs.
package logrepeat

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is how often a repeat is summed up by default.
const DefaultEvery = time.Minute

// Failures logs a repeated failure of one thing. Set its fields before
// the first call; its methods may then be called from any goroutine.
type Failures struct {
	// Logger is where the lines go; nil means slog.Default().
	Logger *slog.Logger
	// What is the first failure's message, and the start of the others'
	// ("processor recovery": "processor recovery: still failing (12 times
	// since 10:31:05)", "processor recovery: works again after 12
	// failures").
	What string
	// Level is the failures' level; zero is slog.LevelWarn (an ERROR
	// loop sets slog.LevelError). The line that says it works again is
	// INFO.
	Level slog.Level
	// Every is the least time between two "still failing" lines; zero
	// means DefaultEvery.
	Every time.Duration
	// Gap, if set, ends a run of failures that had none for this long:
	// the next failure is logged as a first one, after an INFO line giving
	// the ended run's count (its last failures were told nowhere else).
	// For a caller that never sees what works (the requests), so that a
	// new outage does not read as the last one going on.
	Gap time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time

	mu       sync.Mutex
	failures int       // in a row, since first
	first    time.Time // the first failure of the run
	last     time.Time // the last failure
	told     time.Time // the last line logged
}

// Report is Fail when err is not nil, else OK.
func (f *Failures) Report(err error, args ...any) {
	if err != nil {
		f.Fail(err, args...)
		return
	}
	f.OK()
}

// Fail counts a failure, with err and args (slog's key-value pairs) on
// the line if one is logged: the first of a run at once, then one line
// per Every saying how many failed since the first.
func (f *Failures) Fail(err error, args ...any) {
	f.mu.Lock()
	now := f.now()
	var ended run // the run a Gap ended, if it had more than its first
	if f.failures > 0 && f.Gap > 0 && now.Sub(f.last) >= f.Gap {
		if f.failures > 1 {
			ended = run{f.failures, f.first, f.last}
		}
		f.failures = 0
	}
	f.failures++
	f.last = now
	var msg string
	switch {
	case f.failures == 1:
		f.first, f.told = now, now
		msg = f.What
	case now.Sub(f.told) >= f.every():
		f.told = now
		msg = fmt.Sprintf("%s: still failing (%d times since %s)", f.What, f.failures, clock(f.first))
		args = append(args, "failures", f.failures, "since", f.first.UTC())
	}
	f.mu.Unlock()
	if ended.failures > 0 {
		f.logger().Info(fmt.Sprintf("%s: ended after %d failures, the last at %s", f.What, ended.failures, clock(ended.last)),
			"failures", ended.failures, "since", ended.first.UTC(), "last", ended.last.UTC())
	}
	if msg != "" {
		f.logger().Log(context.Background(), f.level(), msg, append([]any{"err", err}, args...)...)
	}
}

// run is a run of failures that has ended.
type run struct {
	failures    int
	first, last time.Time
}

// OK ends a run of failures, if there was one, with one INFO line saying
// how many there were.
func (f *Failures) OK() {
	f.mu.Lock()
	n, first := f.failures, f.first
	f.failures = 0
	f.mu.Unlock()
	if n > 0 {
		f.logger().Info(fmt.Sprintf("%s: works again after %d failures", f.What, n),
			"failures", n, "since", first.UTC())
	}
}

// Failing says how many failures in a row there have been (zero: none).
func (f *Failures) Failing() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

func (f *Failures) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Failures) every() time.Duration {
	if f.Every > 0 {
		return f.Every
	}
	return DefaultEvery
}

func (f *Failures) level() slog.Level {
	if f.Level == 0 {
		return slog.LevelWarn
	}
	return f.Level
}

func (f *Failures) logger() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}

// clock is t's time of day in UTC, as the lines say it.
func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

// Sampler logs events of a few classes: the first of each class in an
// interval in full, the others of the interval only counted, and the
// count logged once the interval has ended (at the class's next event, or
// at Flush), as the interval's first line with "more" set to it. Under a
// steady stream a class so costs two lines per interval, whatever the
// rate. Set its fields before the first call; its methods may then be
// called from any goroutine.
type Sampler struct {
	// Logger is where the lines go; nil means slog.Default().
	Logger *slog.Logger
	// Every is the interval; zero means DefaultEvery.
	Every time.Duration
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time

	mu      sync.Mutex
	classes map[string]*window
}

// window is one class's current interval.
type window struct {
	start time.Time
	level slog.Level
	msg   string
	more  int
}

// Log logs msg at level with args (slog's key-value pairs) if it is the
// first event of class in the interval, else counts it. class is added to
// the line as "class".
func (s *Sampler) Log(level slog.Level, class, msg string, args ...any) {
	s.mu.Lock()
	now := s.now()
	if s.classes == nil {
		s.classes = map[string]*window{}
	}
	w := s.classes[class]
	var summary *window
	if w != nil && now.Sub(w.start) < s.every() {
		w.more++
		s.mu.Unlock()
		return
	}
	if w != nil && w.more > 0 {
		summary = &window{start: w.start, level: w.level, msg: w.msg, more: w.more}
	}
	s.classes[class] = &window{start: now, level: level, msg: msg}
	s.mu.Unlock()
	if summary != nil {
		s.summarize(class, summary)
	}
	s.logger().Log(context.Background(), level, msg, append([]any{"class", class}, args...)...)
}

// Flush logs the count of every class whose interval has ended, and
// forgets those classes: a caller on a timer (the recovery's round) so
// tells the count of a burst that has stopped.
func (s *Sampler) Flush() {
	s.mu.Lock()
	now := s.now()
	var ended []string
	var windows []*window
	for class, w := range s.classes {
		if now.Sub(w.start) < s.every() {
			continue
		}
		delete(s.classes, class)
		if w.more > 0 {
			ended, windows = append(ended, class), append(windows, w)
		}
	}
	s.mu.Unlock()
	for i, class := range ended {
		s.summarize(class, windows[i])
	}
}

// summarize logs the count of w's events after its first.
func (s *Sampler) summarize(class string, w *window) {
	s.logger().Log(context.Background(), w.level,
		fmt.Sprintf("%s: %d more in the %s from %s", w.msg, w.more, s.every(), clock(w.start)),
		"class", class, "more", w.more, "since", w.start.UTC())
}

func (s *Sampler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sampler) every() time.Duration {
	if s.Every > 0 {
		return s.Every
	}
	return DefaultEvery
}

func (s *Sampler) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}
