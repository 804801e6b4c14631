package browser

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAvatarPictures (issue 19, item 6): Ada picks a picture on her
// profile page; it shows there at 128 px, and at 48 px beside her
// messages on Bob's page of the room, where the initials were; both pages
// pass the accessibility check.
func TestAvatarPictures(t *testing.T) {
	b := begin(t)
	a, o, room := pair(t, b, desktop, "Pictures")
	a.post("before the picture " + unique("#"))
	o.waitJS("ada's initials on bob's page", `document.querySelector("#messages li.message span.avatar")`)

	img := image.NewNRGBA(image.Rect(0, 0, 400, 300))
	for y := range 300 {
		for x := range 400 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x / 2), uint8(y), 160, 255})
		}
	}
	path := filepath.Join(t.TempDir(), "ada.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	a.open("/profile")
	a.waitJS("the picture form", `document.getElementById("picture")`)
	a.run("pick a picture", chromedp.SetUploadFiles(chromedp.CSS("#picture"), []string{path}))
	a.click(`form[action="/profile/avatar"] button[type=submit]`)
	a.waitJS("the profile saved", `location.search.includes("saved=1") && document.readyState === "complete"`)
	a.waitJS("the 128 px picture loaded", `(() => { const i = document.querySelector(".avatar-edit img.avatar-large");
		return i && i.complete && i.naturalWidth === 128; })()`)
	a.checkAccessibility("the profile page with a picture")

	o.open("/rooms/" + room)
	o.waitRoomPage(room)
	o.waitJS("ada's 48 px picture on bob's page", `[...document.querySelectorAll("#messages li.message img.avatar-picture")]
		.some(i => i.complete && i.naturalWidth === 48)`)
	o.checkAccessibility("the room page with a picture")
}
