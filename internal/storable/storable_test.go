package storable

import (
	"testing"
	"time"
)

func TestText(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"": true, "pay_1": true, "café": true, "a\x00b": false, "\xff": false} {
		if got := Text(s); got != want {
			t.Errorf("Text(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestTime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		t    time.Time
		want bool
	}{
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC), false},
		{time.Unix(-1<<62, 0), false},
	} {
		if got := Time(tt.t); got != tt.want {
			t.Errorf("Time(%s) = %v, want %v", tt.t, got, tt.want)
		}
	}
}
