package handlers

// The embedded files under /static/: a day of caching, and the text ones
// gzipped once per process at the best level. The pages' own gzip runs at
// the fastest level (it is paid on every page); for files that never
// change, the best level is paid once and saves every cold visitor bytes
// (app.js: about a quarter of its level-1 size).

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// packedTypes are the files worth compressing, by extension.
var packedTypes = map[string]bool{".js": true, ".css": true, ".svg": true, ".webmanifest": true, ".txt": true}

// packedFile is a static file gzipped at the best level.
type packedFile struct {
	body []byte
	kind string
}

func (s *Server) staticFiles() echo.HandlerFunc {
	files := http.StripPrefix("/static/", http.FileServer(http.FS(s.cfg.Static)))
	var packed sync.Map // file name → *packedFile
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=86400")
		if p := s.packedStatic(&packed, c.Request()); p != nil {
			h := c.Response().Header()
			h.Set("Content-Type", p.kind)
			h.Set("Content-Encoding", "gzip")
			h.Set("Content-Length", strconv.Itoa(len(p.body)))
			h.Add("Vary", "Accept-Encoding")
			c.Response().WriteHeader(http.StatusOK)
			if c.Request().Method != http.MethodHead {
				_, _ = c.Response().Write(p.body)
			}
			return nil
		}
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// packedStatic is the gzipped form of the file r asks for, or nil when it
// is to be served as it is: a client that takes no gzip, a range, a
// binary or unknown file.
func (s *Server) packedStatic(cache *sync.Map, r *http.Request) *packedFile {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.Header.Get("Range") != "" ||
		!strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		return nil
	}
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	if !fs.ValidPath(name) || !packedTypes[path.Ext(name)] {
		return nil
	}
	if p, ok := cache.Load(name); ok {
		return p.(*packedFile)
	}
	raw, err := fs.ReadFile(s.cfg.Static, name)
	if err != nil {
		return nil // the file server says 404
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil
	}
	kind := mime.TypeByExtension(path.Ext(name))
	if kind == "" {
		kind = http.DetectContentType(raw)
	}
	p := &packedFile{body: buf.Bytes(), kind: kind}
	cache.Store(name, p)
	return p
}
