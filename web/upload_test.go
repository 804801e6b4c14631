package web_test

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/web"
)

func TestIsMultipart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		contentType string
		want        bool
	}{
		{"multipart/form-data; boundary=x", true},
		{"Multipart/Form-Data; boundary=x", true},
		{"multipart/mixed; boundary=x", false},
		{"application/x-www-form-urlencoded", false},
		{"", false},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.Header.Set("Content-Type", tc.contentType)
		if got := web.IsMultipart(req); got != tc.want {
			t.Errorf("IsMultipart(%q) = %v, want %v", tc.contentType, got, tc.want)
		}
	}
}

func TestReadField(t *testing.T) {
	t.Parallel()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("short", "hello")
	_ = w.WriteField("long", strings.Repeat("x", 11))
	_ = w.Close()
	mr := multipart.NewReader(&body, w.Boundary())
	part, _ := mr.NextPart()
	if v, err := web.ReadField(part, 5); v != "hello" || err != nil {
		t.Fatalf("a field of its max: %q %v", v, err)
	}
	part, _ = mr.NextPart()
	_, err := web.ReadField(part, 10)
	var he *echo.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a field over its max: %v, want a 413", err)
	}
}

func TestBudgetReader(t *testing.T) {
	t.Parallel()
	left := 10
	r := &web.BudgetReader{R: strings.NewReader(strings.Repeat("x", 25)), Take: func(n int) bool {
		if n > left {
			return false
		}
		left -= n
		return true
	}}
	buf := make([]byte, 4)
	read := 0
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		read += n
	}
	if !errors.Is(err, web.ErrOverBudget) || read != 8 {
		t.Fatalf("read %d then %v; want 8 bytes then ErrOverBudget", read, err)
	}
}

func TestRecordingBody(t *testing.T) {
	t.Parallel()
	whole := &web.RecordingBody{ReadCloser: io.NopCloser(strings.NewReader("abc"))}
	if _, err := io.ReadAll(whole); err != nil || whole.Err != nil {
		t.Fatalf("a whole body: %v, recorded %v", err, whole.Err)
	}
	broken := errors.New("client went away")
	cut := &web.RecordingBody{ReadCloser: io.NopCloser(io.MultiReader(strings.NewReader("ab"), errReader{broken}))}
	if _, err := io.ReadAll(cut); !errors.Is(err, broken) || !errors.Is(cut.Err, broken) {
		t.Fatalf("a cut body: %v, recorded %v", err, cut.Err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestRandomToken(t *testing.T) {
	t.Parallel()
	a, err := web.RandomToken(32)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := web.RandomToken(32)
	if len(a) != 43 || a == b || strings.ContainsAny(a, "+/=") {
		t.Fatalf("tokens %q and %q: want 43 url-safe characters, different", a, b)
	}
}
