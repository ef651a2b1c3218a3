package dbtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server until it is frozen. Frozen, it
// is a black hole: it keeps every connection open and forwards nothing,
// and it accepts new connections but never answers on them, as a hung host
// or a network that drops packets would look to a client (no refusal, no
// reset; on loopback the kernel still acknowledges what is sent, so only
// the client's own deadlines end the wait).
type Proxy struct {
	// Addr is where clients connect: host:port on 127.0.0.1.
	Addr string

	target string
	l      net.Listener
	frozen chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	conns  []net.Conn
}

// StartProxy starts a proxy to target (host:port), closed when the test
// ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l, frozen: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(p.close)
	go p.accept()
	return p
}

// ProxyURL starts a proxy to the server a PostgreSQL URL names and returns
// it with the URL rewritten to go through it (same database, user and
// parameters, search_path included): a black hole of the test's own in
// front of a shared server.
func ProxyURL(t testing.TB, rawURL string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("dbtest: proxy URL: %v", err)
	}
	p := StartProxy(t, u.Host)
	u.Host = p.Addr
	return p, u.String()
}

// Freeze stops all forwarding, for good.
func (p *Proxy) Freeze() { p.once.Do(func() { close(p.frozen) }) }

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		select {
		case <-p.frozen:
			continue // hold it open, say nothing
		default:
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(up) {
			return
		}
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track remembers c for closing; false once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
	}
	p.conns = append(p.conns, c)
	return true
}

// pipe copies src to dst until either fails, or until the proxy freezes:
// then what was read is dropped and both stay open.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	close(p.done)
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.l.Close()
	for _, c := range conns {
		c.Close()
	}
}
