package presence

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// maxAsked bounds the people one request asks about.
const maxAsked = 200

// Presence says whether a person holds a live stream on any instance
// (handlers.Server, from package live/presence).
type Presence interface {
	Online(login string) bool
}

// routes are the presence routes.
type routes struct{ people Presence }

// Register lists the presence route.
func Register(r handlers.Routes, p Presence) {
	s := routes{p}
	r.Auth.GET("/presence", s.presence)
}

// presence answers {"online": [logins]}: those of ?l= who hold a live
// connection on some instance. Any signed-in person may ask about anyone,
// as a profile is public to them.
func (s routes) presence(c echo.Context) error {
	asked := c.QueryParams()["l"]
	if len(asked) > maxAsked {
		return echo.NewHTTPError(http.StatusBadRequest, "Ask about at most 200 people at once.")
	}
	online := []string{}
	for _, l := range asked {
		if !chat.ValidName(l) {
			return echo.NewHTTPError(http.StatusBadRequest, "Each l= must be a login.")
		}
		if s.people.Online(chat.NameKey(l)) {
			online = append(online, l)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string][]string{"online": online})
}
