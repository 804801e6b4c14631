package handlers_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// TestBadInputIs400 (issue 37, fault 7): bytes that are not text in a
// push endpoint or a search, and a NUL in an avatar's file name, are
// answered 400 with a sentence, and nothing is stored: no subscription,
// no recent search, no picture.
func TestBadInputIs400(t *testing.T) {
	ps := newPushService(t)
	a := newApp(t, nil, nil, withPush)
	bob := a.signedUp(t, unique("bob"))
	keys := newBrowser(t, ps, "/k").form()
	sentence := func(t *testing.T, p page) {
		t.Helper()
		if p.StatusCode != http.StatusBadRequest || !strings.Contains(text(p, "body"), ".") {
			t.Errorf("%d %q, want 400 with a sentence", p.StatusCode, text(p, "body"))
		}
	}
	t.Run("PushEndpoint", func(t *testing.T) {
		for _, endpoint := range []string{ps.URL + "/\xff", ps.URL + "/\xc3\x28", "https://push.example/\xed\xa0\x80"} {
			sentence(t, bob.post("/push/subscriptions", url.Values{"endpoint": {endpoint}, "p256dh": keys["p256dh"], "auth": keys["auth"]}))
			sentence(t, bob.post("/push/subscriptions/delete", url.Values{"endpoint": {endpoint}}))
		}
		sentence(t, bob.post("/push/subscriptions", url.Values{"endpoint": {ps.URL + "/k"}, "p256dh": {"\xff" + keys["p256dh"][0]}, "auth": keys["auth"]}))
		if subs, err := db.PushSubscriptions(ctxT(t), bob.login); err != nil || len(subs) != 0 {
			t.Errorf("stored: %v %v", subs, err)
		}
	})
	t.Run("AvatarName", func(t *testing.T) {
		sentence(t, bob.postPicture("me\x00.png", picture(t, 64, 64, true)))
		if _, err := db.Avatar(ctxT(t), bob.login); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("a picture was stored: %v", err)
		}
	})
	t.Run("Search", func(t *testing.T) {
		sentence(t, bob.get("/search?q=deploy%FF%FE"))
		sentence(t, bob.get("/search?q=%C3%28+release"))
		if recent, err := db.RecentSearches(ctxT(t), bob.login); err != nil || len(recent) != 0 {
			t.Errorf("remembered: %q %v", recent, err)
		}
	})
}
