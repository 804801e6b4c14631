package handlers_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/push"
)

// pushService is a push service on 127.0.0.1 that records what it gets,
// and answers each endpoint path with the status set for it (201 else).
type pushService struct {
	*httptest.Server
	mu     sync.Mutex
	got    []pushed
	status map[string]int
}

type pushed struct {
	path   string
	header http.Header
	body   []byte
}

func newPushService(t *testing.T) *pushService {
	ps := &pushService{status: map[string]int{}}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ps.mu.Lock()
		ps.got = append(ps.got, pushed{path: r.URL.Path, header: r.Header.Clone(), body: b})
		code := ps.status[r.URL.Path]
		ps.mu.Unlock()
		if code == 0 {
			code = http.StatusCreated
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(ps.Close)
	return ps
}

// to is what path got since the last call.
func (ps *pushService) take(path string) []pushed {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out, rest []pushed
	for _, p := range ps.got {
		if p.path == path {
			out = append(out, p)
		} else {
			rest = append(rest, p)
		}
	}
	ps.got = rest
	return out
}

// browser is a browser's push subscription keys, made by the test.
type browser struct {
	key      *ecdh.PrivateKey
	auth     []byte
	endpoint string
}

func newBrowser(t *testing.T, ps *pushService, path string) browser {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return browser{key: k, auth: auth, endpoint: ps.URL + path}
}

func (b browser) form() url.Values {
	return url.Values{"endpoint": {b.endpoint}, "p256dh": {base64.RawURLEncoding.EncodeToString(b.key.PublicKey().Bytes())},
		"auth": {base64.RawURLEncoding.EncodeToString(b.auth)}}
}

// decrypt opens an aes128gcm push body per RFC 8188 and RFC 8291.
func (b browser) decrypt(t *testing.T, body []byte) push.Payload {
	t.Helper()
	if len(body) < 21 {
		t.Fatalf("a push body of %d bytes", len(body))
	}
	salt, idLen := body[:16], int(body[20])
	rs := binary.BigEndian.Uint32(body[16:20])
	keyID, ciphertext := body[21:21+idLen], body[21+idLen:]
	if uint32(len(ciphertext)) > rs {
		t.Fatalf("one record of %d bytes, record size %d", len(ciphertext), rs)
	}
	server, err := ecdh.P256().NewPublicKey(keyID)
	if err != nil {
		t.Fatalf("the sender's key: %v", err)
	}
	shared, err := b.key.ECDH(server)
	if err != nil {
		t.Fatal(err)
	}
	info := append(append([]byte("WebPush: info\x00"), b.key.PublicKey().Bytes()...), keyID...)
	ikm, err := hkdf.Key(sha256.New, shared, b.auth, string(info), 32)
	if err != nil {
		t.Fatal(err)
	}
	cek, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	nonce, _ := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		t.Fatalf("no last-record delimiter")
	}
	var p push.Payload
	if err := json.Unmarshal(plain[:i], &p); err != nil {
		t.Fatalf("payload %q: %v", plain[:i], err)
	}
	return p
}

// checkVAPID checks a push's Authorization: vapid t=<ES256 JWT for the
// service's origin, signed by k>, k=<the server's public key>.
func checkVAPID(t *testing.T, h http.Header, publicKey, audience string) {
	t.Helper()
	auth := h.Get("Authorization")
	var tok, k string
	for _, part := range strings.Split(strings.TrimPrefix(auth, "vapid "), ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			tok = v
		}
		if v, ok := strings.CutPrefix(part, "k="); ok {
			k = v
		}
	}
	if !strings.HasPrefix(auth, "vapid ") || tok == "" || k != publicKey {
		t.Fatalf("Authorization %q, want vapid t=…, k=%s", auth, publicKey)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(k)
	x, y := elliptic.Unmarshal(elliptic.P256(), raw) //nolint:staticcheck // a P-256 point, as VAPID sends it
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if x == nil || len(sig) != 64 || !ecdsa.Verify(&ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}, digest[:],
		new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the VAPID token's signature does not verify with k")
	}
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(claims, &c); err != nil || c.Aud != audience || c.Sub == "" ||
		c.Exp <= time.Now().Unix() || c.Exp > time.Now().Add(24*time.Hour).Unix() {
		t.Fatalf("claims %s, want aud %s, a sub and exp within 24 h", claims, audience)
	}
}

func withPush(c *handlers.Config) {
	c.Push.AllowHTTPLoopback = true
	c.Push.Backoff = 10 * time.Millisecond
}

