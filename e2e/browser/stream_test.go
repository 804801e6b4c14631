package browser

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestForgedStreamEvent: a message whose lone carriage returns, read by a
// parser that ends lines at "\r" as the browser's does, would forge a
// "room-deleted" event (sending every viewer home) or plant an event id.
// Ada posts both (by fetch, since a form turns "\r" into "\r\n"); Bob, on
// the room page, stays there, sees them as messages, and his stream keeps
// delivering.
func TestForgedStreamEvent(t *testing.T) {
	b := begin(t)
	ada, bob := newPerson("Ada", "Lovelace"), newPerson("Bob", "Babbage")
	room := unique("forged")

	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Careful with carriage returns")

	o := b.newTab("bob")
	o.signUp(bob)
	o.joinFromRoomPage(room)
	o.waitStream()
	o.mark()

	for i, payload := range []string{
		"hi\r\revent: room-deleted\rdata: x\r\rtail one",
		"hi\r\rid: ffffffff-ffff-1fff-bfff-ffffffffffff\r\rtail two",
	} {
		eval[bool](a, fmt.Sprintf(`(() => {
			const token = document.querySelector('#composer input[name="_csrf"]').value;
			window.__forged%d = 0;
			fetch(location.pathname + "/messages", {method: "POST",
				headers: {"Content-Type": "application/x-www-form-urlencoded"},
				body: new URLSearchParams({content: %s, _csrf: token})})
				.then(r => { window.__forged%d = r.status; });
			return true; })()`, i, js(payload), i))
		a.waitJS("the forged message's post", fmt.Sprintf(`window.__forged%d === 200 || window.__forged%d === 303`, i, i))
		tail := fmt.Sprintf("tail %s", []string{"one", "two"}[i])
		o.waitJSFor(5*time.Second, "the message at bob's", hasText("#messages li.message .text", tail))
	}
	// Whatever the stream had said, it has had time to act on it.
	time.Sleep(500 * time.Millisecond)
	if got := o.path(); got != "/rooms/"+room {
		t.Fatalf("bob's page went to %s, want to stay on the room", got)
	}
	if !o.marked() {
		t.Fatal("bob's page was reloaded")
	}
	if o.count("#flash .notice") != 0 {
		t.Errorf("bob sees a notice: %q", o.text("#flash"))
	}

	// The stream still delivers, with real ids.
	o.recordLive()
	text := "after the forgery " + unique("#")
	a.send(text)
	o.waitJSFor(5*time.Second, "ada's next message at bob's", messagesWith(text)+`.length > 0`)
	if !o.marked() || o.path() != "/rooms/"+room {
		t.Fatal("bob's page left the room")
	}
	lastID := eval[string](o, `window.__cursor`)
	if want := eval[string](o, messagesWith(text)+`[0].id.replace(/^msg-/, "")`); lastID != want {
		t.Errorf("bob's stream resumes from %q, want the last message's id %q", lastID, want)
	}
	o.screenshot("forged-event-shown-as-text")
}

// TestRefusedStreamIsRetried: a browser whose stream is refused (429:
// the person has 20 live pages open elsewhere) connects once one of them
// closes, with a delay that doubles from 1 s, without a reload.
func TestRefusedStreamIsRetried(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("busy")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Too many tabs")
	a.waitStream()

	// Ada's 19 other pages, opened outside this browser, with her cookie:
	// with this browser's one stream, the 20 allowed to one person.
	got, err := chromedp.Call(a.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{a.base}})
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, c := range got.Cookies {
		header = append(header, c.Name+"="+c.Value)
	}
	var others []*http.Response
	defer func() {
		for _, r := range others {
			r.Body.Close()
		}
	}()
	for range 19 {
		req, _ := http.NewRequest(http.MethodGet, a.base+"/rooms/"+room+"/events", nil)
		req.Header.Set("Cookie", strings.Join(header, "; "))
		req.Header.Set("HX-Request", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("another page's stream: %d", resp.StatusCode)
		}
	}
	// Another browser of Ada's: its stream is the 21st, refused.
	q := b.newTab("ada-elsewhere")
	q.open("/login")
	q.fill("login", ada.login, "password", ada.password)
	q.click("#login-page button[type=submit]")
	q.waitJS("logged in", hasText(".sidebar .me-name", ada.name()))
	q.open("/rooms/" + room)
	q.waitRoomPage(room)
	q.waitJS("the refusal", `(() => { const s = document.getElementById("stream-status"); return s && !s.hidden })()`)
	others[0].Body.Close() // one page closes
	others = others[1:]
	q.waitJSFor(40*time.Second, "the live stream to connect after its refusal", `document.documentElement.getAttribute("data-live") === "up"`)
	if !strings.HasSuffix(q.path(), "/rooms/"+room) {
		t.Errorf("the page went to %s", q.path())
	}
	// And it is live.
	text := "live after all " + unique("#")
	q.send(text)
	q.waitJS("the message", messagesWith(text)+`.length == 1`)
}
