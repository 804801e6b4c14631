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

// Modules are the route modules, each a package of handlers/ given the
// parts of the server it uses and nothing else.
var Modules = []handlers.Module{accounts.Register,
	func(s *handlers.Server, r handlers.Routes) {
		search.Register(r, search.Deps{Core: s, Index: s.DB(), Rate: s.SearchRate(), Statements: s.Metrics().SearchStatements, Log: s.Log()})
	}, members.Register,
	func(s *handlers.Server, r handlers.Routes) { changes.Register(r, s, s.DB(), s.App()) }, events.Register, files.Register,
	func(s *handlers.Server, r handlers.Routes) { dms.Register(r, s, s, s.App()) },
	func(s *handlers.Server, r handlers.Routes) { mentions.Register(r, s, s.DB()) },
	func(s *handlers.Server, r handlers.Routes) { notifications.Register(r, s, s.DB()) },
	func(s *handlers.Server, r handlers.Routes) { typing.Register(r, s) },
	func(s *handlers.Server, r handlers.Routes) { presence.Register(r, s) },
	func(s *handlers.Server, r handlers.Routes) { push.Register(r, s.StaticFiles(), s, s.DB()) },
	avatars.Register,
	func(s *handlers.Server, r handlers.Routes) { admin.Register(r, s, s, s.App(), s.Config().Limits.Admin) }}

// Register installs the middleware and every route of srv on e.
func Register(e *echo.Echo, srv *handlers.Server) { srv.Register(e, Modules...) }
