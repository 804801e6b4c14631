package handlers_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"testing"

	"github.com/killrchat/killrchat/static"
)

// TestStaticFilesPacked: a text file goes out gzipped (once, at the best
// level) to a client that takes gzip, whole and as it is to one that does
// not, and a range is served from the file as it is.
func TestStaticFilesPacked(t *testing.T) {
	t.Parallel()
	base := mainApp(t).URL
	raw, err := fs.ReadFile(static.Files, "app.js")
	if err != nil {
		t.Fatal(err)
	}
	get := func(header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/static/app.js", nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}

	res, body := get("Accept-Encoding", "gzip, deflate, br")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip accepted: %d, Content-Encoding %q", res.StatusCode, res.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	unpacked, err := io.ReadAll(zr)
	if err != nil || string(unpacked) != string(raw) {
		t.Fatalf("the gzipped app.js unpacks to %d bytes (%v), want the file's %d", len(unpacked), err, len(raw))
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" && ct != "application/javascript" {
		t.Errorf("Content-Type %q", ct)
	}
	// The best level: well under what the pages' fastest level makes.
	var fast bytes.Buffer
	fw, _ := gzip.NewWriterLevel(&fast, gzip.BestSpeed)
	_, _ = fw.Write(raw)
	_ = fw.Close()
	if len(body) >= fast.Len() {
		t.Errorf("app.js gzipped to %d bytes, no smaller than the fastest level's %d", len(body), fast.Len())
	}

	if res, body := get(); res.Header.Get("Content-Encoding") != "" || string(body) != string(raw) {
		t.Errorf("no gzip accepted: Content-Encoding %q, %d bytes, want the file's %d", res.Header.Get("Content-Encoding"), len(body), len(raw))
	}
	if res, body := get("Accept-Encoding", "gzip", "Range", "bytes=0-9"); res.StatusCode != http.StatusPartialContent || string(body) != string(raw[:10]) {
		t.Errorf("a range: %d %q, want 206 and the file's first 10 bytes", res.StatusCode, body)
	}
}
