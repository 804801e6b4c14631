package browser

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// tempFile writes n random bytes to a file named name and returns its path.
func tempFile(t *testing.T, name string, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// downloadSize fetches a link of the page from the page (with its cookies)
// and returns how many bytes came, or -status for an error.
func (p *tab) downloadSize(sel string) int {
	p.t.Helper()
	eval[bool](p, fmt.Sprintf(`(() => { window.__size = 0;
		fetch(document.querySelector(%s).href).then(r => r.ok ? r.arrayBuffer().then(b => window.__size = b.byteLength) : (window.__size = -r.status));
		return true; })()`, js(sel)))
	p.waitJS("the download of "+sel, `window.__size !== 0`)
	return eval[int](p, `window.__size`)
}

// TestFileUploads: a file picked in the composer goes up with a progress
// bar and shows in the room with its name, size and link, and the link
// downloads it; a pasted image, once sent, shows a sized preview; several
// files are several messages.
func TestFileUploads(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("files")
	a := b.newTab("ada")
	a.signUp(ada)
	a.createRoom(room, "Files")
	a.waitStream()

	// Watch the progress bar: each value it shows, and whether it showed.
	eval[bool](a, `(() => { window.__progress = []; const bar = document.getElementById("upload-progress");
		new MutationObserver(() => { if (!bar.parentNode.hidden) window.__progress.push(Number(bar.value)); })
			.observe(bar, {attributes: true});
		return true; })()`)
	const size = 6 << 20
	path := tempFile(t, "big.bin", size)
	a.run("pick a file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}))
	a.typeInto("#content", "here it is")
	a.click("#composer button[type=submit]")
	a.waitJSFor(2*waitTimeout, "the file's message", `document.querySelector("#messages li.message .attachment-name")`)
	if got := a.text("#messages li.message:last-child .attachment-name"); got != "big.bin" {
		t.Errorf("attachment name %q", got)
	}
	if got := a.text("#messages li.message:last-child .attachment-size"); got != "6 MiB" {
		t.Errorf("attachment size %q", got)
	}
	if got := a.text("#messages li.message:last-child .text"); got != "here it is" {
		t.Errorf("text with the file %q", got)
	}
	progress := eval[[]float64](a, `window.__progress`)
	if len(progress) == 0 || progress[len(progress)-1] < 100 {
		t.Errorf("progress bar values %v, want some, ending at 100", progress)
	}
	a.waitJS("the progress bar to hide", `document.getElementById("upload-status").hidden`)
	if got := a.downloadSize("#messages li.message:last-child .attachment-name"); got != size {
		t.Errorf("downloaded %d bytes, want %d", got, size)
	}
	if n := a.count("#messages .attachment"); n != 1 {
		t.Errorf("%d attachments shown, want 1 (the stream's copy is dropped)", n)
	}

	// Paste a 600×400 screenshot into the text box.
	eval[bool](a, `(() => { const c = document.createElement("canvas"); c.width = 600; c.height = 400;
		const g = c.getContext("2d"); g.fillStyle = "#3a7"; g.fillRect(0, 0, 600, 400);
		const bin = atob(c.toDataURL("image/png").split(",")[1]);
		const bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
		const dt = new DataTransfer(); dt.items.add(new File([bytes], "shot.png", {type: "image/png"}));
		document.getElementById("content").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}));
		return true; })()`)
	a.waitJS("the pasted image staged", `document.querySelectorAll("#staged-files .staged-file").length === 1`)
	a.click("#composer button[type=submit]")
	a.waitJS("the pasted image's preview", `(() => { const i = document.querySelector("#messages .attachment-preview img");
		return i && i.complete && i.naturalWidth > 0; })()`)
	img := `document.querySelector("#messages .attachment-preview img")`
	if w, h := eval[string](a, img+`.getAttribute("width")`), eval[string](a, img+`.getAttribute("height")`); w != "480" || h != "320" {
		t.Errorf("preview is %s×%s, want 480×320", w, h)
	}
	if got := eval[string](a, img+`.getAttribute("loading")`); got != "lazy" {
		t.Errorf("preview loading=%q", got)
	}
	if got := eval[int](a, img+`.naturalWidth`); got != 480 {
		t.Errorf("preview file is %d wide", got)
	}
	if got := a.downloadSize("#messages .attachment-preview"); got <= 0 {
		t.Errorf("the full image: %d", got)
	}

	// Two files at once: two messages.
	before := a.count("#messages .attachment")
	p1, p2 := tempFile(t, "one.txt", 10), tempFile(t, "two.txt", 20)
	a.run("pick two files", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{p1, p2}))
	a.click("#composer button[type=submit]")
	a.waitJS("two more file messages", fmt.Sprintf(`document.querySelectorAll("#messages .attachment").length === %d`, before+2))
	a.screenshot("files")
}

// TestFileUploadWithoutJavaScript: the plain form posts a file with no
// text (303, then the room shows it).
func TestFileUploadWithoutJavaScript(t *testing.T) {
	b := begin(t)
	ada := newPerson("Ada", "Lovelace")
	room := unique("plainfiles")
	a := b.newTab("ada", withoutJS)
	a.signUp(ada)
	a.createRoom(room, "Files without scripts")
	path := tempFile(t, "plain.bin", 1_500_000)
	a.run("pick a file", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}))
	a.click("#composer button[type=submit]")
	a.waitJS("the file's message", atPath("/rooms/"+room)+` && document.querySelector("#messages .attachment-name")`)
	if got := a.text("#messages .attachment-name"); got != "plain.bin" {
		t.Errorf("attachment name %q", got)
	}
	if got := a.text("#messages .attachment-size"); got != "1.4 MiB" {
		t.Errorf("attachment size %q", got)
	}
}
