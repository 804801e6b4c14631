package handlers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web"
)

// randomBytes is a reader of n seeded pseudo-random bytes.
func randomBytes(n int64, seed uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1}), n)
}

func sha(r io.Reader) string {
	h := sha256.New()
	_, _ = io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil))
}

// upload is one multipart post of the composer.
type upload struct {
	content string
	files   map[string]io.Reader // by file name
	order   []string
	// csrf is the token field's value ("" leaves the field out);
	// header sends it as X-CSRF-Token instead.
	csrf     string
	header   bool
	csrfLast bool // the token after the files
	chunked  bool // no Content-Length
	cutAfter int64
}

// upload streams u to path (the body is never built in memory) and
// returns the response.
func (c *client) upload(path string, u upload) (*http.Response, error) {
	write := func(w io.Writer, files map[string]io.Reader) error {
		mw := multipart.NewWriter(w)
		_ = mw.SetBoundary("killrchat-test-boundary")
		if u.csrf != "" && !u.header && !u.csrfLast {
			if err := mw.WriteField("_csrf", u.csrf); err != nil {
				return err
			}
		}
		if err := mw.WriteField("content", u.content); err != nil {
			return err
		}
		for _, name := range u.order {
			fw, err := mw.CreateFormFile("file", name)
			if err != nil {
				return err
			}
			if _, err := io.Copy(fw, files[name]); err != nil {
				return err
			}
		}
		if u.csrf != "" && !u.header && u.csrfLast {
			if err := mw.WriteField("_csrf", u.csrf); err != nil {
				return err
			}
		}
		return mw.Close()
	}
	var length int64 = -1
	if !u.chunked && u.cutAfter == 0 {
		// An honest Content-Length: a dry run with zeros of the same sizes.
		zeros := map[string]io.Reader{}
		for name, r := range u.files {
			zeros[name] = io.LimitReader(zeroReader{}, r.(interface{ Size() int64 }).Size())
		}
		w := &countingWriter{}
		_ = write(w, zeros)
		length = w.n
	}
	pr, pw := io.Pipe()
	go func() {
		var w io.Writer = pw
		if u.cutAfter > 0 {
			w = &cuttingWriter{w: pw, left: u.cutAfter}
		}
		pw.CloseWithError(write(w, u.files))
	}()
	req, _ := http.NewRequest(http.MethodPost, c.base+path, pr)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=killrchat-test-boundary")
	req.ContentLength = length
	if u.header {
		req.Header.Set("X-CSRF-Token", u.csrf)
	}
	if c.htmx {
		req.Header.Set("HX-Request", "true")
	}
	return c.http.Do(req)
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// cuttingWriter fails after left bytes, as a client that goes away.
type cuttingWriter struct {
	w    io.Writer
	left int64
}

func (c *cuttingWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.w.Write(p)
	c.left -= int64(n)
	if err == nil && c.left == 0 {
		return n, io.ErrClosedPipe
	}
	return n, err
}

// sizedReader is a reader that knows its length (for Content-Length).
type sizedReader struct {
	io.Reader
	n int64
}

func (s sizedReader) Size() int64 { return s.n }

func sized(n int64, seed uint64) sizedReader { return sizedReader{randomBytes(n, seed), n} }

func bytesFile(b []byte) sizedReader { return sizedReader{bytes.NewReader(b), int64(len(b))} }

// postFile uploads one file by the plain form (no JavaScript) and returns
// the download link the room page shows for it.
func postFile(t *testing.T, c *client, room, name string, r sizedReader) string {
	t.Helper()
	resp, err := c.upload("/rooms/"+room+"/messages", upload{csrf: c.ensureCSRF(), files: map[string]io.Reader{name: r}, order: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload %s: %d %s", name, resp.StatusCode, body)
	}
	links := c.get("/rooms/" + room).doc.Find("a.attachment-name")
	if links.Length() == 0 {
		t.Fatal("the room shows no attachment")
	}
	href, _ := links.Last().Attr("href")
	return href
}

func TestUploadAndDownload(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	for _, size := range []int64{0, 1, 999_999, store.ChunkSize, store.ChunkSize + 1, 25 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			href := postFile(t, ada, room, fmt.Sprintf("f%d.bin", size), sized(size, uint64(size)))
			resp, err := ada.http.Get(ada.base + href)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			want := sha(randomBytes(size, uint64(size)))
			if got := sha(resp.Body); got != want {
				t.Errorf("downloaded sha256 %s, want %s", got, want)
			}
			h := resp.Header
			if resp.StatusCode != http.StatusOK || h.Get("Content-Length") != fmt.Sprint(size) || h.Get("ETag") != `"`+want+`"` ||
				h.Get("Accept-Ranges") != "bytes" {
				t.Errorf("status %d, headers %v", resp.StatusCode, h)
			}
		})
	}
}

