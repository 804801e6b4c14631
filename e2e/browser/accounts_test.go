package browser

import "testing"

// TestAccounts: sign up with the form (htmx posts it; HX-Redirect loads the
// home page), log out, log in again with the form, and a wrong password
// shows its message in the page without a full reload.
func TestAccounts(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	p := b.newTab("ada")

	p.open("/")
	p.waitJS("the login page for a visitor", atPath("/login")+` && document.querySelector("#login-page form")`)

	p.signUp(ada)
	if got := p.text("#flash .notice"); got != "Welcome to KillrChat!" {
		t.Errorf("notice after sign-up = %q, want the welcome notice", got)
	}
	if got := p.text(".sidebar .me .me-login"); got != "@"+ada.login {
		t.Errorf("sidebar login = %q, want @%s", got, ada.login)
	}
	if !eval[bool](p, `typeof htmx === "object"`) {
		t.Fatal("htmx did not load on the page")
	}
	p.screenshot("home-after-signup")

	// Log out: a plain form in the sidebar.
	p.click(".sidebar .me form button")
	p.waitJS("the login page after logout", atPath("/login?notice=logged-out")+` && `+hasText("#flash .notice", "You are logged out."))
	if n := p.count(".sidebar .me"); n != 0 {
		t.Errorf("the sidebar still shows a user after logout")
	}
	// The session is really gone: a page that needs a login sends us back.
	p.open("/rooms")
	p.waitJS("the login page for /rooms", atPath("/login?next=%2Frooms")+` && document.querySelector("#login-page form")`)

	// Log in again with the form; it came with next=/rooms.
	p.fill("login", ada.login, "password", ada.password)
	p.click("#login-page button[type=submit]")
	p.waitJS("All rooms after login", atPath("/rooms")+` && `+hasText(".sidebar .me-name", ada.name())+` && document.querySelector("#rooms")`)

	// A wrong password, in a second browser that is logged out.
	q := b.newTab("intruder")
	q.open("/login")
	q.fill("login", ada.login, "password", "not the password")
	q.mark()
	q.click("#login-page button[type=submit]")
	q.waitJS("the wrong-password message", hasText("#login-page .form-error", "Wrong login or password."))
	if !q.marked() {
		t.Error("a wrong password reloaded the whole page; htmx should have swapped the form")
	}
	if got := q.lastStatus(); got != 401 {
		t.Errorf("a wrong password answered %d, want 401", got)
	}
	if got := q.path(); got != "/login" {
		t.Errorf("after a wrong password the page is %s, want /login", got)
	}
	if got := eval[string](q, `document.querySelector("#login-page #login").value`); got != ada.login {
		t.Errorf("the login field holds %q after the error, want %q kept", got, ada.login)
	}
	if got := eval[string](q, `document.querySelector("#login-page #password").value`); got != "" {
		t.Errorf("the password field was refilled with %q", got)
	}
	q.screenshot("wrong-password")

	// And the right password in the same form works.
	q.typeInto("#password", ada.password)
	q.click("#login-page button[type=submit]")
	q.waitJS("the home page after login", atPath("/")+` && `+hasText(".sidebar .me-name", ada.name()))
}
