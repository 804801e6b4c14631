package browser

import (
	"context"
	_ "embed"
	"strings"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core, vendored under axe/ (see axe/VERSION.txt). It is
// put into pages through DevTools only, never served by the app.
//
//go:embed axe/axe.min.js
var axeSource string

// axeViolation is one failed axe rule, with where it failed.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// checkAccessibility runs axe-core on the page as it is and fails the test
// for every violation of impact serious or critical (WCAG 2.x A and AA and
// axe's best practices).
func (p *tab) checkAccessibility(what string) {
	p.t.Helper()
	if !eval[bool](p, `typeof window.axe === "object"`) {
		eval[bool](p, axeSource+";\ntrue")
	}
	ctx, cancel := context.WithTimeout(p.ctx, 3*waitTimeout)
	defer cancel()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {
			runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]},
		}).then(r => (window.__axePasses = r.passes.length, r)).then(r => r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
			targets: v.nodes.map(n => n.target.join(" ") + (n.failureSummary ? " — " + n.failureSummary.replace(/\s+/g, " ") : ""))})))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("axe on %s: %v", what, err)
	}
	if passes := eval[int](p, `window.__axePasses || 0`); passes == 0 && len(found) == 0 {
		p.fail("axe on %s checked nothing", what)
	}
	for _, v := range found {
		if v.Impact != "serious" && v.Impact != "critical" {
			p.t.Logf("%s: axe (%s, not failing): %s: %s", what, v.Impact, v.ID, v.Help)
			continue
		}
		p.t.Errorf("%s: accessibility (%s) %s: %s\n    %s", what, v.Impact, v.ID, v.Help, strings.Join(v.Targets, "\n    "))
	}
}
