package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// The SSRF guard. A webhook URL is chosen by an API client but fetched by
// the server, from inside the network: without a guard it could point the
// server at its database, a metadata service (169.254.169.254) or an
// admin port on localhost. So, unless WEBHOOK_ALLOW_PRIVATE=true:
//
//   - when an endpoint is created, a host that resolves must resolve only
//     to public addresses (refused with BAD_USER_INPUT otherwise); one that
//     does not resolve yet is taken, for the next check stops it;
//   - when a delivery connects, the address actually dialled is checked
//     again (the dialer's Control hook), so a name that resolved to a public
//     address then and to a private one now (DNS rebinding) reaches nothing;
//   - redirects are not followed, and no proxy from the environment is used
//     (it would be the address checked, not the endpoint's).

// Resolver looks host names up; *net.Resolver is one. Tests give their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// blockedPrefixes are ranges no webhook may reach beyond what netip's
// predicates name: the "this network" block, carrier-grade NAT, IETF
// protocol assignments, the documentation and benchmarking ranges, the
// reserved block; and in IPv6 the well-known forms that embed an IPv4
// address (NAT64's well-known prefixes, IPv4-compatible, SIIT's
// IPv4-translated, 6to4, Teredo), which a host may route to that IPv4
// address, loopback and private ones included, as well as the discard,
// site-local and documentation ranges. (ISATAP and network-specific NAT64
// prefixes can sit under any prefix: a host that routes them is the
// operator's to fence in.)
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("3fff::/20"),
	netip.MustParsePrefix("fec0::/10"),
}

// Blocked reports whether a webhook may not reach ip: a loopback, private,
// link-local, unspecified, multicast or otherwise non-public address.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// guard checks URLs and connections.
type guard struct {
	allowPrivate bool
	resolver     Resolver
}

// maxURLLen bounds an endpoint's URL.
const maxURLLen = 2048

// lookupTimeout bounds the look-up of an endpoint's host at creation: a
// public name answers well within it, and one that does not is checked
// at delivery anyway.
const lookupTimeout = 2 * time.Second

// checkURL parses and checks an endpoint's URL as it is created.
func (g guard) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > maxURLLen {
		return nil, fmt.Errorf("url is longer than %d characters", maxURLLen)
	}
	// U+FFFD is what a lone surrogate escape ("\ud800") in a JSON string
	// decodes to: a character the client never sent, as in a reason.
	if !utf8.ValidString(raw) || strings.ContainsRune(raw, utf8.RuneError) {
		return nil, errors.New("url holds bytes that are not UTF-8, or U+FFFD")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return nil, fmt.Errorf("url must be an absolute http or https URL, such as https://shop.example/webhooks")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("url must use http or https")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("url has no host")
	}
	if u.Fragment != "" {
		return nil, errors.New("url must not have a fragment (#…): it is never sent")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("url's port must be a number from 1 to 65535")
		}
	}
	if g.allowPrivate {
		return u, nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if Blocked(ip) {
			return nil, errors.New("url points at a loopback, private or link-local address; webhooks must reach a public address (for development, WEBHOOK_ALLOW_PRIVATE=true allows it)")
		}
		return u, nil
	}
	// A name that does not resolve here (no DNS in a test sandbox, a record
	// not published yet, a slow server) is taken: the dialer's Control hook
	// checks whatever it resolves to at each delivery, so it can never
	// reach a blocked address. Only a name seen resolving to one is refused.
	lookupCtx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := g.resolver.LookupIPAddr(lookupCtx, host)
	if err != nil {
		return u, nil
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || Blocked(ip) {
			return nil, errors.New("url's host resolves to a loopback, private or link-local address; webhooks must reach a public address (for development, WEBHOOK_ALLOW_PRIVATE=true allows it)")
		}
	}
	return u, nil
}

// errBlockedAddress is what a delivery to a blocked address fails with.
var errBlockedAddress = errors.New("refused to connect to a loopback, private or link-local address")

// control is the dialer's Control hook: it runs for the address about to
// be connected to, after name resolution, and refuses blocked ones.
func (g guard) control(_, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errBlockedAddress, address)
	}
	if Blocked(ap.Addr()) {
		return fmt.Errorf("%w: %s", errBlockedAddress, ap.Addr())
	}
	return nil
}
