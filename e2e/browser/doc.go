// Package browser holds KillrChat's end-to-end tests in a real browser:
// headless Chromium driven through the DevTools protocol (chromedp) against
// one in-process app instance on a fresh Cassandra keyspace.
//
// The tests need Chromium: /usr/bin/chromium, or the path in $CHROMIUM.
// Without it they fail; they never skip. Screenshots of key moments are
// written as PNG files to e2e/artifacts/.
package browser
