package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/killrchat/killrchat/chat"
)

// searchPage searches as c, once the index has caught up.
func searchPage(t testing.TB, a *app, c *client, q string) page {
	t.Helper()
	a.srv.FlushSearchIndex()
	return c.get("/search?q=" + url.QueryEscape(q))
}

// resultTexts are the texts of a search page's results, in order.
func resultTexts(p page) []string {
	var out []string
	p.doc.Find("#search-results li.search-result .text").Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.Text())
	})
	return out
}

// TestSearchOnlyConversationsYouAreIn: a word posted in a room, a DM and
// a room the searcher later left is found in the first two only, and an
// outsider finds nothing, not even the DM.
func TestSearchOnlyConversationsYouAreIn(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	adaLogin, bobLogin := loginOf(t, ada), loginOf(t, bob)
	outsider := a.signedUp(t, unique("eve"))
	word := unique("quokka")

	kept := createRoom(t, ada)
	bob.post("/rooms/"+kept+"/join", nil)
	postMessage(t, bob, kept, "in the room "+word)
	left := createRoom(t, bob)
	ada.post("/rooms/"+left+"/join", nil)
	postMessage(t, bob, left, "in the room ada left "+word)
	if p := ada.post("/rooms/"+left+"/leave", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("leave: %d", p.StatusCode)
	}
	address := adaLogin + "+" + bobLogin
	if adaLogin > bobLogin {
		address = bobLogin + "+" + adaLogin
	}
	postDM(t, bob, address, "in the dm "+word)

	p := searchPage(t, a, ada, word)
	if p.StatusCode != http.StatusOK {
		t.Fatalf("search: %d %s", p.StatusCode, text(p, "main"))
	}
	got := resultTexts(p)
	if strings.Join(got, "|") != "in the dm "+word+"|in the room "+word {
		t.Errorf("ada found %q", got)
	}
	links := p.doc.Find("#search-results a.result-place")
	if href, _ := links.First().Attr("href"); !strings.HasPrefix(href, "/dm/"+address+"?at=") {
		t.Errorf("the DM result links to %q", href)
	}
	if href, _ := links.Last().Attr("href"); !strings.HasPrefix(href, "/rooms/"+kept+"?at=") {
		t.Errorf("the room result links to %q", href)
	}
	// The permalink opens the room with the message highlighted.
	href, _ := links.Last().Attr("href")
	if r := ada.get(href); r.doc.Find("li.message.highlight").Length() != 1 {
		t.Errorf("%s highlights %d messages", href, r.doc.Find("li.message.highlight").Length())
	}
	if got := resultTexts(searchPage(t, a, outsider, word)); len(got) != 0 {
		t.Errorf("an outsider found %q", got)
	}
	if got := resultTexts(searchPage(t, a, outsider, word+" in:@"+adaLogin)); len(got) != 0 {
		t.Errorf("an outsider searching in:@ada found %q", got)
	}
	if got := resultTexts(searchPage(t, a, bob, word)); len(got) != 3 {
		t.Errorf("bob, in all three, found %q", got)
	}
}

// TestSearchQueryLanguage: case and accents do not matter, and from:,
// in:, a phrase and a prefix each narrow the results.
func TestSearchQueryLanguage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	adaLogin, bobLogin := loginOf(t, ada), loginOf(t, bob)
	word := unique("lemur")
	one, two := createRoom(t, ada), createRoom(t, ada)
	bob.post("/rooms/"+one+"/join", nil)
	postMessage(t, ada, one, "cafe "+word+" deployment notes")
	postMessage(t, bob, one, word+" the runbook link")
	postMessage(t, ada, two, word+" link the runbook")
	tests := []struct {
		q    string
		want []string
	}{
		{"Café " + strings.ToUpper(word), []string{"cafe " + word + " deployment notes"}},
		{word + " from:" + bobLogin, []string{word + " the runbook link"}},
		{word + " from:" + adaLogin, []string{word + " link the runbook", "cafe " + word + " deployment notes"}},
		{word + " in:#" + two, []string{word + " link the runbook"}},
		{word + ` "the runbook link"`, []string{word + " the runbook link"}},
		{word + " deplo*", []string{"cafe " + word + " deployment notes"}},
		{word + " runbook", []string{word + " link the runbook", word + " the runbook link"}},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			if got := resultTexts(searchPage(t, a, ada, tt.q)); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("BadQuery", func(t *testing.T) {
		p := searchPage(t, a, ada, "de*")
		if p.StatusCode != http.StatusUnprocessableEntity || p.doc.Find("#search-results .form-error").Length() != 1 {
			t.Errorf("a short prefix: %d %q", p.StatusCode, text(p, "#search-results"))
		}
	})
}

// TestSearchResultsEscapeMarkup: a message's markup is text in a result,
// and <mark> around the matched words is the only markup added.
func TestSearchResultsEscapeMarkup(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	word := unique("gecko")
	content := `<script>alert(1)</script> <b>` + word + `</b> & "quotes"`
	postMessage(t, ada, room, content)
	p := searchPage(t, a, ada, word)
	item := p.doc.Find("#search-results li.search-result .text")
	if item.Length() != 1 {
		t.Fatalf("%d results", item.Length())
	}
	if item.Text() != content {
		t.Errorf("result text %q, want %q", item.Text(), content)
	}
	if n := item.Children().Length(); n != 1 || item.Children().First().Is("mark") == false || item.Find("mark").Text() != word {
		html, _ := item.Html()
		t.Errorf("result markup %s", html)
	}
	if p.doc.Find("script:not([src])").Length() != 0 {
		t.Error("a script element from the message")
	}
}

