package browser

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestInstallable checks that the app installs as a web app (issue 39,
// day one, item 1): the page links a manifest that Chromium parses with
// no error, with a name, a start URL, display standalone and icons of 192
// and 512 pixels, and Chromium reports no reason it could not install it.
func TestInstallable(t *testing.T) {
	b := begin(t)
	// Chromium installs nothing from an incognito profile, which every
	// other tab of these tests is: this one is a tab of the browser's
	// own profile, on a page anyone sees (no cookie is left behind).
	dctx, cancelDeadline := context.WithDeadline(b.env.browser, b.deadline)
	defer cancelDeadline()
	tctx, cancelTab := chromedp.NewContext(dctx)
	defer cancelTab()
	a := &tab{b: b, t: t, ctx: tctx, label: "installer", base: b.env.url}
	if err := chromedp.Do(tctx); err != nil {
		t.Fatal(err)
	}
	a.configure(tabConfig{})
	a.open("/login")
	a.waitJS("the login page", `document.querySelector("#login-page")`)

	ctx, cancel := context.WithTimeout(a.ctx, waitTimeout)
	defer cancel()
	got, err := chromedp.Call(ctx, page.GetAppManifest, page.GetAppManifestParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL == "" {
		t.Fatal("the page links no web app manifest")
	}
	for _, e := range got.Errors {
		t.Errorf("manifest %s, line %d: %s", got.URL, e.Line, e.Message)
	}
	m := got.Manifest
	if m == nil {
		t.Fatalf("Chromium parsed no manifest at %s", got.URL)
	}
	// Chromium's parse leaves out the short name and spells display its
	// own way: those are read from the file as served.
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`fetch(`+js(got.URL)+`).then(r => r.json())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "KillrChat" || raw["short_name"] == "" || raw["short_name"] == nil {
		t.Errorf("manifest name %q, short name %v; want KillrChat and a short name", m.Name, raw["short_name"])
	}
	if raw["display"] != "standalone" {
		t.Errorf("manifest display %v (Chromium: %s), want standalone", raw["display"], m.Display)
	}
	if !strings.HasSuffix(m.StartURL, "/") || m.Scope == "" {
		t.Errorf("manifest start URL %q, scope %q; want the site's root", m.StartURL, m.Scope)
	}
	if m.ThemeColor == "" || m.BackgroundColor == "" {
		t.Errorf("manifest theme colour %q, background %q; want both", m.ThemeColor, m.BackgroundColor)
	}
	sizes := map[string]bool{}
	for _, ic := range m.Icons {
		sizes[ic.Sizes] = true
		// Each icon is there and is the size it says.
		w, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(ok => { const i = new Image();
			i.onload = () => ok(i.naturalWidth + "x" + i.naturalHeight); i.onerror = () => ok("broken"); i.src = `+js(ic.URL)+`; })`,
			chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if w != ic.Sizes {
			t.Errorf("icon %s is %s, its manifest entry says %s", ic.URL, w, ic.Sizes)
		}
	}
	for _, want := range []string{"192x192", "512x512"} {
		if !sizes[want] {
			t.Errorf("manifest has no %s icon (has %v)", want, sizes)
		}
	}

	errs, err := chromedp.Call(ctx, page.GetInstallabilityErrors, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs.InstallabilityErrors {
		var args []string
		for _, a := range e.ErrorArguments {
			args = append(args, a.Name+"="+a.Value)
		}
		t.Errorf("Chromium says the app is not installable: %s %v", e.ErrorID, args)
	}
}
