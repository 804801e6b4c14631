package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/web/limit"
)

// TestSearchCostIsBounded (issue 37, fault 5): a search of 10,000 terms
// (about 59 KB) runs a bounded number of statements, counted with the
// store's observer, says on the page what it ignored, and is counted on
// /metrics.
func TestSearchCostIsBounded(t *testing.T) {
	st, rec := countingStore(t)
	a := newApp(t, st, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	word := unique("okapi")
	postMessage(t, ada, room, word+" at the zoo")
	if got := resultTexts(searchPage(t, a, ada, word)); len(got) != 1 {
		t.Fatalf("%d results for %s", len(got), word)
	}
	var q strings.Builder
	q.WriteString(word)
	for i := range 10_000 {
		fmt.Fprintf(&q, " w%d", i)
	}
	sumRE := regexp.MustCompile(`(?m)^killrchat_search_statements_sum (\S+)$`)
	before := sumRE.FindStringSubmatch(metricsText(t, a.URL))
	rec.Start()
	start := time.Now()
	p := ada.get("/search?q=" + url.QueryEscape(q.String()))
	took := time.Since(start)
	got := rec.Stop()
	t.Logf("a 10,000-term search: %d statements in %v\n%s", len(got), took, kinds(got))
	if p.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", p.StatusCode, text(p, "main"))
	}
	if len(got) > 60 {
		t.Errorf("a 10,000-term search ran %d statements, budget 60", len(got))
	}
	if notice := text(p, "#search-results .search-notice"); !strings.Contains(notice, "ignored") {
		t.Errorf("no notice of the ignored terms: %q", notice)
	}
	m := metricsText(t, a.URL)
	count := regexp.MustCompile(`(?m)^killrchat_search_statements_count (\d+)$`).FindStringSubmatch(m)
	sum := sumRE.FindStringSubmatch(m)
	if count == nil || count[1] != "2" || sum == nil || before == nil {
		t.Errorf("/metrics: %q, want 2 searches counted", grepLines(m, "killrchat_search_statements"))
	} else {
		t.Logf("/metrics: the 10,000-term search ran %s - %s statements", sum[1], before[1])
	}
}

// TestSearchRateLimited (issue 37, fault 5): searches beyond a person's
// limit are refused with 429, a sentence and Retry-After; the search
// page itself is not a search.
func TestSearchRateLimited(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) {
		c.Limits = limit.Unlimited
		c.Limits.Searches = limit.Rate{Burst: 3, Per: time.Hour}
	})
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	for i := range 3 {
		if p := ada.get("/search?q=tapir" + fmt.Sprint(i)); p.StatusCode != http.StatusOK {
			t.Fatalf("search %d: %d", i, p.StatusCode)
		}
	}
	if p := ada.get("/search"); p.StatusCode != http.StatusOK {
		t.Errorf("the search page: %d", p.StatusCode)
	}
	p := ada.get("/search?q=tapir")
	if p.StatusCode != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" || !strings.Contains(text(p, "main"), "too fast") {
		t.Errorf("a 4th search: %d, Retry-After %q, %q; want 429 with a sentence", p.StatusCode, p.Header.Get("Retry-After"), text(p, "main"))
	}
	if p := bob.get("/search?q=tapir"); p.StatusCode != http.StatusOK {
		t.Errorf("someone else's search: %d", p.StatusCode)
	}
}