// TestSearchPagesAndRecent: 25 results are 20 and a "More results" link
// (an opaque cursor) to the other 5; the search is remembered, the live
// search as one types is not.
func TestSearchPagesAndRecent(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	word := unique("tapir")
	for i := range 25 {
		postMessage(t, ada, room, word+" number "+string(rune('a'+i)))
	}
	p := searchPage(t, a, ada, word)
	if got := resultTexts(p); len(got) != 20 || got[0] != word+" number y" {
		t.Fatalf("first page: %d results, first %q", len(got), got[:min(1, len(got))])
	}
	more, ok := p.doc.Find("#search-results a[rel=next]").Attr("href")
	if !ok || strings.Contains(more, "number") {
		t.Fatalf("more link %q", more)
	}
	second := ada.get(more)
	if got := resultTexts(second); len(got) != 5 || got[4] != word+" number a" || second.doc.Find("a[rel=next]").Length() != 0 {
		t.Errorf("second page: %q", got)
	}
	if r := ada.get("/search?q=x&after=forged"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a forged cursor: %d", r.StatusCode)
	}

	live := a.client(t)
	*live = *ada
	live.htmx = true
	frag := live.get("/search?live=1&q=" + url.QueryEscape(word+" numb"))
	if frag.StatusCode != http.StatusOK || frag.doc.Find("#search-results").Length() != 1 || frag.doc.Find("aside.sidebar").Length() != 0 {
		t.Errorf("live search: %d %s", frag.StatusCode, frag.body[:min(200, len(frag.body))])
	}
	var recent []string
	ada.get("/search").doc.Find(".recent-searches li").Each(func(_ int, s *goquery.Selection) { recent = append(recent, s.Text()) })
	if strings.Join(recent, "|") != word {
		t.Errorf("recent searches %q, want only %q", recent, word)
	}
	// Every page has the search box.
	if ada.get("/").doc.Find("aside form.search-box input[name=q]").Length() != 1 {
		t.Error("no search box on the home page")
	}
}

// TestRoomsFilterByName: "All rooms" keeps the rooms whose name starts
// with ?name=, in any case.
func TestRoomsFilterByName(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	stem := unique("filt")
	for _, n := range []string{"Alpha", "alpine", "Beta"} {
		if p := ada.post("/rooms", url.Values{"room_name": {stem + n}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("create: %d", p.StatusCode)
		}
	}
	names := func(p page) []string {
		var out []string
		p.doc.Find("#room-results .room-name").Each(func(_ int, s *goquery.Selection) { out = append(out, s.Text()) })
		return out
	}
	if got := names(ada.get("/rooms?name=" + strings.ToUpper(stem) + "AL")); strings.Join(got, ",") != "#"+stem+"Alpha,#"+stem+"alpine" {
		t.Errorf("filtered %q", got)
	}
	p := ada.get("/rooms?name=" + stem + "zz")
	if len(names(p)) != 0 || !strings.Contains(text(p, "#room-results"), "No room name starts with") {
		t.Errorf("no match: %q", text(p, "#room-results"))
	}
}

// TestSearchFollowsEditsAndDeletes: an edit takes the old text's words out
// of the index and puts the new ones in; a delete takes its words out. The
// index rows themselves go (no posting is read), not only the results
// (which searches check against the stored text anyway).
func TestSearchFollowsEditsAndDeletes(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	before, after, gone := unique("zanzibar"), unique("quokka"), unique("walrus")
	postMessage(t, ada, room, "first "+before)
	postMessage(t, ada, room, "second "+gone)
	edited, deleted := stored(t, room, "first "+before)[0], stored(t, room, "second "+gone)[0]
	a.srv.FlushSearchIndex()
	if p := ada.post("/rooms/"+room+"/messages/"+edited+"/edit", url.Values{"content": {"first " + after}}); p.StatusCode >= 400 {
		t.Fatalf("edit: %d", p.StatusCode)
	}
	if p := ada.post("/rooms/"+room+"/messages/"+deleted+"/delete", confirmed()); p.StatusCode >= 400 {
		t.Fatalf("delete: %d", p.StatusCode)
	}
	for q, want := range map[string]string{before: "", after: "first " + after, gone: ""} {
		if got := strings.Join(resultTexts(searchPage(t, a, ada, q)), "|"); got != want {
			t.Errorf("search %q found %q, want %q", q, got, want)
		}
	}
	r := roomPlace(t, room)
	for _, word := range []string{before, gone} {
		q, err := chat.ParseSearch(word)
		if err != nil {
			t.Fatal(err)
		}
		_, _, st, err := db.Search(ctxT(t), []chat.Conversation{r.Conversation()}, q, chat.ID{}, 20)
		if err != nil {
			t.Fatal(err)
		}
		if st.Postings != 0 {
			t.Errorf("%q: %d index rows left", word, st.Postings)
		}
	}
}
