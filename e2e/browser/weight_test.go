package browser

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestRoomPageWeight measures (and logs; timings are reported, never
// asserted) what a cold load of a room page with 50 messages costs: the
// bytes over the wire (HTML, CSS, scripts; gzip as served) and the time
// until it is interactive: app.js has run and the live stream is open.
// It fails only if the page stops being light (over 70 KB cold, the
// bound of issue 39).
func TestRoomPageWeight(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("weight")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Fifty messages")
	seedMessages(t, room, ada, 50)

	ctx, cancel := context.WithTimeout(a.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		t.Fatal(err)
	}
	// The moment the live stream is open, from navigation start.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `document.addEventListener("DOMContentLoaded", () => new MutationObserver(() => {
			if (document.documentElement.getAttribute("data-live") === "up") window.__streamOpenAt = window.__streamOpenAt || performance.now();
		}).observe(document.documentElement, {attributes: true}));`,
	}); err != nil {
		t.Fatal(err)
	}
	a.open("/rooms/" + room)
	a.waitRoomPage(room)
	a.waitStream()
	type entry struct {
		Name                       string
		Transfer, Encoded, Decoded float64
	}
	got := eval[[]entry](a, `[performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")]
		.filter(e => !e.name.includes("/events"))
		.map(e => ({Name: e.name.replace(location.origin, ""), Transfer: e.transferSize, Encoded: e.encodedBodySize, Decoded: e.decodedBodySize}))`)
	var transfer, decoded float64
	for _, e := range got {
		t.Logf("%-50s %6.0f B over the wire (%6.0f B unpacked)", e.Name, e.Transfer, e.Decoded)
		transfer += e.Transfer
		decoded += e.Decoded
	}
	times := eval[map[string]float64](a, `(() => { const n = performance.getEntriesByType("navigation")[0];
		return {domInteractive: n.domInteractive, domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd,
			streamOpen: window.__streamOpenAt || 0}; })()`)
	t.Logf("cold room page with 50 messages: %.1f KB over the wire (%.1f KB unpacked), %d requests", transfer/1024, decoded/1024, len(got))
	t.Logf("DOM interactive %.0f ms, DOMContentLoaded (app.js ran) %.0f ms, load %.0f ms, live stream open %.0f ms after navigation start",
		times["domInteractive"], times["domContentLoaded"], times["load"], times["streamOpen"])
	if transfer > 70*1024 {
		t.Errorf("a cold room page costs %.1f KB, want it light (under 70 KB)", transfer/1024)
	}
}
