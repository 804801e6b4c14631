package push

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "142.250.74.10": true, "2607:f8b0:4004:c07::5f": true, "2002:808:808::1": true,
		"64:ff9b::808:808": true, "::ffff:8.8.8.8": true,
		"127.0.0.1": false, "127.0.0.2": false, "::1": false, "0.0.0.0": false, "::": false, "0.1.2.3": false,
		"10.0.0.1": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "192.0.0.170": false, "198.18.0.1": false, "240.0.0.1": false, "255.255.255.255": false,
		"224.0.0.1": false, "ff02::1": false, "fe80::1": false, "fe80::1%eth0": false, "fd00::1": false, "fec0::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::127.0.0.1": false, "2002:7f00:1::": false,
		"64:ff9b::a9fe:a9fe": false, "2001:db8::1": false, "2001::1": false, "100::1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestDialRefusesLoopback: whatever the URL names, the push client never
// connects to a listener on 127.0.0.1 or [::1] without the allowance, and
// with it connects to 127.0.0.1 only.
func TestDialRefusesLoopback(t *testing.T) {
	v4, n4 := countingListener(t, "tcp4", "127.0.0.1:0")
	v6, n6 := countingListener(t, "tcp6", "[::1]:0")
	p4, p6 := v4.Addr().(*net.TCPAddr).Port, v6.Addr().(*net.TCPAddr).Port
	urls := []string{
		fmt.Sprintf("https://127.0.0.1:%d/", p4), fmt.Sprintf("https://localhost:%d/", p4),
		fmt.Sprintf("https://2130706433:%d/", p4), fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/", p4),
		fmt.Sprintf("https://0.0.0.0:%d/", p4), fmt.Sprintf("http://127.0.0.1:%d/", p4),
		fmt.Sprintf("https://[::1]:%d/", p6), fmt.Sprintf("https://localhost:%d/", p6),
		fmt.Sprintf("http://[::]:%d/", p6),
	}
	s := &Sender{}
	client := s.client()
	for _, u := range urls {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: connected (%d)", u, resp.StatusCode)
		}
	}
	if n4.Load() != 0 || n6.Load() != 0 {
		t.Errorf("the listeners got %d and %d connections, want none", n4.Load(), n6.Load())
	}
	allowed := (&Sender{cfg: Config{AllowHTTPLoopback: true}}).client()
	if resp, err := allowed.Get(fmt.Sprintf("http://[::1]:%d/", p6)); err == nil {
		resp.Body.Close()
	}
	if resp, err := allowed.Get(fmt.Sprintf("http://127.0.0.1:%d/", p4)); err == nil {
		resp.Body.Close()
	}
	if n4.Load() != 1 || n6.Load() != 0 {
		t.Errorf("with the allowance: %d connections to 127.0.0.1 (want 1), %d to [::1] (want 0)", n4.Load(), n6.Load())
	}
}

func countingListener(t *testing.T, network, address string) (net.Listener, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l, &n
}
