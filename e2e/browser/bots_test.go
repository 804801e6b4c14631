package browser

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestBotsFromAdmin: an administrator makes a bot on /admin (its token
// shown once) and a room's incoming webhook on the room's hooks page;
// a post to the hook shows in the room under the hook's name with the
// "bot" mark, live, and the hook's bot carries the mark in the member
// list. Both pages pass the accessibility check, with and without the
// secret shown.
func TestBotsFromAdmin(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Admin")
	p := b.newTab("admin")
	p.signUp(ada)
	if _, err := db.SetAdmin(context.Background(), ada.login, true); err != nil {
		t.Fatal(err)
	}
	p.open("/admin")
	p.waitJS("the administration page", `document.querySelector("#admin-page form.new-bot")`)
	p.checkAccessibility("/admin with the bot form")
	botLogin := unique("helper")
	p.fill("login", botLogin, "firstname", "Helper")
	p.click(`#admin-page form.new-bot button[type=submit]`)
	p.waitJS("the bot's token", `(document.querySelector("#new-token") || {}).value`)
	if tok := eval[string](p, `document.querySelector("#new-token").value`); !strings.HasPrefix(tok, "kcb_") {
		t.Fatalf("token %q", tok)
	}
	p.checkAccessibility("/admin with a new bot's token")

	room := unique("builds")
	p.createRoom(room, "CI results")
	p.open("/rooms/" + room + "/hooks")
	p.waitJS("the hooks page", `document.querySelector("#hooks-page form.new-hook-form")`)
	p.checkAccessibility("a room's webhooks page")
	p.fill("name", "CI")
	p.click(`#hooks-page form.new-hook-form button[type=submit]`)
	p.waitJS("the hook's address", `(document.querySelector("#new-hook-url") || {}).value`)
	p.checkAccessibility("a room's webhooks page with a new address")
	addr := eval[string](p, `document.querySelector("#new-hook-url").value`)

	p.open("/rooms/" + room)
	p.waitRoomPage(room)
	p.waitStream()
	resp, err := http.Post(addr, "application/json", strings.NewReader(`{"text": "*Build 7* passed", "username": "Jenkins"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("hook post: %d", resp.StatusCode)
	}
	last := `[...document.querySelectorAll("#messages li.message")].pop()`
	p.waitJS("the hook's message, live", `((l) => l && (l.querySelector(".text strong") || {}).textContent === "Build 7")(`+last+`)`)
	if got := eval[string](p, `((l) => l.querySelector(".author .user-link").textContent.trim())(`+last+`)`); got != "Jenkins via CI" {
		t.Errorf("author %q", got)
	}
	if got := eval[string](p, `((l) => (l.querySelector(".author .bot-mark") || {textContent: ""}).textContent.trim())(`+last+`)`); !strings.EqualFold(got, "bot") {
		t.Errorf("the bot mark beside the message's author: %q", got)
	}
	p.open("/rooms/" + room + "/members")
	p.waitJS("the member list", `document.querySelector(".bot-mark")`)
	if n := p.count(".bot-mark"); n < 1 {
		t.Errorf("%d bot marks in the member list", n)
	}
}
