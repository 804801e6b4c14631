// This file owns stored files as the application sees them: an
// attachment with what is known of it, and a person's picture.

package chat

import (
	"bytes"
	"net/http"
)

// Attachment is a stored file and what is known of it.
type Attachment struct {
	// ID is a timeuuid; the time is when the upload started.
	ID ID
	// Conversation is the id of the room or DM it was posted in.
	Conversation string
	Uploader     UserRef
	// Name is the cleaned file name the uploader gave.
	Name string
	Size int64
	// ContentType is sniffed from the first bytes (SniffContentType),
	// never the uploader's claim.
	ContentType string
	SHA256      []byte
	ChunkSize   int
	Chunks      int
	Status      string
	// Width and Height are a raster image's size in pixels, read from its
	// header; 0 for anything else.
	Width, Height int
	// PreviewID names the image's preview (itself when it is small
	// enough); zero when there is none.
	PreviewID                   ID
	PreviewWidth, PreviewHeight int
}

// Inline reports whether the file may be shown by a browser in our
// origin as an image: a raster image whose header was read. A PDF opens
// in the browser's viewer (PDF); everything else (HTML, SVG, text) is
// only ever downloaded.
func (a Attachment) Inline() bool { return RasterImage(a.ContentType) && a.Width > 0 }

// PDF reports whether the file is a PDF, which the browser opens in its
// own viewer rather than downloads: only bytes that open with the PDF
// header get the type (SniffContentType).
func (a Attachment) PDF() bool { return a.ContentType == PDFType }

// PDFType is a PDF's content type.
const PDFType = "application/pdf"

// pdfHeader opens every PDF file (ISO 32000-1, 7.5.2: "%PDF-1.7").
var pdfHeader = []byte("%PDF-")

// SniffContentType is a file's content type from its first bytes (up to
// 512 are looked at), never from its name or what the uploader says it
// is: http.DetectContentType's answer, with PDFType decided here rather
// than trusted to it, as PDFType is what opens a file in the browser's
// viewer in our origin. A file whose bytes do not open with "%PDF-" is
// never a PDF, whatever it is called.
func SniffContentType(first []byte) string {
	if bytes.HasPrefix(first, pdfHeader) {
		return PDFType
	}
	if t := http.DetectContentType(first); t != PDFType {
		return t
	}
	return "application/octet-stream"
}

// Ref is what a message keeps of the attachment.
func (a Attachment) Ref() AttachmentRef {
	return AttachmentRef{ID: a.ID, Name: a.Name, Size: a.Size, ContentType: a.ContentType,
		PreviewID: a.PreviewID, PreviewWidth: a.PreviewWidth, PreviewHeight: a.PreviewHeight}
}

// AvatarLarge and AvatarSmall are the sides of the two squares a picture
// is kept as, in pixels.
const AvatarLarge, AvatarSmall = 128, 48

// Avatar is a person's picture: its two squares' attachments. Small's id
// is the picture's version (a new upload gets new ids).
type Avatar struct {
	Large, Small ID
}

// Version names this picture in URLs and ETags.
func (a Avatar) Version() string { return a.Small.String() }
