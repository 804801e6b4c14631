package handlers_test

// Issue 39, "Defects": what a new team hit in its first week, seen over
// HTTP. Each test failed before its fix.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/views"
)

// TestInvitationSurvivesSignup (defect 1): a newcomer opens a closed
// room's invitation link, is sent to log in, follows "Create an account",
// signs up, and is in the room; both pages say where the link leads.
func TestInvitationSurvivesSignup(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner := a.signedUp(t, unique("owner"))
	room := closedRoomBy(t, owner)
	link := inviteLink(t, owner, room, nil)

	newcomer := a.client(t)
	p := newcomer.get(link)
	login := p.Header.Get("Location")
	if p.StatusCode != http.StatusSeeOther || !strings.HasPrefix(login, "/login?") {
		t.Fatalf("the link, logged out: %d %q", p.StatusCode, login)
	}
	p = newcomer.get(login)
	if got := text(p, "#invited"); !strings.Contains(got, "You're invited to #"+room) {
		t.Errorf("the login page says %q, want that the link invites to #%s", got, room)
	}
	signup, _ := p.doc.Find(`#login-page a[href^="/signup"]`).Attr("href")
	if want := "/signup?next=" + url.QueryEscape(link); signup != want {
		t.Fatalf("the login page's Create an account goes to %q, want %q", signup, want)
	}
	p = newcomer.get(signup)
	if got := text(p, "#invited"); !strings.Contains(got, "You're invited to #"+room) {
		t.Errorf("the sign-up page says %q, want that the link invites to #%s", got, room)
	}
	next, _ := p.doc.Find(`#signup input[name="next"]`).Attr("value")
	form := signupForm(unique("newcomer"), "password1")
	form.Set("next", next)
	p = newcomer.post("/signup", form)
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != "/rooms/"+room+"#latest" {
		t.Fatalf("sign-up from the invitation: %d %q, want the room", p.StatusCode, p.Header.Get("Location"))
	}
	if p = newcomer.get("/rooms/" + room); p.StatusCode != http.StatusOK || p.doc.Find("#composer").Length() != 1 {
		t.Errorf("the room after sign-up: %d, composer %d", p.StatusCode, p.doc.Find("#composer").Length())
	}

	t.Run("NoInvitation", func(t *testing.T) {
		p := a.client(t).get("/login?next=" + url.QueryEscape("/invites/not-a-token"))
		if n := p.doc.Find("#invited").Length(); n != 0 {
			t.Errorf("a login page for a dead link says it invites: %s", text(p, "#invited"))
		}
		if p := a.client(t).get("/login"); p.doc.Find(`#login-page a[href="/signup"]`).Length() != 1 {
			t.Errorf("the plain login page lost its plain sign-up link")
		}
	})
}

// TestReactionsOnPagesAtAMessage (defect 4): a page opened at a message
// (a permalink, a search result, a mention, the page a reaction without
// JavaScript goes back to) shows the reactions of the messages after it
// as the room's page does.
func TestReactionsOnPagesAtAMessage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "before it")
	postMessage(t, ada, room, "react to me")
	id := latestID(t, room, "react to me")
	postMessage(t, ada, room, "after it")
	p := bob.post("/rooms/"+room+"/messages/"+id+"/reactions", url.Values{"emoji": {"👍"}})
	if p.StatusCode != http.StatusSeeOther {
		t.Fatalf("react: %d %s", p.StatusCode, text(p, "main"))
	}
	for _, path := range []string{"/rooms/" + room, "/rooms/" + room + "?at=" + id, p.Header.Get("Location")} {
		page := bob.get(path)
		if got := text(page, "#reactions-"+id+` form.reaction[data-emoji="👍"] .count`); got != "1" {
			t.Errorf("%s: the 👍 count reads %q, want 1", path, got)
		}
	}
}

