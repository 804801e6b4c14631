package browser

import (
	"context"
	"fmt"
	"testing"
)

// deactivatedSentence is what the login page says to a deactivated
// person (handlers' notice "deactivated").
const deactivatedSentence = "This account is deactivated. Ask an administrator of the site to reactivate it."

// TestDeactivationFromAdmin: an administrator deactivates a person from
// /admin while that person has the app open in two other browsers (one
// with a room page and a second tab on the home page, sharing one live
// connection; one with a stream per tab): every one of their pages goes
// to the login page with the sentence by itself, and a login there is
// refused with it. The administration page, its forms with their errors
// and a new link shown, and the audit log pass the accessibility check.
func TestDeactivationFromAdmin(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Admin"), newPerson("Bob", "Leaver")
	admin := b.newTab("admin")
	admin.signUp(ada)
	// Made an administrator as `killrchat admin promote` does (the first
	// sign-up of this package's keyspace may have been another test's).
	if _, err := db.SetAdmin(context.Background(), ada.login, true); err != nil {
		t.Fatal(err)
	}

	person := b.newTab("bob, room")
	person.signUp(bob)
	room := unique("leaving")
	person.createRoom(room, "Bob's room")
	person.waitStream()
	home := person.sibling("bob, home")
	home.open("/")
	home.waitStream()
	other := b.newTab("bob, another browser", withStreamPerTab)
	other.open("/login")
	other.fill("login", bob.login, "password", bob.password)
	other.click("#login-page button[type=submit]")
	other.waitJS("bob's home page in another browser", atPath("/")+` && `+hasText(".sidebar .me-name", bob.name()))
	other.waitStream()
	for _, p := range []*tab{person, home, other} {
		p.mark()
	}

	// An administrator finds the page from their profile.
	admin.open("/profile")
	admin.click(`#admin-link a[href="/admin"]`)
	admin.waitJS("the administration page", atPath("/admin")+` && document.querySelector("#admin-page h1")`)
	admin.checkAccessibility("/admin")
	admin.fill("q", bob.login)
	admin.click(`#admin-page form[role=search] button[type=submit]`)
	row := fmt.Sprintf(`#admin-page tr[data-login=%q]`, bob.login)
	admin.waitJS("bob found", atPath("/admin?q="+bob.login)+` && document.querySelector(`+js(row)+`)`)
	if got := admin.text(row + " .state"); got != "active" {
		t.Errorf("bob's state before: %q", got)
	}
	admin.click(row + ` form[action$="/deactivate"] button`)
	admin.waitJS("the deactivation's notice", hasText("#admin-page .notice", "The account is deactivated"))
	if got := admin.text(row + " .state"); got != "deactivated" {
		t.Errorf("bob's state after: %q", got)
	}

	// Nobody reloads Bob's pages: each goes to the login page itself.
	for _, p := range []*tab{person, home, other} {
		p.waitJS("the login page with the sentence", atPath("/login?notice=deactivated")+` && `+
			hasText("#flash .notice", deactivatedSentence)+` && document.querySelector("#login-page form")`)
	}
	// And a login is refused with the sentence.
	person.fill("login", bob.login, "password", bob.password)
	person.click("#login-page button[type=submit]")
	person.waitJS("the refused login", hasText("#login-page .form-error", deactivatedSentence))
	if got := person.path(); got != "/login?notice=deactivated" {
		t.Errorf("after the refused login the page is %s", got)
	}

	// The administration page's forms with an error (the link form's
	// numbers are bounded in the browser too: its errors are checked over
	// HTTP), and with a new link shown.
	admin.open("/admin")
	admin.click(`#admin-page input[name=signup_policy][value=domains]`)
	admin.click(`#admin-page form[action="/admin/settings"] button[type=submit]`)
	admin.waitJS("the settings form's error", hasText("#admin-page #err-domains", "at least one domain"))
	if !eval[bool](admin, `document.querySelector("#domains").getAttribute("aria-invalid") === "true"`) {
		t.Error("the domains field with an error is not marked invalid")
	}
	admin.checkAccessibility("/admin, settings with an error")
	admin.open("/admin")
	admin.fill("max_uses", "3")
	admin.click(`#admin-page form[action="/admin/invites"] button[type=submit]`)
	admin.waitJS("the new sign-up link", `document.querySelector("#admin-page #new-link").value.includes("/signup?invite=")`)
	admin.checkAccessibility("/admin, a new link shown")

	// The audit log says who deactivated whom, and when.
	admin.open("/admin/audit")
	found := eval[bool](admin, fmt.Sprintf(`[...document.querySelectorAll("table.audit tbody tr")].some(r =>
		r.querySelector(".actor").textContent.trim() === %s && r.querySelector(".action").textContent.trim() === "deactivate" &&
		r.querySelector(".target").textContent.trim() === %s && r.querySelector("time[datetime]"))`, js(ada.login), js(bob.login)))
	if !found {
		t.Errorf("the audit log lacks %s deactivate %s", ada.login, bob.login)
	}
	admin.checkAccessibility("/admin/audit")
}
