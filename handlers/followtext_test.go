package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCopiesFollowEditsAndDeletes (issue 37, fault 4): the text of a
// message shown elsewhere — a DM's excerpt in the other member's /dm, a
// mention on /mentions — follows its edits and deletes, and a deleted
// room's mentions go with it.
func TestCopiesFollowEditsAndDeletes(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	address := dmAddress(t, ada.login, bob.login)
	change := func(path string, form url.Values) {
		t.Helper()
		if p := ada.post(path, form); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: %d %s", path, p.StatusCode, text(p, "main"))
		}
	}
	lastDM := func() string {
		t.Helper()
		msgs := dmMessages(t, address)
		return "/dm/" + address + "/messages/" + msgs[len(msgs)-1].ID.String()
	}

	postDM(t, ada, address, "the password is hunter2")
	if !strings.Contains(bob.get("/dm").body, "hunter2") {
		t.Fatal("the DM's excerpt is not on /dm")
	}
	change(lastDM()+"/delete", confirmed())
	if p := bob.get("/dm"); strings.Contains(p.body, "hunter2") {
		t.Errorf("a deleted DM message's text stays on /dm: %s", text(p, "main"))
	}

	postDM(t, ada, address, "my pin is 4242")
	change(lastDM()+"/edit", url.Values{"content": {"my pin is (redacted)"}})
	if p := bob.get("/dm"); strings.Contains(p.body, "4242") || !strings.Contains(p.body, "(redacted)") {
		t.Errorf("an edited DM message's old text stays on /dm: %s", text(p, "main"))
	}

	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "@"+bob.login+" secret sauce")
	change("/rooms/"+room+"/messages/"+latestID(t, room, "@"+bob.login+" secret sauce")+"/edit", url.Values{"content": {"@" + bob.login + " (redacted)"}})
	if p := bob.get("/mentions"); strings.Contains(p.body, "secret sauce") || !strings.Contains(text(p, "main"), "(redacted)") {
		t.Errorf("an edit that keeps the mention leaves the old text on /mentions: %s", text(p, "main"))
	}

	other := roomWith(t, ada, bob)
	postMessage(t, ada, other, "@"+bob.login+" the vault code")
	change("/rooms/"+other+"/delete", nil)
	if p := bob.get("/mentions"); strings.Contains(p.body, "vault code") {
		t.Errorf("a deleted room's mention stays on /mentions: %s", text(p, "main"))
	}
}
