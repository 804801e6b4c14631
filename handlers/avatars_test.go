package handlers_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// picture is a w×h PNG, opaque (a gradient) or with transparency.
func picture(t *testing.T, w, h int, opaque bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(255)
			if !opaque && x < w/2 {
				a = 0
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(x), uint8(y), 200, a})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// postPicture posts the profile's picture form: the token first, then
// the file, as the browser sends it.
func (c *client) postPicture(name string, data []byte) page {
	c.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("_csrf", c.ensureCSRF())
	fw, _ := mw.CreateFormFile("picture", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/profile/avatar", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(req)
}

// TestAvatars: a picture uploaded from the profile is kept as a 128 px
// and a 48 px square, served to people signed in (with an ETag and a
// cache lifetime), drawn in place of the initials on both instances, and
// replaced or removed with its files; what is not a PNG, JPEG or WebP,
// or is too large, is refused with the profile page and changes nothing.
func TestAvatars(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	ada := a.signedUp(t, unique("pic"))
	bobOnB := b.signedUp(t, unique("viewer"))

	hoverPicture := func(c *client, login string) string {
		c.htmx = true
		defer func() { c.htmx = false }()
		src, _ := c.get("/users/" + login).doc.Find(".hovercard img.avatar-picture").Attr("src")
		return src
	}
	if src := hoverPicture(bobOnB, ada.login); src != "" {
		t.Fatalf("a picture before any upload: %s", src)
	}

	if p := ada.postPicture("me.png", picture(t, 300, 200, true)); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload: %d %s", p.StatusCode, text(p, "main"))
	}
	av, err := db.Avatar(ctxT(t), ada.login)
	if err != nil {
		t.Fatalf("no avatar stored: %v", err)
	}
	// B hears of it through the hub: its pages draw the picture.
	var src string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if src = hoverPicture(bobOnB, ada.login); src != "" || time.Now().After(deadline) {
			break
		}
	}
	if want := "/users/" + ada.login + "/avatar?s=48&v=" + av.Version(); src != want {
		t.Fatalf("hover card on B: picture %q, want %q", src, want)
	}
	if large, _ := ada.get("/users/" + ada.login).doc.Find(".profile img.avatar-large").Attr("src"); !strings.Contains(large, "s=128") {
		t.Errorf("profile page: large picture %q", large)
	}

	for _, side := range []int{48, 128} {
		path := "/users/" + ada.login + "/avatar?s=" + map[int]string{48: "48", 128: "128"}[side] + "&v=" + av.Version()
		p := bobOnB.get(path)
		if p.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, p.StatusCode)
		}
		img, format, err := image.Decode(strings.NewReader(p.body))
		if err != nil || img.Bounds().Dx() != side || img.Bounds().Dy() != side {
			t.Fatalf("%d px picture: %v %s %v", side, img.Bounds(), format, err)
		}
		if format != "jpeg" || p.Header.Get("Content-Type") != "image/jpeg" {
			t.Errorf("an opaque picture is a JPEG: %s, %s", format, p.Header.Get("Content-Type"))
		}
		if cc := p.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=86400") || !strings.Contains(cc, "private") {
			t.Errorf("Cache-Control %q", cc)
		}
		etag := p.Header.Get("ETag")
		req, _ := http.NewRequest(http.MethodGet, bobOnB.base+path, nil)
		req.Header.Set("If-None-Match", etag)
		if p := bobOnB.do(req); etag == "" || p.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %q: %d", etag, p.StatusCode)
		}
	}
	if p := a.client(t).get("/users/" + ada.login + "/avatar"); p.StatusCode == http.StatusOK {
		t.Errorf("a picture served to someone not signed in")
	}
	if p := bobOnB.get("/users/" + ada.login + "/avatar?s=7"); p.StatusCode != http.StatusBadRequest {
		t.Errorf("s=7: %d", p.StatusCode)
	}
	if p := bobOnB.get("/users/" + bobOnB.login + "/avatar"); p.StatusCode != http.StatusNotFound {
		t.Errorf("no picture: %d", p.StatusCode)
	}

	// Refused: text named .png, a GIF, and a file over the limit. Nothing
	// changes.
	refused := map[string][]byte{
		"fake.png": []byte(strings.Repeat("not a picture ", 100)),
		"anim.gif": []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"),
	}
	for name, data := range refused {
		p := ada.postPicture(name, data)
		if p.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(p, "#err-picture"), "PNG, JPEG or WebP") {
			t.Errorf("%s: %d %q", name, p.StatusCode, text(p, "#err-picture"))
		}
	}
	if p := ada.postPicture("huge.png", bytes.Repeat([]byte{0x89}, 11<<20)); p.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("11 MiB: %d %s", p.StatusCode, text(p, "main"))
	}
	if now, err := db.Avatar(ctxT(t), ada.login); err != nil || now != av {
		t.Fatalf("a refused upload changed the avatar: %v %v", now, err)
	}

	// A new picture (with transparency: a PNG) replaces the old one,
	// whose files go.
	if p := ada.postPicture("new.png", picture(t, 64, 256, false)); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("second upload: %d %s", p.StatusCode, text(p, "main"))
	}
	av2, err := db.Avatar(ctxT(t), ada.login)
	if err != nil || av2 == av {
		t.Fatalf("not replaced: %v %v", av2, err)
	}
	for _, id := range []chat.ID{av.Large, av.Small} {
		if _, err := db.Attachment(ctxT(t), id); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("replaced square %v kept: %v", id, err)
		}
	}
	p := bobOnB.get("/users/" + ada.login + "/avatar?s=48")
	if img, format, err := image.Decode(strings.NewReader(p.body)); err != nil || format != "png" || img.Bounds().Dx() != 48 {
		t.Errorf("transparent picture: %s %v", format, err)
	}

	// Removed: the initials show again, on B too, and the files go.
	if p := ada.post("/profile/avatar/delete", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.StatusCode)
	}
	if _, err := db.Avatar(ctxT(t), ada.login); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("avatar after removal: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); hoverPicture(bobOnB, ada.login) != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("B still draws the removed picture")
		}
	}
	if _, err := db.Attachment(ctxT(t), av2.Small); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("removed picture's file kept: %v", err)
	}
}