func TestDownloadRanges(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	const size = 2*store.ChunkSize + 100
	href := postFile(t, ada, room, "r.bin", sized(size, 9))
	all, _ := io.ReadAll(randomBytes(size, 9))
	get := func(header, value string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, ada.base+href, nil)
		req.Header.Set(header, value)
		resp, err := ada.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, tc := range []struct {
		name, rng  string
		start, end int64 // inclusive
	}{
		{"first byte", "bytes=0-0", 0, 0},
		{"at a chunk boundary", fmt.Sprintf("bytes=%d-%d", store.ChunkSize, store.ChunkSize+9), store.ChunkSize, store.ChunkSize + 9},
		{"across a boundary", fmt.Sprintf("bytes=%d-%d", store.ChunkSize-10, store.ChunkSize+9), store.ChunkSize - 10, store.ChunkSize + 9},
		{"across two boundaries", fmt.Sprintf("bytes=%d-%d", store.ChunkSize-1, 2*store.ChunkSize), store.ChunkSize - 1, 2 * store.ChunkSize},
		{"open end", fmt.Sprintf("bytes=%d-", 2*store.ChunkSize), 2 * store.ChunkSize, size - 1},
		{"suffix", "bytes=-100", size - 100, size - 1},
		{"end past the file", fmt.Sprintf("bytes=%d-%d", size-5, size+1000), size - 5, size - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := get("Range", tc.rng)
			if resp.StatusCode != http.StatusPartialContent {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if cr := resp.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end, size) {
				t.Errorf("Content-Range %q", cr)
			}
			if !bytes.Equal(b, all[tc.start:tc.end+1]) {
				t.Error("wrong bytes")
			}
		})
	}
	t.Run("unsatisfiable", func(t *testing.T) {
		resp, _ := get("Range", fmt.Sprintf("bytes=%d-", size))
		if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Errorf("status %d, Content-Range %q", resp.StatusCode, resp.Header.Get("Content-Range"))
		}
	})
	t.Run("If-None-Match", func(t *testing.T) {
		resp, _ := get("Range", "bytes=0-0")
		resp, b := get("If-None-Match", resp.Header.Get("ETag"))
		if resp.StatusCode != http.StatusNotModified || len(b) != 0 {
			t.Errorf("status %d, %d bytes", resp.StatusCode, len(b))
		}
	})
}

// listed counts the attachments, pending or ready, of a conversation.
func listed(t *testing.T, conv string) int {
	t.Helper()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var n int
	if err := sess.Query(`SELECT count(*) FROM attachments_by_conversation WHERE conversation = ?`, conv).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUploadTooLarge(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), chunked: chunked,
				files: map[string]io.Reader{"big.bin": sized(30<<20, 1)}, order: []string{"big.bin"}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "25 MiB") {
				t.Errorf("status %d: %.200s", resp.StatusCode, body)
			}
			if n := listed(t, room); n != 0 {
				t.Errorf("%d attachments stored", n)
			}
		})
	}
	if ada.get("/rooms/"+room).doc.Find(".attachment").Length() != 0 {
		t.Error("a refused upload shows in the room")
	}
}

func TestUploadCutOff(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), cutAfter: 3_000_000,
		files: map[string]io.Reader{"cut.bin": sized(10<<20, 2)}, order: []string{"cut.bin"}})
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a cut-off upload got %d", resp.StatusCode)
	}
	// The handler deletes what it wrote once it sees the body end early.
	deadline := time.Now().Add(15 * time.Second)
	for listed(t, room) != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := listed(t, room); n != 0 {
		t.Errorf("a cut-off upload left %d attachments", n)
	}
	if ada.get("/rooms/"+room).doc.Find(".attachment").Length() != 0 {
		t.Error("a cut-off upload shows in the room")
	}
}

