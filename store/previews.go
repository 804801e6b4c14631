// This file owns image previews: made once, at upload, by decoding the
// stored image (the standard library's PNG, JPEG and GIF decoders and
// golang.org/x/image's WebP one), scaling it to fit 480×360 with
// golang.org/x/image/draw, and storing the result as an attachment of its
// own. A decoded image takes its pixels times the bytes a pixel of its
// decoded model holds (8 for 16-bit RGBA), whatever its file size: decodes
// run at most two at a time, and all of them together within the
// process's decode budget (Config.DecodeBudget), each charged twice its
// decoded bytes (the collector's headroom). An image whose decode alone
// would not fit is kept without a preview.

package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registers the GIF decoder for image.Decode
	"image/jpeg"
	"image/png"
	"runtime"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // registers the WebP decoder
)

const (
	// PreviewWidth and PreviewHeight bound a preview.
	PreviewWidth, PreviewHeight = 480, 360
	// MaxImagePixels is the largest image accepted: its header is read
	// before anything is decoded, so a small file that claims 50,000×50,000
	// pixels (a decompression bomb) is refused without decoding it.
	MaxImagePixels = 40_000_000
	// previewDecodes bounds the decodes running at once in this process.
	previewDecodes = 2
	// bigDecode is the size of a decode after which the garbage is
	// collected at once.
	bigDecode = 16 << 20
	// DefaultDecodeBudget is the default of Config.DecodeBudget.
	DefaultDecodeBudget = 256 << 20
)

// errNoPreview is why an image gets no preview: decoding it would take
// more than the whole decode budget.
var errNoPreview = errors.New("decoding it would take more memory than the decode budget")

// decodedBytes is the memory that decoding an image of cfg takes: its
// pixels times the bytes a pixel of the decoder's model holds.
func decodedBytes(cfg image.Config) int64 {
	return int64(cfg.Width) * int64(cfg.Height) * bytesPerPixel(cfg.ColorModel)
}

func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3 // 4:4:4 at most; subsampled JPEGs take less
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8 // a model we do not know: the widest
}

var decodeSlots = make(chan struct{}, previewDecodes)

// addPreview gives a raster image its preview. An image that already fits
// is its own preview; a larger one is decoded from its chunks, scaled down
// and stored as a small attachment of the same conversation (so deleting
// the room deletes it too).
func (s *Store) addPreview(ctx context.Context, a *upload) error {
	w, h := fit(a.Width, a.Height, PreviewWidth, PreviewHeight)
	if w == a.Width && h == a.Height {
		a.PreviewID, a.PreviewWidth, a.PreviewHeight = a.ID, w, h
		return nil
	}
	var small []byte
	err := s.decodeImage(ctx, *a, func(src image.Image) (err error) {
		small, err = scaleEncode(src, src.Bounds(), w, h, draw.BiLinear)
		return err
	})
	if err != nil {
		return err
	}
	p, err := s.storeChunks(ctx, a.Conversation, a.Uploader, "preview-"+a.Name, bytes.NewReader(small), int64(len(small)))
	if err != nil {
		return err
	}
	if err := s.finishAttachment(ctx, p.Attachment); err != nil {
		return err
	}
	a.PreviewID, a.PreviewWidth, a.PreviewHeight = p.ID, w, h
	return nil
}

// decodeImage decodes the stored image a, within the process's decode
// budget and slots, and hands it to use (which must not keep it).
func (s *Store) decodeImage(ctx context.Context, a upload, use func(image.Image) error) error {
	decoded := a.decodeBytes
	if decoded <= 0 {
		decoded = int64(a.Width) * int64(a.Height) * bytesPerPixel(nil)
	}
	// Twice the decoded bytes: the collector lets the heap grow to about
	// twice what is live, and scaling an image of a model draw has no
	// fast path for (16-bit) makes garbage by the pixel.
	need := 2 * decoded
	if need > s.decodeBudgetSize {
		return fmt.Errorf("store: decode of %s (%d×%d, %d MiB decoded): %w", a.ID, a.Width, a.Height, decoded>>20, errNoPreview)
	}
	if err := s.decodeBudget.Acquire(ctx, need); err != nil {
		return err
	}
	defer s.decodeBudget.Release(need)
	select {
	case decodeSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := func() error {
		defer func() { <-decodeSlots }()
		r := s.OpenAttachment(ctx, a.Attachment)
		defer r.Close()
		src, _, err := image.Decode(bufio.NewReaderSize(r, 64<<10))
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if src.Bounds().Dx() != a.Width || src.Bounds().Dy() != a.Height {
			return fmt.Errorf("decoded %v, header said %dx%d", src.Bounds(), a.Width, a.Height)
		}
		return use(src)
	}()
	if need >= bigDecode {
		// The decoded image is garbage now, but the collector would let
		// the heap grow to twice what is live before freeing it: the
		// next decode reuses its memory instead, so the process holds
		// about the budget, not twice it.
		runtime.GC()
	}
	if err != nil {
		return fmt.Errorf("store: image %s: %w", a.ID, err)
	}
	return nil
}

// scaleEncode scales the part r of src to w×h with scaler: a JPEG when
// it is opaque, else a PNG.
func scaleEncode(src image.Image, r image.Rectangle, w, h int, scaler draw.Scaler) ([]byte, error) {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	scaler.Scale(dst, dst.Bounds(), src, r, draw.Src, nil)
	var out bytes.Buffer
	var err error
	if opaque(dst) {
		err = jpeg.Encode(&out, dst, &jpeg.Options{Quality: 85})
	} else {
		err = png.Encode(&out, dst)
	}
	return out.Bytes(), err
}

// fit scales w×h down, keeping its proportions, to fit maxW×maxH; it
// never scales up, and never below one pixel.
func fit(w, h, maxW, maxH int) (int, int) {
	if w <= maxW && h <= maxH {
		return w, h
	}
	if w*maxH > h*maxW { // wider than the box
		return maxW, max(h*maxW/w, 1)
	}
	return max(w*maxH/h, 1), maxH
}

func opaque(img *image.NRGBA) bool {
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] != 0xff {
			return false
		}
	}
	return true
}
