// This file owns writing a rendered page that holds kept HTML (a
// views.Blob: the message list of a kept page): the page's own bytes are
// compressed for each request, and each blob's compressed form is made
// once and spliced in, so that a page whose list was rendered for its
// reader before costs neither the list's rendering nor its compression.
//
// A gzip body is one deflate stream: a run of blocks, only the last one
// final. Each part is compressed on its own and ends with a sync flush
// (an empty stored block that ends on a byte boundary, not final), so
// the parts follow one another as they are, whatever made them; the
// stream ends with an empty final block, then the CRC-32 and length of
// the whole page.

package handlers

import (
	"bytes"
	"compress/flate"
	"container/list"
	"encoding/binary"
	"hash/crc32"
	"hash/maphash"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/views"
)

// pageWriter collects a page: its own bytes in buf, and the blobs written
// by reference between them.
type pageWriter struct {
	buf   *bytes.Buffer
	mark  int
	parts []pagePart
}

// pagePart is buf[start:end] (volatile: new on each page) or a blob.
type pagePart struct {
	start, end int
	volatile   bool
	blob       *views.Blob
}

func (w *pageWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *pageWriter) WriteString(s string) (int, error) { return w.buf.WriteString(s) }

// WriteBlob takes b by reference (views.BlobWriter).
func (w *pageWriter) WriteBlob(b *views.Blob) error {
	w.cut()
	w.parts = append(w.parts, pagePart{blob: b})
	return nil
}

// WriteVolatile takes p, new on each page (views.VolatileWriter).
func (w *pageWriter) WriteVolatile(p []byte) error {
	w.cut()
	start := w.buf.Len()
	w.buf.Write(p)
	w.parts = append(w.parts, pagePart{start: start, end: w.buf.Len(), volatile: true})
	w.mark = w.buf.Len()
	return nil
}

// cut ends the run of own bytes written since the last blob.
func (w *pageWriter) cut() {
	if n := w.buf.Len(); n > w.mark {
		w.parts = append(w.parts, pagePart{start: w.mark, end: n})
		w.mark = n
	}
}

// bytes is the part's HTML.
func (w *pageWriter) bytes(p pagePart) []byte {
	if p.blob != nil {
		return p.blob.HTML
	}
	return w.buf.Bytes()[p.start:p.end]
}

// gzipMinLength is the size below which a page is sent as it is (the
// gzip middleware's MinLength).
const gzipMinLength = 1400

// send writes the page: as echo's HTMLBlob would for a page without
// blobs; otherwise gzip-compressed part by part when the client takes
// gzip, else part after part.
func (w *pageWriter) send(c echo.Context, status int) error {
	if len(w.parts) == 0 {
		return c.HTMLBlob(status, w.buf.Bytes())
	}
	w.cut()
	size := 0
	for _, p := range w.parts {
		size += len(w.bytes(p))
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	// The gzip middleware's writer is there when the client takes gzip:
	// the page is compressed here, past it. Any other writer (another
	// echo's) gets the page as it is, and compresses it itself.
	plain, zipped := res.Writer.(interface{ Unwrap() http.ResponseWriter })
	zipped = zipped && reflect.TypeOf(res.Writer).String() == "*middleware.gzipResponseWriter"
	if !zipped || size < gzipMinLength || !strings.Contains(c.Request().Header.Get(echo.HeaderAcceptEncoding), "gzip") {
		res.WriteHeader(status)
		for _, p := range w.parts {
			if _, err := res.Write(w.bytes(p)); err != nil {
				return err
			}
		}
		return nil
	}
	body := w.gzip(size)
	defer putRenderBuffer(body)
	res.Writer = plain.Unwrap()
	h := res.Header()
	h.Set(echo.HeaderContentEncoding, "gzip")
	h.Set(echo.HeaderContentLength, strconv.Itoa(body.Len()))
	res.WriteHeader(status)
	_, err := res.Write(body.Bytes())
	return err
}

// gzipHeader is a gzip member's header: deflate, no name, no time, the
// fastest level, unknown system.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff}

// deflateEnd is an empty final block.
var deflateEnd = func() []byte {
	var b bytes.Buffer
	zw, _ := flate.NewWriter(&b, flate.BestSpeed)
	_ = zw.Close()
	return b.Bytes()
}()

var deflaters = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(nil, flate.BestSpeed)
	return zw
}}

