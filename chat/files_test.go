package chat

import "testing"

// TestSniffContentType: only bytes that open with the PDF header are a
// PDF (the one type besides images a browser opens in our origin); the
// rest is what http.DetectContentType says, and never a PDF.
func TestSniffContentType(t *testing.T) {
	for _, tc := range []struct {
		name, first, want string
	}{
		{"PDF", "%PDF-1.7\n%âãÏÓ\n1 0 obj", PDFType},
		{"PDF header alone", "%PDF-", PDFType},
		{"after a space", " %PDF-1.4", "text/plain; charset=utf-8"},
		{"after a byte order mark", "\xef\xbb\xbf%PDF-1.4", "text/plain; charset=utf-8"},
		{"lower case", "%pdf-1.4", "text/plain; charset=utf-8"},
		{"without the dash", "%PDF1.4", "text/plain; charset=utf-8"},
		{"HTML that mentions it", "<html><script>alert(1)</script>%PDF-1.4", "text/html; charset=utf-8"},
		{"PNG", "\x89PNG\r\n\x1a\n", "image/png"},
		{"empty", "", "text/plain; charset=utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SniffContentType([]byte(tc.first)); got != tc.want {
				t.Errorf("SniffContentType(%q) = %q, want %q", tc.first, got, tc.want)
			}
			if a := (Attachment{ContentType: SniffContentType([]byte(tc.first))}); a.PDF() != (tc.want == PDFType) || a.Ref().PDF() != a.PDF() {
				t.Errorf("PDF() = %v, Ref().PDF() = %v", a.PDF(), a.Ref().PDF())
			}
		})
	}
}
