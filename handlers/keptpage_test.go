package handlers_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestKeptListGzipped (issue 38): a room page whose message list was
// kept for its reader is sent with the list's compressed form spliced
// between the page's own compressed parts. Whatever the client takes,
// the page is the same: the gzip body is one valid member (its CRC and
// length checked by the reader) and unpacks to the page sent without
// gzip, byte for byte but for the composer's client_id, new for each
// page; a page after a post shows the post.
func TestKeptListGzipped(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	bob := a.signedUp(t, unique("bob"))
	room := roomWith(t, ada, bob)
	for _, text := range []string{"one", "two **bold**", "three https://example.com/x"} {
		postMessage(t, ada, room, text)
	}
	// New for each page: the composer's client_id, where the stream starts.
	perPage := regexp.MustCompile(`name="client_id" value="[^"]*"|after="?[0-9a-f-]+`)
	fetch := func(gz bool) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, a.URL+"/rooms/"+room, nil)
		for _, c := range bob.http.Jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /rooms/%s: %d", room, resp.StatusCode)
		}
		var body io.Reader = resp.Body
		if enc := resp.Header.Get("Content-Encoding"); gz != (enc == "gzip") {
			t.Fatalf("asked gzip %v, Content-Encoding %q", gz, enc)
		}
		if gz {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("reading the page (gzip %v): %v", gz, err)
		}
		if n := resp.Header.Get("Content-Length"); gz && n == "" {
			t.Errorf("a gzip page without its length")
		}
		return perPage.ReplaceAllString(string(b), "")
	}
	fetch(false) // the first view marks the room read: the next ones show no "new since"
	plain := fetch(false)
	for i := range 3 {
		if got := fetch(true); got != plain {
			t.Fatalf("gzip page %d differs from the plain page:\n%s\n----\n%s", i, got, plain)
		}
		if got := fetch(false); got != plain {
			t.Fatalf("plain page %d differs from the first", i)
		}
	}
	if !strings.Contains(plain, "three") {
		t.Fatalf("the page misses a message: %s", plain)
	}
	postMessage(t, ada, room, "four, after the page was kept")
	if got := fetch(true); !strings.Contains(got, "four, after the page was kept") {
		t.Errorf("the page after a post misses it")
	}
}
