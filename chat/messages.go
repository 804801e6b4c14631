// This file owns messages: their fields, what a message may say, and the
// reference to the file it carries.

package chat

import (
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Message is one chat message. Its id is a timeuuid made by the server,
// which also gives its time and its day bucket.
type Message struct {
	ID ID
	// Room is the id of the conversation: a room's name, or a DM's id.
	Room    string
	Author  UserRef
	Content string
	// System marks messages the server writes, such as "X joins the room".
	System bool
	// Attachment is the file the message carries, if any.
	Attachment *AttachmentRef
	// Edited is the id of the message's last edit (zero if never edited):
	// when it was edited, too.
	Edited ID
	// Reactions are people's reactions, on pages (see MessagesBefore).
	Reactions []Reaction
}

// Time is when the message was posted.
func (m Message) Time() time.Time { return m.ID.Time() }

// CheckContent cleans a message (line ends made "\n", edges trimmed, see
// cleanText) and returns it, or a ValidationError if it is not valid
// UTF-8, holds a control character other than "\n" and "\t", shows
// nothing (only spaces or invisible characters), or is longer than
// MaxContent characters.
func CheckContent(content string) (string, error) {
	content, problem := cleanText(content, contentRule)
	if problem != "" {
		return "", ValidationError{"content": problem}
	}
	return content, nil
}

// CheckCaption is CheckContent for the text that goes with a file, which
// may be blank: a blank one is "".
func CheckCaption(content string) (string, error) {
	if strings.TrimSpace(content) == "" {
		return "", nil
	}
	return CheckContent(content)
}

// AttachmentRef is the attachment of a message, denormalised into it (the
// user-defined type attachment_ref) so a page of messages is one query.
type AttachmentRef struct {
	ID            ID
	Name          string
	Size          int64
	ContentType   string
	PreviewID     ID
	PreviewWidth  int
	PreviewHeight int
}

// HasPreview reports whether the message shows the file as an image.
func (r AttachmentRef) HasPreview() bool { return r.PreviewID != (ID{}) }

// PDF reports whether the message's file is a PDF, which its link opens
// in the browser's viewer (Attachment.PDF) rather than downloads.
func (r AttachmentRef) PDF() bool { return r.ContentType == PDFType }

// RasterImage reports whether a sniffed content type is one of the raster
// images served inline: PNG, JPEG, GIF or WebP.
func RasterImage(contentType string) bool {
	switch contentType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// CleanFileName makes an uploader's file name safe to store and show: the
// last path element only, valid UTF-8, no control or format characters,
// trimmed, at most 200 characters; "file" if nothing is left.
func CleanFileName(name string) string {
	name = strings.ToValidUTF8(name, "")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxFileName {
		ext := path.Ext(name)
		if utf8.RuneCountInString(ext) > 20 {
			ext = ""
		}
		name = string([]rune(name)[:maxFileName-utf8.RuneCountInString(ext)]) + ext
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// MaxContent is the longest message, in characters, after trimming.
const MaxContent = 4000

// maxFileName is the longest stored file name, in characters.
const maxFileName = 200

// StoredFile is a file as an export carries it: what the store keeps
// of it besides its bytes.
type StoredFile struct {
	ID            ID      `json:"id"`
	Conversation  string  `json:"conversation"`
	Uploader      UserRef `json:"uploader"`
	Name          string  `json:"name"`
	Size          int64   `json:"size"`
	ContentType   string  `json:"content_type"`
	SHA256        []byte  `json:"sha256"`
	Width         int     `json:"width,omitempty"`
	Height        int     `json:"height,omitempty"`
	PreviewID     ID      `json:"preview_id,omitzero"`
	PreviewWidth  int     `json:"preview_width,omitempty"`
	PreviewHeight int     `json:"preview_height,omitempty"`
}
