package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/limit"
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
	clientID string          // the composer's client_id ("" leaves it out)
	ctx      context.Context // the request's, if not nil
	// types are the files' Content-Type as the uploader claims them, by
	// file name (application/octet-stream for the others).
	types map[string]string
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
		if u.clientID != "" {
			if err := mw.WriteField("client_id", u.clientID); err != nil {
				return err
			}
		}
		if err := mw.WriteField("content", u.content); err != nil {
			return err
		}
		for _, name := range u.order {
			var fw io.Writer
			var err error
			if claim, ok := u.types[name]; ok {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name}))
				h.Set("Content-Type", claim)
				fw, err = mw.CreatePart(h)
			} else {
				fw, err = mw.CreateFormFile("file", name)
			}
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
	if u.ctx != nil {
		req = req.WithContext(u.ctx)
	}
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	// The handler deletes what it wrote once it sees the body end early,
	// then counts the failure: wait for that, however slow the machine
	// (the client may be done before the handler even starts; the bound
	// only keeps a hang from running forever).
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(ada.get("/metrics").body, `killrchat_uploads_total{result="failed"} 1`); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cut-off upload was not counted as failed")
		}
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) {
		c.Limits.UploadBytes = limit.Rate{Burst: 3 << 20, Per: time.Hour / (3 << 20)}
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
	t.Parallel()
	a := newApp(t, nil, nil)
	adaLogin, bobLogin := unique("fada"), unique("fbob")
	ada, bob, eve := a.signedUp(t, adaLogin), a.signedUp(t, bobLogin), a.signedUp(t, unique("feve"))
	addr, err := chat.DMAddress([]string{adaLogin, bobLogin})
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

// TestDownloadManyRanges: however many ranges a request asks for, and in
// whatever order, a download reads each chunk once at most; more than 8
// ranges get the whole file, overlapping ones are merged.
func TestDownloadManyRanges(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	const size = store.ChunkSize * 3 / 2
	href := postFile(t, ada, room, "ranges.bin", sized(size, 11))
	all, _ := io.ReadAll(randomBytes(size, 11))
	alternating := func(n int) string {
		specs := make([]string, n)
		for i := range specs {
			at := int64(i/2) * 100
			if i%2 == 1 {
				at += store.ChunkSize
			}
			specs[i] = fmt.Sprintf("%d-%d", at, at)
		}
		return "bytes=" + strings.Join(specs, ",")
	}
	get := func(rng string) (*http.Response, []byte, int64) {
		before := db.Store.ChunkReads()
		req, _ := http.NewRequest(http.MethodGet, ada.base+href, nil)
		req.Header.Set("Range", rng)
		resp, err := ada.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b, db.Store.ChunkReads() - before
	}
	t.Run("400 alternating ranges", func(t *testing.T) {
		resp, b, reads := get(alternating(400))
		if resp.StatusCode != http.StatusOK || !bytes.Equal(b, all) {
			t.Errorf("status %d, %d bytes", resp.StatusCode, len(b))
		}
		if reads > 2 {
			t.Errorf("%d chunk reads for a file of 2 chunks", reads)
		}
	})
	t.Run("8 alternating ranges", func(t *testing.T) {
		resp, b, reads := get(alternating(8))
		if resp.StatusCode != http.StatusPartialContent || !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") {
			t.Fatalf("status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if reads > 2 {
			t.Errorf("%d chunk reads for a file of 2 chunks", reads)
		}
		_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		mr := multipart.NewReader(bytes.NewReader(b), params["boundary"])
		parts := 0
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			var start, end, total int64
			if _, err := fmt.Sscanf(p.Header.Get("Content-Range"), "bytes %d-%d/%d", &start, &end, &total); err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(p)
			if !bytes.Equal(got, all[start:end+1]) {
				t.Errorf("part %d-%d: wrong bytes", start, end)
			}
			parts++
		}
		if parts != 8 {
			t.Errorf("%d parts", parts)
		}
	})
	t.Run("overlapping ranges are merged", func(t *testing.T) {
		resp, b, _ := get("bytes=500-900,0-10,5-600")
		if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-900/%d", size) ||
			!bytes.Equal(b, all[:901]) {
			t.Errorf("status %d, Content-Range %q", resp.StatusCode, resp.Header.Get("Content-Range"))
		}
	})
	t.Run("metrics", func(t *testing.T) {
		if p := ada.get("/metrics"); !strings.Contains(p.body, "killrchat_attachment_chunk_reads_total") {
			t.Error("/metrics has no chunk read counter")
		}
	})
}

