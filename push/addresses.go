// This file owns where a push may go: only to public addresses, checked
// on the endpoint's host when a browser subscribes, and again on the
// address each connection is about to reach (after DNS, so a name that
// resolves to 127.0.0.1 or is rebound to 10.0.0.1 later is refused too);
// redirects are never followed. The one exception is the operator's
// --push-allow-http-loopback, which lets tests run a push service on
// 127.0.0.1 and nothing else: no other loopback, no private range.

package push

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// allowedLoopback is the one address the loopback allowance opens.
var allowedLoopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// notPublic are the ranges a push never reaches, beyond what netip's
// predicates name (loopback, private, link-local, multicast,
// unspecified; link-local covers 169.254.169.254, the cloud metadata
// service): addresses that are special, shared or for documentation.
var notPublic = prefixes(
	"0.0.0.0/8",          // "this network": 0.0.0.0 reaches the host itself
	"100.64.0.0/10",      // carrier-grade NAT, shared address space
	"192.0.0.0/24",       // IETF protocol assignments
	"192.0.2.0/24",       // TEST-NET-1
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // TEST-NET-2
	"203.0.113.0/24",     // TEST-NET-3
	"240.0.0.0/4",        // reserved, and the broadcast address
	"::/96",              // IPv4-compatible (deprecated), ::, ::1
	"64:ff9b:1::/48",     // local-use NAT64
	"100::/64",           // discard
	"2001::/23",          // IETF protocol assignments (Teredo, ORCHID, ...)
	"2001:db8::/32",      // documentation
	"fec0::/10",          // site-local (deprecated)
	"3fff::/20",          // documentation
	"5f00::/16",          // segment routing
	"::ffff:0:0:0/96",    // SIIT translated
	"255.255.255.255/32", // broadcast
)

// Ranges whose addresses carry an IPv4 address, judged by it.
var (
	sixToFour = netip.MustParsePrefix("2002::/16")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// publicAddr reports whether a connection to ip may leave for the
// internet: not loopback, private, link-local, multicast, unspecified,
// shared or reserved, in whatever form (an IPv4-mapped IPv6 address is
// judged as its IPv4; 6to4 and NAT64 by the IPv4 they carry).
func publicAddr(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return false
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case sixToFour.Contains(ip):
			return publicAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case nat64.Contains(ip):
			return publicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || !ip.IsGlobalUnicast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// errPrivate refuses a connection to an address that is not public.
var errPrivate = errors.New("push: refused a connection to an address that is not public")

// Guard is the rule of where the server's own requests may go (Web
// Push, and bots' outgoing webhooks): public addresses, and those Allow
// lets through (an operator's list; nil for none).
type Guard struct {
	Allow func(netip.Addr) bool
}

// Allowed reports whether a request may connect to ip.
func (g Guard) Allowed(ip netip.Addr) bool {
	return publicAddr(ip) || (g.Allow != nil && g.Allow(ip.Unmap()))
}

// controlDial is the dialer's last word: it sees the address the socket
// is about to connect to, whatever name or form the endpoint used.
func (g Guard) controlDial(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !g.Allowed(ap.Addr()) {
		return errPrivate
	}
	return nil
}

// Client is an HTTP client whose every connection is checked by the
// guard after DNS, with no proxy (one would connect wherever it is
// asked) and redirects returned as they are, never followed.
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, ControlContext: g.controlDial}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        100,
			MaxIdleConnsPerHost: 10,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckHost reports whether an endpoint's host may be reached: not an
// address the guard refuses, nor a name that only ever names something
// local (localhost, .internal, a single label) or that a URL parser
// reads as an IPv4 address (2130706433, 0x7f.1, 127.1). A name is
// checked again on each connection, after DNS.
func (g Guard) CheckHost(host string) bool {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.Allowed(ip)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	switch {
	case len(labels) < 2, numericLabel(last):
		return false
	case last == "localhost", last == "local", last == "internal", last == "localdomain", last == "lan",
		last == "intranet", last == "corp", last == "home", strings.HasSuffix(name, ".home.arpa"):
		return false
	}
	return true
}

// guard is the Web Push rule: the loopback allowance opens 127.0.0.1
// alone.
func (s *Sender) guard() Guard {
	if !s.cfg.AllowHTTPLoopback {
		return Guard{}
	}
	return Guard{Allow: func(ip netip.Addr) bool { return ip == allowedLoopback }}
}

// allowedAddr reports whether a push may connect to ip.
func (s *Sender) allowedAddr(ip netip.Addr) bool { return s.guard().Allowed(ip) }

// client is the HTTP client pushes go through (Guard.Client).
func (s *Sender) client() *http.Client { return s.guard().Client(10 * time.Second) }

// checkHost says why an endpoint's host is not one to push to, or nil
// (Guard.CheckHost).
func (s *Sender) checkHost(host string) error {
	if !s.guard().CheckHost(host) {
		return errors.New("A push endpoint must be a push service on the internet.")
	}
	return nil
}

// numericLabel reports whether a host's last label makes a URL parser
// read the host as an IPv4 address (WHATWG: decimal, 0x hex, octal).
func numericLabel(label string) bool {
	if label == "" {
		return false
	}
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}
