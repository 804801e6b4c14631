package presence

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
)

// maxAsked bounds the people one request asks about.
const maxAsked = 200

// routes are the presence routes, on the core's server.
type routes struct{ *handlers.Server }

// Register lists the presence route.
func Register(srv *handlers.Server, r handlers.Routes) {
	s := routes{srv}
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
		if s.Online(chat.NameKey(l)) {
			online = append(online, l)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string][]string{"online": online})
}