// TestMalformedMultipart: a multipart body that does not parse gets a 400
// with a sentence, stores nothing, and is not logged as an error.
func TestMalformedMultipart(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	csrf := ada.ensureCSRF()
	const boundary = "killrchat-test-boundary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n" + csrf + "\r\n"
	for _, tc := range []struct{ name, part string }{
		{"NUL in a file name", "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\x00b.txt\"\r\n\r\nhello\r\n"},
		{"a header line without a colon", "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nno colon here\r\n\r\nhello\r\n"},
		{"oversized part headers", "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nX-Big: " + strings.Repeat("x", 11<<20) + "\r\n\r\nhello\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := head + tc.part + "--" + boundary + "--\r\n"
			req, _ := http.NewRequest(http.MethodPost, ada.base+"/rooms/"+room+"/messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
			resp, err := ada.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			p := page{Response: resp}
			p.doc, _ = goquery.NewDocumentFromReader(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.doc.Find("main").Text(), "malformed") {
				t.Errorf("status %d: %.300s", resp.StatusCode, p.doc.Find("main").Text())
			}
			if n := listed(t, room); n != 0 {
				t.Errorf("%d attachments stored", n)
			}
		})
	}
}

// TestFilesTakeATokenEach: a post of several files is as many messages,
// and takes as many tokens of the message limit.
func TestFilesTakeATokenEach(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil, func(c *handlers.Config) {
		c.Limits.Messages = limit.Rate{Burst: 3, Per: time.Hour}
	})
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	files, order := map[string]io.Reader{}, []string{}
	for i := range 10 {
		name := fmt.Sprintf("f%d.txt", i)
		files[name], order = bytesFile([]byte(name)), append(order, name)
	}
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), files: files, order: order})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := ada.get("/rooms/" + room).doc.Find("li.message:has(.attachment)").Length(); n != 3 {
		t.Errorf("%d file messages posted with 3 tokens", n)
	}
}

// TestUploadHangUpAfterLastByte: a client that hangs up once its file is
// stored still gets its message: no file is left without one.
func TestUploadHangUpAfterLastByte(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	a.srv.OnFileStored(func(req context.Context) {
		hangUp()
		select { // the server sees the connection close
		case <-req.Done():
		case <-time.After(5 * time.Second):
			t.Error("the request's context outlived the client")
		}
	})
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{ctx: ctx, csrf: ada.ensureCSRF(),
		files: map[string]io.Reader{"last.txt": bytesFile([]byte("the last byte"))}, order: []string{"last.txt"}})
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the client hung up, yet got %d", resp.StatusCode)
	}
	a.srv.OnFileStored(nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, msgs := listed(t, room), ada.get("/rooms/"+room).doc.Find("li.message:has(.attachment)").Length()
		if files == 1 && msgs == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files stored, %d file messages", files, msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUploadRepeatedClientID: an upload sent again with the same
// client_id (a retry after a lost answer) stores nothing more and answers
// with the first one's message.
func TestUploadRepeatedClientID(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	ada.htmx = true
	send := func() string {
		resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: ada.ensureCSRF(), clientID: "retry-me-123",
			files: map[string]io.Reader{"a.txt": bytesFile([]byte("a")), "b.txt": bytesFile([]byte("b"))}, order: []string{"a.txt", "b.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		doc, _ := goquery.NewDocumentFromReader(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var ids []string
		doc.Find("li.message").Each(func(_ int, s *goquery.Selection) { id, _ := s.Attr("id"); ids = append(ids, id) })
		return strings.Join(ids, " ")
	}
	first, again := send(), send()
	if first == "" || first != again {
		t.Errorf("first answer %q, the repeat's %q", first, again)
	}
	if n := listed(t, room); n != 2 {
		t.Errorf("%d files stored for two files sent twice", n)
	}
}

// TestRoomDeletedMidUpload: a room deleted while a file is uploaded to it
// (its clean-up runs between two chunks) keeps none of the file.
func TestRoomDeletedMidUpload(t *testing.T) {
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	csrf := ada.ensureCSRF()
	const size = 3 * store.ChunkSize
	file := &midway{r: randomBytes(size, 5), at: store.ChunkSize + 10, f: func() {
		for deadline := time.Now().Add(5 * time.Second); listed(t, room) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // the upload is under way
		}
		if p := ada.post("/rooms/"+room+"/delete", nil); p.StatusCode != http.StatusSeeOther {
			t.Errorf("delete: %d", p.StatusCode)
		}
	}}
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: csrf,
		files: map[string]io.Reader{"big.bin": sizedReader{file, size}}, order: []string{"big.bin"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d", resp.StatusCode)
	}
	if n := listed(t, room); n != 0 {
		t.Errorf("%d files outlive the room", n)
	}
}

// midway is a reader that calls f once, when at bytes have been read.
type midway struct {
	r    io.Reader
	at   int64
	read int64
	f    func()
}

func (m *midway) Read(p []byte) (int, error) {
	if m.f != nil && m.read+int64(len(p)) > m.at {
		if m.read < m.at {
			p = p[:m.at-m.read]
		} else {
			m.f()
			m.f = nil
		}
	}
	n, err := m.r.Read(p)
	m.read += int64(n)
	return n, err
}

// stallAfter is a file of n bytes that sends some and then stalls until
// release is closed (then fails, as a client that gives up).
type stallAfter struct {
	r       io.Reader
	n       int64
	release chan struct{}
}

func (s *stallAfter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		<-s.release
		return n, io.ErrClosedPipe
	}
	return n, err
}

func (s *stallAfter) Size() int64 { return s.n }

