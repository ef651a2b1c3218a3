package nullable

import (
	"testing"
	"time"
)

func TestString(t *testing.T) {
	t.Parallel()
	if String("") != nil {
		t.Error(`String("") is not nil`)
	}
	if p := String("x"); p == nil || *p != "x" {
		t.Errorf(`String("x") = %v`, p)
	}
}

// A zero time in UTC is not time.Time{} by ==, and is still none.
func TestTime(t *testing.T) {
	t.Parallel()
	if Time(time.Time{}) != nil || Time(time.Time{}.UTC()) != nil {
		t.Error("a zero time is not nil")
	}
	now := time.Now()
	if p := Time(now); p == nil || !p.Equal(now) {
		t.Errorf("Time(now) = %v", p)
	}
}
