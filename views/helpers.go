package views

import (
	"context"
	"net/url"
	"strconv"
	"strings"
)

type csrfKey struct{}

// WithCSRF returns a context whose forms carry token.
func WithCSRF(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, csrfKey{}, token)
}

func csrfToken(ctx context.Context) string {
	t, _ := ctx.Value(csrfKey{}).(string)
	return t
}

// FileURL is the address of an attachment; the name is for people and
// for the browser's "save as", the id alone finds the file.
func FileURL(id, name string) string { return "/files/" + id + "/" + url.PathEscape(name) }

// HumanSize is a byte count for people: "512 B", "999.9 KiB", "25 MiB".
func HumanSize(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1024, 'f', 1, 64), ".0") + " KiB"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64), ".0") + " MiB"
}

// withNext is path carrying ?next= on to the other account page, unless
// next is the default (home).
func withNext(path, next string) string {
	if next == "" || next == "/" {
		return path
	}
	return path + "?next=" + url.QueryEscape(next)
}
