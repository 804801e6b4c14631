package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSearchFromTheUI (issue 20): Ada writes a word in a room, searches
// for it from the sidebar's box, sees it marked in the results, narrows
// the search as she types (live, without leaving the page), and follows
// the result to the message, highlighted in its room.
func TestSearchFromTheUI(t *testing.T) {
	b := begin(t)
	a := b.newTab("ada")
	a.signUp(newPerson("Ada", "Lovelace"))
	room := unique("searchroom")
	a.createRoom(room, "Where things are")
	a.waitStream()
	word := unique("runbook")
	id := a.send("The " + word + " link is on the wiki")

	a.typeInto(".sidebar form.search-box input[name=q]", strings.ToUpper(word))
	a.click(".sidebar form.search-box button[type=submit]")
	a.waitJS("the search page", `location.pathname === "/search" && document.querySelector("#search-results")`)
	// The index follows the post a moment later: the page is read again
	// until it has caught up.
	for deadline := time.Now().Add(10 * time.Second); a.count("#search-results mark") == 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		a.run("reload", chromedp.Reload())
		a.waitJS("the search page again", `document.querySelector("#search-results")`)
	}
	if got := a.texts("#search-results mark"); len(got) != 1 || got[0] != word {
		t.Fatalf("marked %q, want %q", got, word)
	}
	a.screenshot("results")
	a.checkAccessibility("search results")

	// Typing narrows the results live: a word the message lacks.
	url := eval[string](a, `location.href`)
	a.typeInto("#search-page-q", " nowhere")
	a.waitJS("live results with nothing found", hasText("#search-results", "No messages found"))
	if got := eval[string](a, `location.href`); got != url {
		t.Errorf("the live search left the page: %s", got)
	}
	// And back: the prefix of the word finds it again.
	eval[string](a, `document.querySelector("#search-page-q").value = ""`)
	a.typeInto("#search-page-q", word[:5]+"*")
	a.waitJS("live results with the prefix", `document.querySelectorAll("#search-results li.search-result").length === 1`)

	a.click("#search-results a.result-place")
	a.waitJS("the room, opened at the message", fmt.Sprintf(`location.pathname === "/rooms/%s" && document.querySelector("#%s.highlight")`, room, id))
	a.checkConsole()
}
