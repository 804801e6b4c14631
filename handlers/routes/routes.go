package routes

import (
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/accounts"
	"github.com/killrchat/killrchat/handlers/admin"
	"github.com/killrchat/killrchat/handlers/avatars"
	"github.com/killrchat/killrchat/handlers/changes"
	"github.com/killrchat/killrchat/handlers/dms"
	"github.com/killrchat/killrchat/handlers/events"
	"github.com/killrchat/killrchat/handlers/files"
	"github.com/killrchat/killrchat/handlers/members"
	"github.com/killrchat/killrchat/handlers/mentions"
	"github.com/killrchat/killrchat/handlers/notifications"
	"github.com/killrchat/killrchat/handlers/presence"
	"github.com/killrchat/killrchat/handlers/push"
	"github.com/killrchat/killrchat/handlers/search"
	"github.com/killrchat/killrchat/handlers/typing"
)

// Modules are the route modules, each a package of handlers/.
var Modules = []handlers.Module{accounts.Register, search.Register, members.Register, changes.Register, events.Register, dms.Register, files.Register, mentions.Register, notifications.Register, typing.Register, presence.Register, push.Register, avatars.Register, admin.Register}

// Register installs the middleware and every route of srv on e.
func Register(e *echo.Echo, srv *handlers.Server) { srv.Register(e, Modules...) }
