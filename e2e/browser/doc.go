// Package browser holds KillrChat's end-to-end tests in a real browser:
// headless Chromium driven through the DevTools protocol (chromedp) against
// one in-process app instance on a fresh Cassandra keyspace.
//
// The tests need Chromium: $CHROMIUM, or /usr/bin/chromium, or one on
// $PATH. Without it they fail; they never skip. Screenshots of key moments
// (and of every failure) are written as PNG files to e2e/artifacts/.
// E2E_TRACE=1 logs how long each browser step and each wait took.
//
// Accessibility is checked with axe-core, vendored under axe/ (test-only;
// see axe/VERSION.txt), put into pages through DevTools: every page at
// 1280×800 and 390×844 must have no violation of impact serious or
// critical.
package browser
