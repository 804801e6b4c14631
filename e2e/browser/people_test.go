package browser

import "testing"

// TestPeopleDirectory (issue 39, day one, item 3): someone in no room
// finds a colleague on /people by the start of their name, without
// JavaScript, and starts a DM from there; the page passes the
// accessibility check.
func TestPeopleDirectory(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	a := b.newTab("ada")
	a.signUp(ada)
	n := b.newTab("bob without js", withoutJS)
	n.signUp(bob)

	n.click(`.sidebar a[href="/people"]`)
	n.waitJS("the people page", atPath("/people")+` && document.querySelector("#people-q")`)
	// By her login: every browser test signs up an Ada Lovelace on this
	// keyspace, more than a page of them; the name's search is below.
	n.fill("people-q", ada.login)
	n.click(`#people form[role="search"] button[type=submit]`)
	n.waitJS("Ada found", atPath("/people?q="+ada.login)+` && `+hasText("#people li.person", ada.name()))
	n.click(`#people li.person[data-login="` + ada.login + `"] a.message-person`)
	n.waitJS("the DM with Ada", `location.pathname.startsWith("/dm/") && document.querySelector("#composer")`)

	a.open("/people?q=babb") // any Bob Babbage will do: the name's prefix
	a.waitJS("Bob found", atPath("/people?q=babb")+` && `+hasText("#people li.person", bob.name()))
	a.checkAccessibility("the people directory")
}