// TestCatchUpBeyondAPage (defect 3): with more unread messages than a
// page holds, the room's page draws no "New since your last visit" above
// a message that was not the first unread; it links to the page of the
// first unread instead, which draws the line above that one.
func TestCatchUpBeyondAPage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "read already")
	if p := bob.get("/rooms/" + room); p.StatusCode != http.StatusOK {
		t.Fatalf("bob reads the room: %d", p.StatusCode)
	}
	r, err := db.RoomFor(ctxT(t), room, ada.login)
	if err != nil {
		t.Fatal(err)
	}
	author, err := db.User(ctxT(t), ada.login)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 90; i++ {
		if _, err := db.PostMessage(ctxT(t), r, author.Ref(), fmt.Sprintf("new %02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	p := bob.get("/rooms/" + room)
	if sep := p.doc.Find("#unread-since"); sep.Length() != 0 {
		t.Errorf("the page draws the line above %q, which was not the first unread (new 00)",
			strings.TrimSpace(sep.Next().Find(".text").Text()))
	}
	jump, ok := p.doc.Find("a.jump-unread").Attr("href")
	if !ok {
		t.Fatalf("no link to the first unread message: %s", text(p, ".message-pane"))
	}
	p = bob.get(jump)
	if got := strings.TrimSpace(p.doc.Find("#unread-since").Next().Find(".text").Text()); got != "new 00" {
		t.Errorf("the first unread's page draws the line above %q, want new 00", got)
	}
}

// TestSmallerDefects (issue 39, item 11): the titles of /dm/new and of a
// creator's refused leave say what they are.
func TestSmallerDefects(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	t.Run("NewDMTitle", func(t *testing.T) {
		if got := text(ada.get("/dm/new"), "title"); !strings.HasPrefix(got, "New direct message") {
			t.Errorf("/dm/new is titled %q", got)
		}
	})
	t.Run("CreatorLeaveTitle", func(t *testing.T) {
		room := roomWith(t, ada, bob)
		p := ada.post("/rooms/"+room+"/leave", nil)
		if p.StatusCode != http.StatusConflict {
			t.Fatalf("the creator's leave: %d, want 409", p.StatusCode)
		}
		if got := text(p, "main h1"); got != "You cannot leave yet" {
			t.Errorf("the refusal is titled %q, want \"You cannot leave yet\"", got)
		}
	})
}

// TestRemovedFromClosedRoom (defect 8): someone removed from a closed
// room is told so when they open it, not that it was deleted.
func TestRemovedFromClosedRoom(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	owner, bob, carol := a.signedUp(t, unique("owner")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("carol"))
	room := closedRoomBy(t, owner, bob)
	if p := owner.post("/rooms/"+room+"/members/"+bob.login+"/remove", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.StatusCode)
	}
	p := bob.get("/rooms/" + room)
	if got := text(p, "main"); p.StatusCode != http.StatusNotFound || !strings.Contains(got, "You were removed from #"+room) {
		t.Errorf("the removed member sees %d %q, want a 404 saying they were removed", p.StatusCode, got)
	}
	// Someone who never was in it learns nothing of it.
	p = carol.get("/rooms/" + room)
	if got := text(p, "main"); p.StatusCode != http.StatusNotFound || strings.Contains(got, "removed") {
		t.Errorf("an outsider sees %d %q", p.StatusCode, got)
	}
}

// confirmed is the form of a delete that was asked about and said yes to
// (issue 39): a new one each time, as client.post adds its token to it.
func confirmed() url.Values { return url.Values{"confirm": {"yes"}} }

// TestDeleteAsksWithoutJS (issue 39, item 11): without JavaScript, a
// message's Delete (a post without confirm=yes) deletes nothing and goes
// to a page that asks (GET, so a reload posts nothing); its "Yes, delete
// it" deletes; Cancel goes back to the message. The message's own page
// links to the question rather than deleting at once. Someone who may
// not delete it is refused, not asked.
func TestDeleteAsksWithoutJS(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "delete me later")
	id := latestID(t, room, "delete me later")
	path := "/rooms/" + room + "/messages/" + id + "/delete"
	kept := func(what string) {
		t.Helper()
		if m, err := storedMessage(t, roomPlace(t, room), id); err != nil || m.Content != "delete me later" {
			t.Fatalf("%s deleted the message: %+v %v", what, m, err)
		}
	}

	if p := bob.post(path, nil); p.StatusCode != http.StatusForbidden {
		t.Errorf("bob's delete of ada's message: %d, want 403", p.StatusCode)
	}
	if p := bob.get(path); p.StatusCode != http.StatusForbidden {
		t.Errorf("bob asks to delete ada's message: %d, want 403", p.StatusCode)
	}
	if p := ada.get("/rooms/" + room + "/messages/" + id); p.doc.Find(`#message-page a.delete-link[href="`+path+`"]`).Length() != 1 ||
		p.doc.Find(`#message-page form[action="`+path+`"] input[name=confirm]`).Length() != 0 {
		t.Errorf("the message's page deletes without asking, or does not link to the question: %s", text(p, "#message-page"))
	}
	p := ada.post(path, nil)
	if p.StatusCode != http.StatusSeeOther || p.Header.Get("Location") != path {
		t.Fatalf("the first delete: %d %q, want 303 to %s", p.StatusCode, p.Header.Get("Location"), path)
	}
	kept("the first delete")
	p = ada.get(path)
	if p.StatusCode != http.StatusOK || text(p, "main h1") != "Delete this message?" || !strings.HasPrefix(text(p, "title"), "Delete this message?") {
		t.Fatalf("the question: %d %q (title %q)", p.StatusCode, text(p, "main h1"), text(p, "title"))
	}
	form := p.doc.Find(`form.confirm-delete-message[method=post][action="` + path + `"]`)
	if form.Find(`input[name=confirm][value=yes]`).Length() != 1 || form.Find(`input[name=_csrf]`).Length() != 1 ||
		strings.TrimSpace(form.Find("button").Text()) != "Yes, delete it" {
		t.Errorf("the question's form: %s", text(p, "main"))
	}
	if href := form.Find("a").AttrOr("href", ""); !strings.Contains(href, "?at="+id) {
		t.Errorf("Cancel goes to %q, want the message", href)
	}
	kept("asking")
	if p := ada.post(path, confirmed()); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("yes, delete it: %d", p.StatusCode)
	}
	if _, err := storedMessage(t, roomPlace(t, room), id); err == nil {
		t.Error("the message is still there after yes")
	}
	if p := ada.get(path); p.StatusCode != http.StatusNotFound {
		t.Errorf("the question about a deleted message: %d, want 404", p.StatusCode)
	}
}