// TestStalledUploads: a person has at most MaxUploadsPerUser uploads
// under way; an upload slower than the minimum rate is stopped (408, and
// too_slow on /metrics) and leaves nothing.
func TestStalledUploads(t *testing.T) {
	a := newApp(t, nil, nil, func(c *handlers.Config) { c.MaxUploadsPerUser = 2 })
	a.srv.SetUploadGrace(time.Second)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	csrf := ada.ensureCSRF()
	release := make(chan struct{})
	defer close(release) // the stalled clients give up
	for range 2 {
		f := &stallAfter{r: randomBytes(40<<10, 3), n: 1 << 20, release: release}
		go func() {
			// The server stops reading; this client, stuck in its body,
			// sees the answer only once it gives up.
			resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: csrf, files: map[string]io.Reader{"slow.bin": f}, order: []string{"slow.bin"}})
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both are under way
	resp, err := ada.upload("/rooms/"+room+"/messages", upload{csrf: csrf,
		files: map[string]io.Reader{"third.txt": bytesFile([]byte("x"))}, order: []string{"third.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a third upload at once: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(ada.get("/metrics").body, `killrchat_uploads_total{result="too_slow"} 2`) {
		if time.Now().After(deadline) {
			t.Fatal("the stalled uploads were not stopped")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := listed(t, room); n != 0 {
		t.Errorf("stalled uploads left %d files", n)
	}
	// Their places are free again.
	resp, err = ada.upload("/rooms/"+room+"/messages", upload{csrf: csrf,
		files: map[string]io.Reader{"after.txt": bytesFile([]byte("x"))}, order: []string{"after.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("an upload after the stalled ones: %d", resp.StatusCode)
	}
}

// onePagePDF is a small valid PDF of one page, which the browser tests
// open in Chromium's viewer too.
func onePagePDF(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../e2e/browser/testdata/one-page.pdf")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPDFOpensInBrowser (issue 39, item 11: PDFs downloaded instead of
// opening): a PDF is served inline, under a policy the browser's viewer
// runs under (no sandbox), and its link in the conversation opens it
// rather than downloads it. Only bytes that are a PDF get that: a file
// that is only called .pdf, or that its uploader says is
// application/pdf, downloads under the sandbox as any file does.
func TestPDFOpensInBrowser(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	ada := a.signedUp(t, unique("ada"))
	room := createRoom(t, ada)
	const sandboxed, viewer = "default-src 'none'; sandbox", "default-src 'none'; object-src 'self'; frame-ancestors 'none'"
	pdf := string(onePagePDF(t))
	for _, tc := range []struct {
		name, claim, body        string
		contentType, disposition string
		policy                   string
	}{
		{"report.pdf", "application/pdf", pdf, "application/pdf", "inline", viewer},
		{"scan.bin", "", pdf, "application/pdf", "inline", viewer},
		{"notes.pdf", "", "just text, named .pdf", "text/plain; charset=utf-8", "attachment", sandboxed},
		{"claimed.pdf", "application/pdf", "text that says it is a PDF", "text/plain; charset=utf-8", "attachment", sandboxed},
		{"page.pdf", "application/pdf", "<html><script>alert(1)</script>%PDF-1.4", "text/html; charset=utf-8", "attachment", sandboxed},
		{"indented.pdf", "application/pdf", " %PDF-1.4 after a space", "text/plain; charset=utf-8", "attachment", sandboxed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := upload{csrf: ada.ensureCSRF(), files: map[string]io.Reader{tc.name: bytesFile([]byte(tc.body))}, order: []string{tc.name}}
			if tc.claim != "" {
				u.types = map[string]string{tc.name: tc.claim}
			}
			resp, err := ada.upload("/rooms/"+room+"/messages", u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("upload: %d", resp.StatusCode)
			}
			link := ada.get("/rooms/" + room).doc.Find("a.attachment-name").Last()
			href := link.AttrOr("href", "")
			if name := strings.TrimSpace(link.Text()); name != tc.name {
				t.Fatalf("the newest file is %q, want %q", name, tc.name)
			}
			_, downloads := link.Attr("download")
			if wantDownload := tc.disposition == "attachment"; downloads != wantDownload || (!downloads && link.AttrOr("target", "") != "_blank") {
				t.Errorf("the link downloads: %v (target %q), want %v", downloads, link.AttrOr("target", ""), wantDownload)
			}
			resp, err = ada.http.Get(ada.base + href)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			h := resp.Header
			disposition, params, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
			if resp.StatusCode != http.StatusOK || string(body) != tc.body {
				t.Errorf("GET %s: %d, %d bytes of %d", href, resp.StatusCode, len(body), len(tc.body))
			}
			if h.Get("Content-Type") != tc.contentType || disposition != tc.disposition || params["filename"] != tc.name ||
				h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != tc.policy ||
				h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers: Content-Type %q, Content-Disposition %q, nosniff %q, CSP %q, X-Frame-Options %q; want %q, %s, nosniff, %q, DENY",
					h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("X-Content-Type-Options"),
					h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), tc.contentType, tc.disposition, tc.policy)
			}
		})
	}
}
