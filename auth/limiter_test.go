package auth

import (
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
