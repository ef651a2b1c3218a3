package apierror

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// Requests that find the database unavailable, a thousand in an outage,
// log the first and then one line a minute; an outage after a quiet
// minute starts afresh, once the last one's count is told.
func TestUnavailableRequestsAreLoggedOnceAMinute(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	saved := unavailable
	unavailable = &logrepeat.Failures{Logger: slog.New(slog.NewTextHandler(&buf, nil)), What: "database unavailable",
		Gap: logrepeat.DefaultEvery, Now: func() time.Time { return now }}
	t.Cleanup(func() { unavailable = saved })
	for range 1000 {
		if e := FromDomain(context.Background(), io.ErrUnexpectedEOF); e.Code != Unavailable {
			t.Fatalf("code %s; want %s", e.Code, Unavailable)
		}
		now = now.Add(100 * time.Millisecond)
	}
	now = now.Add(time.Hour)
	FromDomain(context.Background(), io.ErrUnexpectedEOF)
	var msgs []string
	for line := range strings.Lines(buf.String()) {
		_, rest, _ := strings.Cut(line, "msg=")
		msg, _, _ := strings.Cut(rest, " err=")
		msg, _, _ = strings.Cut(msg, " failures=")
		msgs = append(msgs, msg)
	}
	want := []string{`"database unavailable"`, `"database unavailable: still failing (601 times since 10:00:00)"`,
		`"database unavailable: ended after 1000 failures, the last at 10:01:39"`, `"database unavailable"`}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}