func pngImage(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 0, 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func TestFileHeadersAndAccess(t *testing.T) {
	a := newApp(t, nil, nil)
	ada, bob := a.signedUp(t, unique("ada")), a.signedUp(t, unique("bob"))
	room := createRoom(t, ada)
	for _, tc := range []struct {
		name, body, disposition, contentType string
	}{
		{"page.html", "<!DOCTYPE html><html><script>alert(1)</script></html>", "attachment", "text/html; charset=utf-8"},
		{"pic.svg", `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "attachment", "text/xml; charset=utf-8"},
		{"notes.txt", "hello", "attachment", "text/plain; charset=utf-8"},
		{"pic.png", string(pngImage(800, 600)), "inline", "image/png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			href := postFile(t, ada, room, tc.name, bytesFile([]byte(tc.body)))
			resp, err := ada.http.Get(ada.base + href)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			if !strings.HasPrefix(h.Get("Content-Disposition"), tc.disposition+";") || !strings.Contains(h.Get("Content-Disposition"), tc.name) ||
				h.Get("Content-Type") != tc.contentType || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Content-Security-Policy") != "default-src 'none'; sandbox" {
				t.Errorf("headers %v", h)
			}
			if resp, _ := bob.http.Get(bob.base + href); resp.StatusCode != http.StatusNotFound {
				t.Errorf("an outsider got %d", resp.StatusCode)
			}
		})
	}
	t.Run("preview", func(t *testing.T) {
		img := ada.get("/rooms/" + room).doc.Find(".attachment-preview img")
		if img.Length() != 1 {
			t.Fatalf("%d previews", img.Length())
		}
		if w, _ := img.Attr("width"); w != "480" {
			t.Errorf("width %q", w)
		}
		if h, _ := img.Attr("height"); h != "360" {
			t.Errorf("height %q", h)
		}
		if l, _ := img.Attr("loading"); l != "lazy" {
			t.Errorf("loading %q", l)
		}
		src, _ := img.Attr("src")
		resp, err := ada.http.Get(ada.base + src)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		cfg, _, err := image.DecodeConfig(resp.Body)
		if err != nil || cfg.Width != 480 || cfg.Height != 360 {
			t.Errorf("preview %+v %v", cfg, err)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		for _, path := range []string{"/files/nope/x", "/files/" + "8f0b6b2e-0000-1000-8000-000000000000/x"} {
			if p := ada.get(path); p.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %d", path, p.StatusCode)
			}
		}
	})
}

func TestUploadCSRF(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	token := ada.ensureCSRF()
	for _, tc := range []struct {
		name string
		u    upload
		want int
	}{
		{"no token", upload{}, http.StatusForbidden},
		{"wrong token", upload{csrf: "x" + token}, http.StatusForbidden},
		{"token after the file", upload{csrf: token, csrfLast: true}, http.StatusForbidden},
		{"wrong header", upload{csrf: "x" + token, header: true}, http.StatusForbidden},
		{"header", upload{csrf: token, header: true}, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.u.files, tc.u.order = map[string]io.Reader{"a.txt": bytesFile([]byte("hello"))}, []string{"a.txt"}
			before := listed(t, room)
			resp, err := ada.upload("/rooms/"+room+"/messages", tc.u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if stored := listed(t, room) - before; (stored > 0) != (tc.want == http.StatusSeeOther) {
				t.Errorf("%d stored", stored)
			}
		})
	}
	t.Run("other routes refuse a multipart body without the header", func(t *testing.T) {
		resp, err := ada.upload("/rooms/"+room+"/delete", upload{csrf: token})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d", resp.StatusCode)
		}
		if ada.get("/rooms/"+room).StatusCode != http.StatusOK {
			t.Error("the room was deleted")
		}
	})
}

func TestUploadTextAndSeveralFiles(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	ada.htmx = true
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), content: "two files",
		files: map[string]io.Reader{"a.txt": bytesFile([]byte("a")), "b.txt": bytesFile([]byte("b"))}, order: []string{"a.txt", "b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), `class="attachment-name"`) != 2 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	ada.htmx = false
	msgs := ada.get("/rooms/" + room).doc.Find("li.message:has(.attachment)")
	if msgs.Length() != 2 || strings.TrimSpace(msgs.First().Find(".text").Text()) != "two files" || msgs.Last().Find(".text").Length() != 0 {
		t.Errorf("%d file messages: %s", msgs.Length(), msgs.Text())
	}
}

func TestUploadBudget(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) {
		c.Limits.UploadBytes = web.Rate{Burst: 3 << 20, Per: time.Hour / (3 << 20)}
	})
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	postFile(t, ada, room, "first.bin", sized(2<<20, 1))
	for _, chunked := range []bool{false, true} {
		resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), chunked: chunked,
			files: map[string]io.Reader{"second.bin": sized(2<<20, 2)}, order: []string{"second.bin"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("chunked=%v: status %d", chunked, resp.StatusCode)
		}
	}
	if n := listed(t, room); n != 1 {
		t.Errorf("%d attachments stored, want 1", n)
	}
}

// TestFilesInDMs: a DM takes files like a room, and only its members can
// fetch them.
func TestFilesInDMs(t *testing.T) {
	a := newApp(t, nil, nil)
	adaLogin, bobLogin := unique("fada"), unique("fbob")
	ada, bob, eve := a.signedUp(t, adaLogin), a.signedUp(t, bobLogin), a.signedUp(t, unique("feve"))
	addr, err := store.DMAddress([]string{adaLogin, bobLogin})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ada.upload("/dm/"+addr+"/messages", upload{csrf: ada.ensureCSRF(), files: map[string]io.Reader{"notes.txt": strings.NewReader("for bob")}, order: []string{"notes.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload into a DM: %d", resp.StatusCode)
	}
	link := bob.get("/dm/" + addr).doc.Find("a.attachment-name")
	if link.Length() != 1 {
		t.Fatalf("the DM shows %d attachments", link.Length())
	}
	href, _ := link.Attr("href")
	if r, err := bob.http.Get(bob.base + href); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("member download: %v %v", r, err)
	}
	if r, _ := eve.http.Get(eve.base + href); r.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider got %d", r.StatusCode)
	}
	// An outsider cannot upload into it either.
	resp, err = eve.upload("/dm/"+addr+"/messages", upload{csrf: eve.ensureCSRF(), files: map[string]io.Reader{"x.txt": strings.NewReader("x")}, order: []string{"x.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider's upload: %d", resp.StatusCode)
	}
}
