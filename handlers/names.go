// This file owns canonical URLs for names: logins and room names are
// case-insensitive, and every page of a room or user has one address, the
// one with the lower-case name (store.NameKey), which is also the key.

package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
)

// nameParams are the route parameters that hold a login or room name.
var nameParams = []string{"room", "login"}

// canonicalNames sends a GET or HEAD for a name in another case
// (/rooms/LOBBY, /users/Alice) to its canonical address with a 301, query
// kept, so bookmarks and links end on one URL. Other methods are not
// redirected (a browser would drop or re-send the form): they go on with
// the lower-case name in place, and their own redirect lands on the
// canonical page.
func canonicalNames(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		names, values := c.ParamNames(), c.ParamValues()
		changed := false
		canon := make([]string, len(values))
		for i, name := range names {
			canon[i] = values[i]
			if slices.Contains(nameParams, name) {
				if key := chat.NameKey(values[i]); key != values[i] {
					canon[i], changed = key, true
				}
			}
		}
		if !changed {
			return next(c)
		}
		if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
			return c.Redirect(http.StatusMovedPermanently, canonicalPath(c.Path(), names, canon)+query(c))
		}
		c.SetParamValues(canon...)
		return next(c)
	}
}

// canonicalPath fills the route pattern (such as /rooms/:room/events) with
// values. Only valid names are changed, and they are plain ASCII letters,
// digits, '_', '.' and '-', so none needs escaping.
func canonicalPath(pattern string, names, values []string) string {
	segments := strings.Split(pattern, "/")
	for i, seg := range segments {
		if !strings.HasPrefix(seg, ":") {
			continue
		}
		for j, name := range names {
			if name == seg[1:] {
				segments[i] = values[j]
			}
		}
	}
	return strings.Join(segments, "/")
}

func query(c echo.Context) string {
	if q := c.Request().URL.RawQuery; q != "" {
		return "?" + q
	}
	return ""
}