// deflateRun appends p compressed on its own, ending with a sync flush.
func deflateRun(dst *bytes.Buffer, p []byte) {
	zw := deflaters.Get().(*flate.Writer)
	zw.Reset(dst)
	_, _ = zw.Write(p)
	_ = zw.Flush()
	deflaters.Put(zw)
}

// packBlob is a blob's compressed form, kept with it.
func packBlob(html []byte) []byte {
	var b bytes.Buffer
	deflateRun(&b, html)
	return b.Bytes()
}

// gzip is the page as one gzip member of size bytes uncompressed.
func (w *pageWriter) gzip(size int) *bytes.Buffer {
	out := renderBuffers.Get().(*bytes.Buffer)
	out.Write(gzipHeader)
	crc := uint32(0)
	for _, p := range w.parts {
		b := w.bytes(p)
		crc = crc32.Update(crc, crc32.IEEETable, b)
		switch {
		case p.blob != nil:
			out.Write(p.blob.Packed(packBlob))
		case p.volatile:
			storedRun(out, b)
		default:
			out.Write(runs.packed(b))
		}
	}
	out.Write(deflateEnd)
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], crc)
	binary.LittleEndian.PutUint32(tail[4:], uint32(size))
	out.Write(tail[:])
	return out
}

// storedRun appends p as stored blocks (a few bytes new on each page:
// not worth compressing), ending on a byte boundary.
func storedRun(dst *bytes.Buffer, p []byte) {
	for len(p) > 0 {
		n := min(len(p), 0xffff)
		dst.Write([]byte{0, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)})
		dst.Write(p[:n])
		p = p[n:]
	}
}

// runCacheBytes bounds the compressed runs kept by runs.
const runCacheBytes = 8 << 20

// runs keeps the compressed form of the runs of pages between their
// blobs and volatile parts (a person's sidebar, a room's header, the
// composer), by their bytes: pages that repeat a run (the same reader
// reading the same room again) do not compress it again. An entry holds
// its run's bytes and is used only for the same bytes.
var runs = &runCache{items: map[uint64]*list.Element{}}

type runCache struct {
	mu    sync.Mutex
	size  int
	items map[uint64]*list.Element
	lru   list.List
}

type runEntry struct {
	sum          uint64
	plain, zdata []byte
}

var runSeed = maphash.MakeSeed()

// packed is p compressed on its own, ending with a sync flush.
func (c *runCache) packed(p []byte) []byte {
	if len(p) < 64 {
		var b bytes.Buffer
		storedRun(&b, p)
		return b.Bytes()
	}
	sum := maphash.Bytes(runSeed, p)
	c.mu.Lock()
	if el, ok := c.items[sum]; ok {
		e := el.Value.(*runEntry)
		if bytes.Equal(e.plain, p) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return e.zdata
		}
	}
	c.mu.Unlock()
	var b bytes.Buffer
	deflateRun(&b, p)
	e := &runEntry{sum: sum, plain: bytes.Clone(p), zdata: b.Bytes()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[sum]; ok {
		c.size -= len(el.Value.(*runEntry).plain) + len(el.Value.(*runEntry).zdata)
		c.lru.Remove(el)
	}
	c.items[sum] = c.lru.PushFront(e)
	c.size += len(e.plain) + len(e.zdata)
	for c.size > runCacheBytes {
		el := c.lru.Back()
		old := el.Value.(*runEntry)
		c.lru.Remove(el)
		delete(c.items, old.sum)
		c.size -= len(old.plain) + len(old.zdata)
	}
	return e.zdata
}
