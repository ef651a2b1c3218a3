// Package clientaddr tells who a request comes from: the TCP peer's
// address, or, when the peer is one of the operator's trusted proxies, the
// client those proxies recorded in X-Forwarded-For; and whether the client
// used HTTPS. The access log, the sign-in limiter and HSTS all use the one
// answer, put in the request's context by Middleware.
//
// Headers are believed only from a trusted peer: anyone can send
// X-Forwarded-For, so trusting it from the open internet would let a
// client pick the address it is limited and logged under.
package clientaddr

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver knows which peers are trusted proxies.
type Resolver struct {
	trusted []netip.Prefix
}

// New returns a Resolver trusting the given networks; none trusts no proxy.
func New(trusted []netip.Prefix) *Resolver {
	return &Resolver{trusted: trusted}
}

// ParsePrefixes reads CIDRs such as 10.0.0.0/8 or fd00::/8; a bare address
// stands for itself alone.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an address", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the TCP peer's address, if RemoteAddr holds one.
func peer(req *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Addr is the client's address. From an untrusted peer, that is the peer.
// From a trusted one, X-Forwarded-For is read from the right (each proxy
// appends the address it saw) and the first hop that is not a trusted
// proxy is the client: hops further left were written by whoever sent the
// request and prove nothing. If every hop is trusted, the leftmost one is
// the client; a hop that is not an address ends the walk at the trusted hop
// that wrote it.
func (r *Resolver) Addr(req *http.Request) string {
	p, ok := peer(req)
	if !ok {
		return req.RemoteAddr
	}
	if !r.isTrusted(p) {
		return p.String()
	}
	hops := forwardedFor(req.Header)
	client := p
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = a
		if !r.isTrusted(client) {
			break
		}
	}
	return client.String()
}

// parseHop reads one X-Forwarded-For entry: an address, or an address and
// port as some proxies write it ("203.0.113.7:4711", "[2001:db8::1]:4711").
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// forwardedFor lists the X-Forwarded-For hops, left to right, over every
// header line.
func forwardedFor(h http.Header) []string {
	var hops []string
	for _, line := range h.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops
}

// HTTPS reports whether the client reached us over HTTPS: this server's own
// TLS, or X-Forwarded-Proto: https set by a trusted proxy (its last value,
// which the nearest proxy wrote).
func (r *Resolver) HTTPS(req *http.Request) bool {
	if req.TLS != nil {
		return true
	}
	p, ok := peer(req)
	if !ok || !r.isTrusted(p) {
		return false
	}
	values := req.Header.Values("X-Forwarded-Proto")
	if len(values) == 0 {
		return false
	}
	protos := strings.Split(values[len(values)-1], ",")
	return strings.EqualFold(strings.TrimSpace(protos[len(protos)-1]), "https")
}

type info struct {
	addr  string
	https bool
}

type ctxKey struct{}

// Middleware resolves each request's client once and puts it in the
// request's context for From and IsHTTPS.
func (r *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := context.WithValue(req.Context(), ctxKey{}, info{addr: r.Addr(req), https: r.HTTPS(req)})
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// From is the client address Middleware found, or "" outside it.
func From(ctx context.Context) string {
	i, _ := ctx.Value(ctxKey{}).(info)
	return i.addr
}

// IsHTTPS reports what Middleware found about the client's scheme.
func IsHTTPS(ctx context.Context) bool {
	i, _ := ctx.Value(ctxKey{}).(info)
	return i.https
}
