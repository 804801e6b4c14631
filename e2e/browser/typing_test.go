package browser

import (
	"fmt"
	"testing"
	"time"
)

// TestTyping (issue 19, item 5): what Ada types shows "Ada Lovelace is
// typing…" on Bob's page of the room, never on her own; it is gone 5 s
// after she stops, and at once when her message arrives.
func TestTyping(t *testing.T) {
	b := begin(t)
	a, o, _ := pair(t, b, desktop, "Typing")
	typeSome := func(text string) {
		eval[bool](a, fmt.Sprintf(`(() => { const c = document.getElementById("content"); c.value = %s;
			c.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, js(text)))
	}
	typeSome("hel")
	o.waitJSFor(3*time.Second, "ada typing on bob's page", `document.getElementById("typing").textContent === "Ada Lovelace is typing…"`)
	if got := a.text("#typing"); got != "" {
		t.Errorf("ada's own page says %q", got)
	}
	took := o.waitJSFor(9*time.Second, "the typing line gone after ada stopped", `document.getElementById("typing").textContent === ""`)
	if took < 3*time.Second {
		t.Errorf("the typing line went after %v, want about 5 s after the last event", took)
	}

	time.Sleep(3 * time.Second) // past the page's pace of one event per 3 s
	typeSome("hello again")
	o.waitJSFor(3*time.Second, "ada typing again", `document.getElementById("typing").textContent !== ""`)
	a.post("hello again " + unique("#"))
	o.waitJSFor(2*time.Second, "the typing line gone with her message", `document.getElementById("typing").textContent === ""`)
}
