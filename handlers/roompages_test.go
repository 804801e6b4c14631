package handlers_test

import (
	"encoding/base64"

	"github.com/PuerkitoBio/goquery"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/handlers"
)

// TestRoomPagesNameNoClosedRoom (issue 37, fault 6): the next link of
// All rooms filtered by name is a token that names no room the reader
// cannot see, not even once decoded, and a cursor made up or tampered
// with is refused; following the links lists every visible room once.
func TestRoomPagesNameNoClosedRoom(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.RoomsPerPage = 2 })
	owner, outsider := a.signedUp(t, unique("owner")), a.signedUp(t, unique("out"))
	prefix := unique("pg") + "x"
	kinds := []string{"open", "closed", "open", "open"}
	for i, kind := range kinds {
		name := prefix + string(rune('a'+i))
		if p := owner.post("/rooms", url.Values{"room_name": {name}, "kind": {kind}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("create %s: %d %s", name, p.StatusCode, text(p, "main"))
		}
	}
	closed := prefix + "b"
	var seen []string
	next := "/rooms?name=" + prefix
	for pages := 0; next != "" && pages < 5; pages++ {
		p := outsider.get(next)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", next, p.StatusCode)
		}
		p.doc.Find("a.room-name").Each(func(_ int, s *goquery.Selection) {
			seen = append(seen, strings.TrimPrefix(strings.TrimSpace(s.Text()), "#"))
		})
		next, _ = p.doc.Find("a[rel=next], a.next-page").Attr("href")
		if strings.Contains(strings.ToLower(revealed(next)), closed) {
			t.Errorf("the next link names the closed room %s: %s", closed, next)
		}
	}
	if strings.Join(seen, ",") != prefix+"a,"+prefix+"c,"+prefix+"d" {
		t.Errorf("rooms listed to an outsider: %v", seen)
	}
	// after= is no cursor any more: the first page.
	if p := outsider.get("/rooms?name=" + prefix + "&after=" + closed); !strings.Contains(text(p, "main"), prefix+"a") {
		t.Errorf("after= is taken as a cursor: %s", text(p, "main"))
	}
	for _, forged := range []string{"forged", closed} {
		if p := outsider.get("/rooms?name=" + prefix + "&page=" + url.QueryEscape(forged)); p.StatusCode != http.StatusBadRequest {
			t.Errorf("a made-up cursor %q: %d, want 400", forged, p.StatusCode)
		}
	}
}

// revealed is a link with every layer of its page token that base64
// decodes, decoded: what a reader can learn from it.
func revealed(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	out := []string{link, u.RawQuery}
	for _, v := range u.Query() {
		for _, s := range v {
			out = append(out, s)
			for _, layer := range decodeLayers(s, 3) {
				out = append(out, layer)
			}
		}
	}
	return strings.Join(out, "\n")
}

func decodeLayers(s string, depth int) []string {
	if depth == 0 {
		return nil
	}
	var out []string
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.RawURLEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			out = append(out, string(b))
			for _, part := range strings.Split(string(b), "|") {
				out = append(out, decodeLayers(part, depth-1)...)
			}
		}
	}
	return out
}
