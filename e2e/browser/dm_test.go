package browser

import (
	"github.com/killrchat/killrchat/chat"
	"testing"
)

// waitDMPage waits for the page of the DM at address, as a member.
func (p *tab) waitDMPage(address, title string) {
	p.t.Helper()
	p.waitJS("the DM "+address, atPath("/dm/"+address)+` && `+hasText("#room h1", title)+
		` && document.querySelector("#composer")`)
}

// TestDirectMessages: Ada, without JavaScript, opens a DM from Bob's
// profile (its Message button), posts, and sees her message; Bob, with
// JavaScript, has the DM open and gets her next message live, and his
// reply reaches her page when she reloads it.
func TestDirectMessages(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	address, err := chat.DMAddress([]string{ada.login, bob.login})
	if err != nil {
		t.Fatal(err)
	}

	o := b.newTab("bob")
	o.signUp(bob)
	a := b.newTab("ada", withoutJS)
	a.signUp(ada)

	// Without JavaScript: profile → Message → the DM page → post → 303.
	a.open("/users/" + bob.login)
	a.click("main a.message-button")
	a.waitDMPage(address, bob.name())
	first := "Hello Bob, no scripts here " + unique("#")
	a.typeInto("#content", first)
	a.click("#composer button[type=submit]")
	a.waitJS("ada's message on her DM page", atPath("/dm/"+address)+` && `+messagesWith(first)+`.length === 1`)
	if got := eval[string](a, `location.hash`); got != "#latest" {
		t.Errorf("after posting the page is at %q, want #latest", got)
	}
	if got := a.texts("#my-dms a .entry-name"); !contains(got, bob.name()) {
		t.Errorf("ada's sidebar DMs = %v, want %s", got, bob.name())
	}
	a.screenshot("dm-nojs")

	// With JavaScript: Bob finds the DM in his sidebar and follows it live.
	o.open("/")
	o.waitJS("bob's sidebar DM", hasText("#my-dms a", ada.name()))
	o.click(`#my-dms a[href="/dm/` + address + `#latest"]`)
	o.waitDMPage(address, ada.name())
	if n := eval[int](o, messagesWith(first)+`.length`); n != 1 {
		t.Errorf("bob sees ada's message %d times, want once", n)
	}
	o.waitStream()
	second := "Are you there? " + unique("#")
	a.typeInto("#content", second)
	a.click("#composer button[type=submit]")
	o.waitJS("ada's message arriving live at bob's", messagesWith(second)+`.length === 1`)
	reply := "Here, live " + unique("#")
	o.send(reply)
	o.screenshot("dm-live")

	a.open("/dm/" + address)
	a.waitJS("bob's reply at ada's after a reload", messagesWith(reply)+`.length === 1`)
}