// TestLongTextKeptWithoutJS (issue 39, item 11: a paste over 4,000
// characters was cut silently): the composer and the editor have no
// maxlength, which cuts a paste without a word; a text over the limit
// is refused (422), nothing is stored or changed, and the page gives the
// whole text back with an error that says how long it is.
func TestLongTextKeptWithoutJS(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := roomWith(t, ada)
	long := strings.Repeat("lorem ipsum ", 342)[:4100]
	p := ada.get("/rooms/" + room)
	if box := p.doc.Find("#composer textarea#content"); box.Length() != 1 || box.AttrOr("maxlength", "none") != "none" || box.AttrOr("data-max", "") != "4000" {
		t.Errorf("the composer's text box: %d, maxlength %q, data-max %q; want no maxlength", box.Length(), box.AttrOr("maxlength", "none"), box.AttrOr("data-max", ""))
	}
	p = ada.post("/rooms/"+room+"/messages", url.Values{"content": {long}})
	if p.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a post of 4,100 characters: %d, want 422", p.StatusCode)
	}
	if got := p.doc.Find("#composer textarea#content").Text(); got != long {
		t.Errorf("the composer gives back %d characters of the 4,100", len(got))
	}
	if got := text(p, "#composer-error"); !strings.Contains(got, "4000") || !strings.Contains(got, "4100") {
		t.Errorf("the composer's error says %q, want the limit and the length", got)
	}
	if ids := stored(t, room, long); len(ids) != 0 {
		t.Errorf("the text over the limit was stored %d times", len(ids))
	}

	postMessage(t, ada, room, "short")
	id := latestID(t, room, "short")
	path := "/rooms/" + room + "/messages/" + id
	if box := ada.get(path).doc.Find("#edit-content"); box.Length() != 1 || box.AttrOr("maxlength", "none") != "none" {
		t.Errorf("the editor: %d, maxlength %q; want no maxlength", box.Length(), box.AttrOr("maxlength", "none"))
	}
	p = ada.post(path+"/edit", url.Values{"content": {long}})
	if p.StatusCode != http.StatusUnprocessableEntity || p.doc.Find("#edit-content").Text() != long {
		t.Errorf("an edit to 4,100 characters: %d, the editor gives back %d characters", p.StatusCode, len(p.doc.Find("#edit-content").Text()))
	}
	if m, err := storedMessage(t, roomPlace(t, room), id); err != nil || m.Content != "short" {
		t.Errorf("the refused edit changed the message: %q %v", m.Content, err)
	}
}

