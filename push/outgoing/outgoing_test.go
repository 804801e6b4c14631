package outgoing

import (
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/push"
)

// TestNameOfLoopbackRefusedAtDial: a name that resolves to loopback
// (localhost, here) is refused when the connection is made, after DNS,
// even by a client that did not check the name first; nothing reaches
// the listener.
func TestNameOfLoopbackRefusedAtDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	c := push.Guard{}.Client(2 * time.Second)
	for _, u := range []string{"http://localhost:" + port, "http://127.0.0.1:" + port, "http://[::ffff:127.0.0.1]:" + port} {
		if resp, err := c.Get(u); err == nil {
			resp.Body.Close()
			t.Errorf("%s: connected", u)
		}
	}
	// The allowance opens what it lists, and only that.
	allowed := push.Guard{Allow: func(ip netip.Addr) bool { return ip == netip.MustParseAddr("127.0.0.1") }}.Client(2 * time.Second)
	if resp, err := allowed.Get("http://127.0.0.1:" + port); err == nil {
		resp.Body.Close()
	}
	if reached.Load() != 1 {
		t.Fatalf("%d connections reached the listener, want the allowed one", reached.Load())
	}
}

func TestTargets(t *testing.T) {
	members := map[string]chat.UserRef{"ada": {Login: "ada"}, "bot1": {Login: "bot1"}, "bot2": {Login: "bot2"}}
	eps := map[string]chat.BotEndpoint{"bot1": {URL: "https://x"}, "bot2": {URL: "https://y"}}
	room := chat.Room{Name: "lobby"}
	for _, tc := range []struct {
		name string
		in   chat.Place
		m    chat.Message
		want string
	}{
		{"MentionInRoom", room, chat.Message{Author: chat.UserRef{Login: "ada"}, Content: "@bot1 hi"}, "bot1"},
		{"NoMention", room, chat.Message{Author: chat.UserRef{Login: "ada"}, Content: "hi bot1"}, ""},
		{"OwnMessage", room, chat.Message{Author: chat.UserRef{Login: "bot1"}, Content: "@bot1 me"}, ""},
		{"System", room, chat.Message{Author: chat.UserRef{Login: "ada"}, Content: "@bot1", System: true}, ""},
		{"DM", chat.DM{Address: "ada+bot2"}, chat.Message{Author: chat.UserRef{Login: "ada"}, Content: "hi"}, "bot1,bot2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Targets(Post{In: tc.in, Conversation: chat.Conversation{Members: members}, Message: tc.m}, eps)
			s := ""
			for i, g := range got {
				if i > 0 {
					s += ","
				}
				s += g
			}
			if s != tc.want {
				t.Errorf("targets %q, want %q", s, tc.want)
			}
		})
	}
}

func TestSign(t *testing.T) {
	// Slack's documented example shape: v0=hex(hmac-sha256("v0:ts:body")).
	got := Sign("8f742231b10e8888abcd99yyyzzz85a5", 1531420618, []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"))
	if got != "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" {
		t.Fatalf("Sign = %s", got)
	}
}
