package httpapi

import (
	"net"
	"testing"

	"github.com/cmpay/cmpay/auth"
)

// TestPendingDropsTheOldest: past an address's share its oldest waiting
// socket is dropped, past the instance's cap the instance's oldest; a
// place given back by connection_init and again when the socket ends
// counts once; the hooks see every change.
func TestPendingDropsTheOldest(t *testing.T) {
	waiting, dropped := 0, map[string]int{}
	hooks := pendingSocketHooks{waiting: func(d int) { waiting += d }, dropped: func(l string) { dropped[l]++ }}
	p := newPendingSockets(PendingSocketLimits{PerAddress: 2, PerInstance: 3}, hooks)

	a1, releaseA1 := p.admit("a")
	a2, _ := p.admit("a")
	a3, _ := p.admit("a") // a's share is 2: a1 goes
	if !a1.isDropped() || a2.isDropped() || a3.isDropped() {
		t.Fatalf("third socket from a: dropped a1 %v, a2 %v, a3 %v; want a1 alone", a1.isDropped(), a2.isDropped(), a3.isDropped())
	}
	releaseA1() // its handler ends: nothing left to give back
	if total, fromA := p.waiting("a"); total != 2 || fromA != 2 {
		t.Fatalf("after a1 dropped and released: %d waiting, %d from a; want 2 and 2", total, fromA)
	}

	b1, releaseB1 := p.admit("b")
	c1, _ := p.admit("c") // the instance holds 3: its oldest, a2, goes
	if !a2.isDropped() || a3.isDropped() || b1.isDropped() || c1.isDropped() {
		t.Fatalf("past the instance's cap: a2 %v, a3 %v, b1 %v, c1 %v; want a2 alone dropped",
			a2.isDropped(), a3.isDropped(), b1.isDropped(), c1.isDropped())
	}
	releaseB1()
	releaseB1()
	if total, fromB := p.waiting("b"); total != 2 || fromB != 0 || len(p.byAddr) != 2 {
		t.Errorf("after b's release: %d waiting, %d from b, addresses %v", total, fromB, p.byAddr)
	}
	if waiting != 2 || dropped["address"] != 1 || dropped["instance"] != 1 {
		t.Errorf("hooks: %d waiting, dropped %v; want 2 waiting, 1 by address, 1 by instance", waiting, dropped)
	}
}

// TestPendingDroppedBeforeHijack: a socket dropped while its upgrade is
// still being answered is closed as soon as the upgrade takes its
// connection over.
func TestPendingDroppedBeforeHijack(t *testing.T) {
	p := newPendingSockets(PendingSocketLimits{PerAddress: 1, PerInstance: 10}, pendingSocketHooks{})
	first, _ := p.admit("a")
	p.admit("a")
	server, client := net.Pipe()
	defer client.Close()
	first.hijacked(server)
	if _, err := server.Write([]byte("x")); err == nil {
		t.Fatal("the dropped socket's connection still takes writes")
	}
}

// waiting is how many sockets wait, in all and from addr (its /64 for an
// IPv6 address).
func (p *pendingSockets) waiting(addr string) (total, fromAddr int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ad := p.byAddr[auth.AddressKey(addr)]; ad != nil {
		fromAddr = ad.Len()
	}
	return p.all.Len(), fromAddr
}

func (s *pendingSocket) isDropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// TestPendingCountsAnIPv6NetworkAsOneAddress: the waiting sockets of every
// address in one IPv6 /64 share one address's share, as their sign-in
// failures do (auth.AddressKey): whoever has one such address has them
// all, and could otherwise fill the instance's cap from one network,
// dropping every other address's waiting sockets.
func TestPendingCountsAnIPv6NetworkAsOneAddress(t *testing.T) {
	p := newPendingSockets(PendingSocketLimits{PerAddress: 2, PerInstance: 10}, pendingSocketHooks{})
	other, _ := p.admit("198.51.100.7")
	var mine []*pendingSocket
	for _, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"} {
		s, _ := p.admit(addr)
		mine = append(mine, s)
	}
	if !mine[0].isDropped() || mine[1].isDropped() || mine[2].isDropped() || other.isDropped() {
		t.Errorf("three sockets from one /64, its share 2: dropped %v %v %v, the IPv4 one %v; want the first alone",
			mine[0].isDropped(), mine[1].isDropped(), mine[2].isDropped(), other.isDropped())
	}
	if _, fromNet := p.waiting("2001:db8:1:2::9"); fromNet != 2 {
		t.Errorf("waiting from the /64: %d, want 2", fromNet)
	}
}