// TestMessageSource (issue 39, day one: edit in place): the editor gets
// one's own message's stored Markdown; another's is refused.
func TestMessageSource(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	postMessage(t, ada, room, "**bold** and\n\n- a list")
	id := latestID(t, room, "**bold** and\n\n- a list")
	path := "/rooms/" + room + "/messages/" + id + "/source"
	if p := ada.get(path); p.StatusCode != http.StatusOK || p.body != "**bold** and\n\n- a list" {
		t.Errorf("ada's source: %d %q", p.StatusCode, p.body)
	}
	if p := bob.get(path); p.StatusCode != http.StatusForbidden {
		t.Errorf("bob reads ada's source: %d, want 403", p.StatusCode)
	}
}

// TestSwitcherFinds (issue 39, day one: the quick switcher): GET /switch
// finds one's rooms, DMs and people by name, as JSON for the dialog and
// as a page of links without JavaScript; nobody else's rooms.
func TestSwitcherFinds(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob, eve := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob")), a.signedUp(t, unique("eve"))
	room := roomWith(t, ada)
	secret := roomWith(t, eve)
	addr := ada.login + "+" + bob.login
	if bob.login < ada.login {
		addr = bob.login + "+" + ada.login
	}
	postDM(t, ada, addr, "hello bob")
	find := func(c *client, q string) []views.SwitchItem {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, c.base+"/switch?"+url.Values{"q": {q}}.Encode(), nil)
		req.Header.Set("Accept", "application/json")
		p := c.do(req)
		var items []views.SwitchItem
		if p.StatusCode != http.StatusOK || json.Unmarshal([]byte(p.body), &items) != nil {
			t.Fatalf("GET /switch?q=%s: %d %s", q, p.StatusCode, p.body)
		}
		return items
	}
	has := func(items []views.SwitchItem, kind, url string) bool {
		return slices.ContainsFunc(items, func(it views.SwitchItem) bool { return it.Kind == kind && it.URL == url })
	}
	if got := find(ada, strings.ToUpper(room)); !has(got, "room", "/rooms/"+room) {
		t.Errorf("ada's room by name: %+v", got)
	}
	if got := find(ada, secret); has(got, "room", "/rooms/"+secret) {
		t.Errorf("eve's room offered to ada: %+v", got)
	}
	got := find(ada, bob.login)
	if !has(got, "dm", "/dm/"+addr) || !has(got, "person", "/dm/"+addr) {
		t.Errorf("bob by login: %+v, want the DM and the person", got)
	}
	if got := find(ada, "nothing-like-it"); len(got) != 0 {
		t.Errorf("a name nothing has: %+v", got)
	}
	p := ada.get("/switch?q=" + room)
	if p.StatusCode != http.StatusOK || p.doc.Find(`#switch-page a[href="/rooms/`+room+`"]`).Length() != 1 {
		t.Errorf("the page without JavaScript: %d %s", p.StatusCode, text(p, "main"))
	}
}
