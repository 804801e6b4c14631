package web

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Transport is how requests reach the server: whether cookies are always
// Secure, and which proxies' X-Forwarded-Proto is believed.
type Transport struct {
	SecureCookies  bool
	TrustedProxies []*net.IPNet
}

// Headers sets what depends on the transport and on the page
// being personal: every response is Cache-Control: no-store (pages show a
// person's rooms and messages; the static files and the live stream set
// their own caching), and a request that came over TLS gets HSTS and is
// marked so its cookies are Secure (SecureCookie).
func (t Transport) Headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "no-store")
		if t.Secure(c) {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
			c.SetRequest(MarkSecure(c.Request()))
		}
		return next(c)
	}
}

// Secure reports whether the browser reached us over TLS: with
// --secure-cookies always; otherwise by direct TLS, or X-Forwarded-Proto:
// https from a trusted proxy. Cookies set for such a request are Secure.
func (t Transport) Secure(c echo.Context) bool {
	r := c.Request()
	if t.SecureCookies || r.TLS != nil {
		return true
	}
	proto := r.Header.Values("X-Forwarded-Proto")
	if len(proto) == 0 || len(t.TrustedProxies) == 0 {
		return false
	}
	// The nearest proxy's word is the last one.
	last := proto[len(proto)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	if !strings.EqualFold(strings.TrimSpace(last), "https") {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	for _, n := range t.TrustedProxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// secureKey marks, in a request's context, a request that came over TLS.
type secureKey struct{}

// MarkSecure returns r marked as having come over TLS (directly or from a
// trusted proxy), so cookies set for it are Secure.
func MarkSecure(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), secureKey{}, true))
}

// SecureCookie says whether cookies set for r must be Secure: r came over
// TLS, or MarkSecure marked it.
func SecureCookie(r *http.Request) bool {
	secure, _ := r.Context().Value(secureKey{}).(bool)
	return secure || r.TLS != nil
}
