package auth

import (
	"strconv"
	"strings"
	"testing"
)

func TestFailureLimiter(t *testing.T) {
	t.Parallel()
	type step struct {
		addr, identity string
		// after this failure: which budgets Failed says it just spent,
		// and what Blocked says then
		nowAddr, nowIdentity bool
		blockedAddr, blocked bool
	}
	tests := []struct {
		name  string
		steps []step
		// then: an attempt from here, and what Blocked says
		addr, identity         string
		wantAddr, wantIdentity bool
	}{
		{
			name: "an address spends its budget",
			steps: []step{
				{addr: "203.0.113.7", identity: "bearer:aaa"},
				{addr: "203.0.113.7", identity: "bearer:bbb"},
				{addr: "203.0.113.7", identity: "bearer:ccc", nowAddr: true, blockedAddr: true, blocked: true},
			},
			addr: "203.0.113.7", identity: "bearer:ddd", wantAddr: true,
		},
		{
			name: "other addresses keep theirs",
			steps: []step{
				{addr: "203.0.113.7"}, {addr: "203.0.113.7"}, {addr: "203.0.113.7", nowAddr: true, blockedAddr: true, blocked: true},
			},
			addr: "198.51.100.1",
		},
		{
			name: "an identity is counted across addresses",
			steps: []step{
				{addr: "203.0.113.1", identity: "basic:admin"},
				{addr: "203.0.113.2", identity: "basic:admin"},
				{addr: "203.0.113.3", identity: "basic:admin", nowIdentity: true, blocked: true},
			},
			addr: "203.0.113.4", identity: "basic:admin", wantIdentity: true,
		},
		{
			name: "an IPv6 /64 is one address",
			steps: []step{
				{addr: "2001:db8:1:2::1"}, {addr: "2001:db8:1:2::2"}, {addr: "2001:db8:1:2:ffff::3", nowAddr: true, blockedAddr: true, blocked: true},
			},
			addr: "2001:db8:1:2::99", wantAddr: true,
		},
		{
			name: "another /64 is another address",
			steps: []step{
				{addr: "2001:db8:1:2::1"}, {addr: "2001:db8:1:2::2"}, {addr: "2001:db8:1:2::3", nowAddr: true, blockedAddr: true, blocked: true},
			},
			addr: "2001:db8:1:3::1",
		},
		{
			name: "a lockout is reported once",
			steps: []step{
				{addr: "203.0.113.7"}, {addr: "203.0.113.7"}, {addr: "203.0.113.7", nowAddr: true, blockedAddr: true, blocked: true},
				{addr: "203.0.113.7", blockedAddr: true, blocked: true},
			},
			addr: "203.0.113.7", wantAddr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewFailureLimiter(3)
			for i, s := range tt.steps {
				a := Attempt{Addr: s.addr, Identity: s.identity}
				now := l.Failed(a)
				if now.Addr != s.nowAddr || now.Identity != s.nowIdentity {
					t.Errorf("failure %d: just spent %+v, want addr %v identity %v", i+1, now, s.nowAddr, s.nowIdentity)
				}
				if b := l.Blocked(a); b.Addr != s.blockedAddr || b.Any() != s.blocked {
					t.Errorf("after failure %d: blocked %+v", i+1, b)
				}
			}
			b := l.Blocked(Attempt{Addr: tt.addr, Identity: tt.identity})
			if b.Addr != tt.wantAddr || b.Identity != tt.wantIdentity {
				t.Errorf("then %s %s: %+v, want addr %v identity %v", tt.addr, tt.identity, b, tt.wantAddr, tt.wantIdentity)
			}
			if b.Any() && b.RetryAfter <= 0 {
				t.Errorf("blocked without a RetryAfter: %+v", b)
			}
		})
	}
}

// The limiter holds digests of identities, never what was presented.
func TestFailureLimiterKeepsNoIdentity(t *testing.T) {
	t.Parallel()
	l := NewFailureLimiter(3)
	l.Failed(Attempt{Addr: "203.0.113.7", Identity: "bearer:cmpay_secretprefix"})
	for _, k := range l.byIdentity.Keys() {
		if strings.Contains(k, "secretprefix") {
			t.Errorf("identity kept as presented: %s", k)
		}
	}
	if l.byIdentity.Len() != 1 {
		t.Errorf("%d identities counted, want 1", l.byIdentity.Len())
	}
}

