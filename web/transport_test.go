package web_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web"
)

func TestTransportSecure(t *testing.T) {
	t.Parallel()
	_, proxies, _ := net.ParseCIDR("10.0.0.0/8")
	trusting := web.Transport{TrustedProxies: []*net.IPNet{proxies}}
	for _, tc := range []struct {
		name      string
		transport web.Transport
		remote    string
		tls       bool
		proto     []string
		want      bool
	}{
		{"Plain", trusting, "10.1.2.3:5000", false, nil, false},
		{"DirectTLS", web.Transport{}, "192.0.2.1:5000", true, nil, true},
		{"SecureCookiesFlag", web.Transport{SecureCookies: true}, "192.0.2.1:5000", false, nil, true},
		{"TrustedProxy", trusting, "10.1.2.3:5000", false, []string{"https"}, true},
		{"TrustedProxyUpperCase", trusting, "10.1.2.3:5000", false, []string{" HTTPS "}, true},
		{"UntrustedProxy", trusting, "192.0.2.1:5000", false, []string{"https"}, false},
		{"NoProxiesTrusted", web.Transport{}, "10.1.2.3:5000", false, []string{"https"}, false},
		{"ProxySaysHTTP", trusting, "10.1.2.3:5000", false, []string{"http"}, false},
		// The nearest proxy's word is the last one.
		{"ChainEndsHTTPS", trusting, "10.1.2.3:5000", false, []string{"http, https"}, true},
		{"ChainEndsHTTP", trusting, "10.1.2.3:5000", false, []string{"https, http"}, false},
		{"TwoHeadersLastWins", trusting, "10.1.2.3:5000", false, []string{"http", "https"}, true},
		{"RemoteWithoutPort", trusting, "10.1.2.3", false, []string{"https"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tc.remote
			if tc.tls {
				req.TLS = &tls.ConnectionState{}
			}
			for _, p := range tc.proto {
				req.Header.Add("X-Forwarded-Proto", p)
			}
			c := echo.New().NewContext(req, httptest.NewRecorder())
			if got := tc.transport.Secure(c); got != tc.want {
				t.Fatalf("Secure = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTransportHeaders(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		e := echo.New()
		var marked bool
		e.Use(web.Transport{SecureCookies: secure}.Headers)
		e.GET("/", func(c echo.Context) error {
			marked = web.SecureCookie(c.Request())
			return c.NoContent(http.StatusOK)
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("secure=%v: Cache-Control %q", secure, rec.Header().Get("Cache-Control"))
		}
		if hsts := rec.Header().Get("Strict-Transport-Security") != ""; hsts != secure || marked != secure {
			t.Errorf("secure=%v: HSTS %v, request marked secure %v", secure, hsts, marked)
		}
	}
}

func TestSecureCookie(t *testing.T) {
	t.Parallel()
	plain := httptest.NewRequest(http.MethodGet, "/", nil)
	if web.SecureCookie(plain) {
		t.Fatal("a plain request wants Secure cookies")
	}
	if !web.SecureCookie(web.MarkSecure(plain)) {
		t.Fatal("a marked request does not")
	}
	direct := httptest.NewRequest(http.MethodGet, "/", nil)
	direct.TLS = &tls.ConnectionState{}
	if !web.SecureCookie(direct) {
		t.Fatal("a TLS request does not")
	}
}