// TestWebPush (issue 19, item 3): with no connection, a DM brings one
// encrypted push that decrypts to its sender, conversation and text,
// signed by the server's VAPID key; an online person gets none, a room
// message reaches someone at "mentions" only if it mentions them,
// "nothing" gets none, and a 410 removes the subscription. Bad
// subscriptions are refused and change nothing.
func TestWebPush(t *testing.T) {
	ps := newPushService(t)
	a := newApp(t, nil, nil, withPush)
	ada, bob, cy := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("cy"))
	key := strings.TrimSpace(ada.get("/push/key").body)
	bobsPhone := newBrowser(t, ps, "/bob")
	for name, bad := range map[string]url.Values{
		"http endpoint":  {"endpoint": {"http://push.example/x"}, "p256dh": bobsPhone.form()["p256dh"], "auth": bobsPhone.form()["auth"]},
		"short key":      {"endpoint": {bobsPhone.endpoint}, "p256dh": {"AAAA"}, "auth": bobsPhone.form()["auth"]},
		"no auth":        {"endpoint": {bobsPhone.endpoint}, "p256dh": bobsPhone.form()["p256dh"]},
		"not a url":      {"endpoint": {"::"}, "p256dh": bobsPhone.form()["p256dh"], "auth": bobsPhone.form()["auth"]},
		"other loopback": {"endpoint": {"http://localhost:1/x"}, "p256dh": bobsPhone.form()["p256dh"], "auth": bobsPhone.form()["auth"]},
	} {
		if p := bob.post("/push/subscriptions", bad); p.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", name, p.StatusCode)
		}
	}
	if subs, _ := db.PushSubscriptions(ctxT(t), bob.login); len(subs) != 0 {
		t.Fatalf("bad subscriptions stored: %v", subs)
	}
	if p := bob.post("/push/subscriptions", bobsPhone.form()); p.StatusCode != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", p.StatusCode, p.body)
	}
	flush := func() { a.srv.Push().Flush() }

	t.Run("DM", func(t *testing.T) {
		address := dmAddress(t, ada.login, bob.login)
		postDM(t, ada, address, "lunch at <b>noon</b>?")
		flush()
		got := ps.take("/bob")
		if len(got) != 1 {
			t.Fatalf("%d pushes for a DM to someone away, want 1", len(got))
		}
		h := got[0].header
		if h.Get("Content-Encoding") != "aes128gcm" || h.Get("TTL") == "" || h.Get("Urgency") == "" {
			t.Errorf("headers: Content-Encoding %q, TTL %q, Urgency %q", h.Get("Content-Encoding"), h.Get("TTL"), h.Get("Urgency"))
		}
		checkVAPID(t, h, key, ps.URL)
		p := bobsPhone.decrypt(t, got[0].body)
		// Titled with its author alone, as the page's own notification
		// of a DM of two is (issue 39).
		if p.From != ada.login || p.Title != "Ada Lovelace" || p.Conversation != "/dm/"+address ||
			p.Body != "lunch at <b>noon</b>?" || !strings.HasPrefix(p.URL, "/dm/"+address+"?at=") {
			t.Errorf("payload %+v", p)
		}
	})
	t.Run("RoomAtMentions", func(t *testing.T) {
		room := roomWith(t, ada, bob)
		postMessage(t, ada, room, "morning all")
		flush()
		if got := ps.take("/bob"); len(got) != 0 {
			t.Errorf("%d pushes for a room message at mentions level that does not mention bob", len(got))
		}
		postMessage(t, ada, room, "@"+bob.login+" can you look?")
		flush()
		got := ps.take("/bob")
		if len(got) != 1 {
			t.Fatalf("%d pushes for a mention, want 1", len(got))
		}
		if p := bobsPhone.decrypt(t, got[0].body); p.Conversation != "/rooms/"+room || !strings.Contains(p.Body, "can you look?") {
			t.Errorf("payload %+v", p)
		}
		// Everything: every message.
		if p := bob.post("/rooms/"+room+"/notifications", url.Values{"level": {"everything"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("level: %d", p.StatusCode)
		}
		postMessage(t, ada, room, "and another thing")
		flush()
		if got := ps.take("/bob"); len(got) != 1 {
			t.Errorf("%d pushes at everything, want 1", len(got))
		}
		// Never one's own message.
		postMessage(t, bob, room, "(bob talks to himself)")
		flush()
		if got := ps.take("/bob"); len(got) != 0 {
			t.Errorf("%d pushes of bob's own message", len(got))
		}
	})
	t.Run("Nothing", func(t *testing.T) {
		address := dmAddress(t, cy.login, bob.login)
		postDM(t, cy, address, "first")
		flush()
		ps.take("/bob")
		if p := bob.post("/dm/"+address+"/notifications", url.Values{"level": {"nothing"}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("level: %d", p.StatusCode)
		}
		postDM(t, cy, address, "are you there?")
		flush()
		if got := ps.take("/bob"); len(got) != 0 {
			t.Errorf("%d pushes at nothing", len(got))
		}
	})
	t.Run("Online", func(t *testing.T) {
		cysLaptop := newBrowser(t, ps, "/cy")
		if p := cy.post("/push/subscriptions", cysLaptop.form()); p.StatusCode != http.StatusNoContent {
			t.Fatalf("subscribe: %d", p.StatusCode)
		}
		room := roomWith(t, ada, cy)
		st := cy.subscribe(t, room, "")
		defer st.close()
		postMessage(t, ada, room, "@"+cy.login+" you are here")
		flush()
		if got := ps.take("/cy"); len(got) != 0 {
			t.Errorf("%d pushes to someone online", len(got))
		}
	})
	t.Run("Gone", func(t *testing.T) {
		dan := a.signedUp(t, unique("dan"))
		old := newBrowser(t, ps, "/dan-old")
		ps.mu.Lock()
		ps.status["/dan-old"] = http.StatusGone
		ps.status["/dan-busy"] = http.StatusTooManyRequests
		ps.mu.Unlock()
		busy := newBrowser(t, ps, "/dan-busy")
		for _, b := range []browser{old, busy} {
			if p := dan.post("/push/subscriptions", b.form()); p.StatusCode != http.StatusNoContent {
				t.Fatalf("subscribe: %d", p.StatusCode)
			}
		}
		postDM(t, ada, dmAddress(t, ada.login, dan.login), "still there?")
		flush()
		if got := ps.take("/dan-old"); len(got) != 1 {
			t.Errorf("%d pushes to the gone endpoint, want 1", len(got))
		}
		if got := ps.take("/dan-busy"); len(got) != 4 {
			t.Errorf("%d tries at a 429, want 4 (3 retries)", len(got))
		}
		subs, err := db.PushSubscriptions(ctxT(t), dan.login)
		if err != nil || len(subs) != 1 || subs[0].Endpoint != busy.endpoint {
			t.Errorf("after a 410: %v %v, want only the busy one", subs, err)
		}
		if p := dan.post("/push/subscriptions/delete", url.Values{"endpoint": {busy.endpoint}}); p.StatusCode != http.StatusNoContent {
			t.Fatalf("unsubscribe: %d", p.StatusCode)
		}
		if subs, _ := db.PushSubscriptions(ctxT(t), dan.login); len(subs) != 0 {
			t.Errorf("after unsubscribing: %v", subs)
		}
	})
	if m := metricsText(t, a.URL); !strings.Contains(m, `killrchat_push_total{result="sent"}`) || !strings.Contains(m, `killrchat_push_total{result="gone"} 1`) {
		t.Errorf("/metrics: %s", grepLines(m, "killrchat_push"))
	}
}

// TestWebPushOnceAcrossInstances: a DM posted through instance A reaches
// someone subscribed through instance B exactly once.
func TestWebPushOnceAcrossInstances(t *testing.T) {
	ps := newPushService(t)
	ns := startNATS(t, -1)
	var logsA, logsB syncBuffer
	// A's hub is kept to hear what it hears: a level set on B must reach
	// the levels A's pushes read, through the broker.
	a, hubA := instanceHub(t, ns.ClientURL(), &logsA, withPush)
	b := instance(t, ns.ClientURL(), &logsB, withPush)
	levelsHeard := make(chan string, 8)
	// Registered after A's caches, so it hears an invalidation after them.
	hubA.WatchInvalidations(func(inv live.Invalidation) {
		for _, c := range inv.Levels {
			levelsHeard <- c
		}
	})
	ada := a.signedUp(t, unique("ada"))
	bobOnB := b.signedUp(t, unique("bob"))
	phone := newBrowser(t, ps, "/phone")
	if p := bobOnB.post("/push/subscriptions", phone.form()); p.StatusCode != http.StatusNoContent {
		t.Fatalf("subscribe on B: %d", p.StatusCode)
	}
	if ka, kb := strings.TrimSpace(ada.get("/push/key").body), strings.TrimSpace(bobOnB.get("/push/key").body); ka != kb || ka == "" {
		t.Fatalf("the instances sign with different keys: %q %q", ka, kb)
	}
	postDM(t, ada, dmAddress(t, ada.login, bobOnB.login), "across")
	a.srv.Push().Flush()
	b.srv.Push().Flush()
	got := ps.take("/phone")
	if len(got) != 1 {
		t.Fatalf("%d pushes, want exactly 1", len(got))
	}
	if p := phone.decrypt(t, got[0].body); p.Body != "across" {
		t.Errorf("payload %+v", p)
	}

	// Bob turns the DM off on B; A, which read the DM's levels for the
	// push above and keeps them, hears it and sends nothing more.
	address := dmAddress(t, ada.login, bobOnB.login)
	for _, step := range []struct {
		level string
		want  int
	}{{"nothing", 0}, {"everything", 1}} {
		if p := bobOnB.post("/dm/"+address+"/notifications", url.Values{"level": {step.level}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("level %s on B: %d", step.level, p.StatusCode)
		}
		select {
		case c := <-levelsHeard:
			if c != "dm:"+address {
				t.Fatalf("A heard levels of %q, want dm:%s", c, address)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("A never heard of the level %s set on B", step.level)
		}
		postDM(t, ada, address, "after "+step.level)
		a.srv.Push().Flush()
		if got := ps.take("/phone"); len(got) != step.want {
			t.Fatalf("at %s set on B, a post on A made %d pushes, want %d", step.level, len(got), step.want)
		}
	}
}