// TestTakePair: a pair's try is taken before the check, given back by a
// right password and kept by a wrong one; other addresses keep their own
// budget for the identity; an address has at most MaxConcurrentPerAddress
// checks under way; the first refusal of a lockout is told apart.
func TestTakePair(t *testing.T) {
	t.Parallel()
	l := NewFailureLimiter(3)
	a := Attempt{Addr: "203.0.113.7", Identity: "staff:admin"}
	for range 10 { // right passwords cost nothing
		try, _ := l.TakePair(a)
		if try == nil {
			t.Fatal("a right password was refused")
		}
		try.Succeeded()
	}
	for i := range 3 {
		try, _ := l.TakePair(a)
		if try == nil {
			t.Fatalf("failure %d refused", i+1)
		}
		if now := try.Failed(); now != (i == 2) {
			t.Errorf("failure %d: now blocked %v", i+1, now)
		}
	}
	if try, wait := l.TakePair(a); try != nil || wait <= 0 || !l.PairSpent(a) {
		t.Errorf("after 3 failures: %v, %v; want refused with a wait", try, wait)
	}
	if first, n := l.PairRefused(a); !first || n != 1 {
		t.Errorf("first refusal: %v %d", first, n)
	}
	if first, n := l.PairRefused(a); first || n != 2 {
		t.Errorf("second refusal: %v %d", first, n)
	}
	if try, _ := l.TakePair(Attempt{Addr: "198.51.100.1", Identity: "staff:admin"}); try == nil {
		t.Error("another address is refused for the identity")
	}
	if try, _ := l.TakePair(Attempt{Addr: "203.0.113.7", Identity: "staff:carol"}); try == nil {
		t.Error("another identity is refused from the address")
	}

	busy := Attempt{Addr: "192.0.2.1", Identity: "staff:x"}
	var held []*PairTry
	for i := range MaxConcurrentPerAddress {
		try, _ := l.TakePair(Attempt{Addr: busy.Addr, Identity: busy.Identity + strconv.Itoa(i)})
		if try == nil {
			t.Fatal("refused under the concurrency cap")
		}
		held = append(held, try)
	}
	if try, _ := l.TakePair(Attempt{Addr: "192.0.2.1", Identity: "staff:y"}); try != nil || l.PairSpent(Attempt{Addr: "192.0.2.1", Identity: "staff:y"}) {
		t.Error("one check too many from an address: want refused, its budget not spent")
	}
	held[0].Abandoned()
	held[0].Failed() // ended once: a second end changes nothing
	if try, _ := l.TakePair(busy); try == nil {
		t.Error("a freed check is still counted")
	}
}

// TestTakePairRefusedLeavesNoBudget: a try refused by the concurrency cap
// adds no (address, identity) budget, so that a guesser who keeps their
// address's checks busy cannot flood the budgets' cache with made-up
// usernames, free of any password check, until it forgets the budget
// they spent on the account they are guessing.
func TestTakePairRefusedLeavesNoBudget(t *testing.T) {
	t.Parallel()
	l := NewFailureLimiter(3)
	victim := Attempt{Addr: "203.0.113.9", Identity: "staff:admin"}
	for range 3 {
		try, _ := l.TakePair(victim)
		if try == nil {
			t.Fatal("a failure under the budget was refused")
		}
		try.Failed()
	}
	var held []*PairTry
	for i := range MaxConcurrentPerAddress {
		try, _ := l.TakePair(Attempt{Addr: victim.Addr, Identity: "staff:slow" + strconv.Itoa(i)})
		if try == nil {
			t.Fatal("refused under the concurrency cap")
		}
		held = append(held, try)
	}
	// More made-up usernames than the cache holds, each refused at once.
	for i := range 100_001 {
		if try, _ := l.TakePair(Attempt{Addr: victim.Addr, Identity: "staff:u" + strconv.Itoa(i)}); try != nil {
			t.Fatal("a try over the concurrency cap was let through")
		}
	}
	for _, try := range held {
		try.Kept()
	}
	if try, _ := l.TakePair(victim); try != nil {
		t.Error("the spent budget of the guessed account was forgotten: its password is checked again")
	}
}
