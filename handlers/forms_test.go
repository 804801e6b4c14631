package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestTakenNamesSaidOnce: a taken login or room name is said once, beside
// its field, not also in a banner over the form.
func TestTakenNamesSaidOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	login := unique("taken")
	a.signedUp(t, login)
	p := a.client(t).post("/signup", signupForm(login, "password1"))
	if p.StatusCode != http.StatusConflict || strings.Count(text(p, "main"), "This login is taken.") != 1 ||
		text(p, "#err-login") != "This login is taken." {
		t.Errorf("taken login: %d %q", p.StatusCode, text(p, "main"))
	}

	c := a.signedUp(t, unique("owner"))
	room := createRoom(t, c)
	p = c.post("/rooms", url.Values{"room_name": {room}})
	if p.StatusCode != http.StatusConflict || strings.Count(text(p, "main"), "This room name is taken.") != 1 ||
		text(p, "#err-room_name") != "This room name is taken." {
		t.Errorf("taken room name: %d %q", p.StatusCode, text(p, "main"))
	}

	// The profile's fields are checked by the server, as sign-up's are,
	// so its messages read the same.
	p = c.get("/profile")
	if n := p.doc.Find("#profile form:not([novalidate])").Length(); n != 0 {
		t.Errorf("%d profile forms leave checking to the browser", n)
	}
}
