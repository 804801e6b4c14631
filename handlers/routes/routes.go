package routes

import (
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/handlers/accounts"
	"github.com/killrchat/killrchat/handlers/admin"
	"github.com/killrchat/killrchat/handlers/avatars"
	"github.com/killrchat/killrchat/handlers/botapi"
	"github.com/killrchat/killrchat/handlers/catchup"
	"github.com/killrchat/killrchat/handlers/changes"
	"github.com/killrchat/killrchat/handlers/directory"
	"github.com/killrchat/killrchat/handlers/dms"
	"github.com/killrchat/killrchat/handlers/emails"
	"github.com/killrchat/killrchat/handlers/events"
	"github.com/killrchat/killrchat/handlers/files"
	"github.com/killrchat/killrchat/handlers/hooks"
	"github.com/killrchat/killrchat/handlers/members"
	"github.com/killrchat/killrchat/handlers/mentions"
	"github.com/killrchat/killrchat/handlers/notifications"
	"github.com/killrchat/killrchat/handlers/presence"
	"github.com/killrchat/killrchat/handlers/push"
	"github.com/killrchat/killrchat/handlers/search"
	"github.com/killrchat/killrchat/handlers/switcher"
	"github.com/killrchat/killrchat/handlers/typing"
	"github.com/killrchat/killrchat/store"
)

// Modules are the route modules, each a package of handlers/ given the
// parts of the server and of the store db it uses and nothing else.
func Modules(db *store.Store) []handlers.Module {
	return []handlers.Module{
		func(s *handlers.Server, r handlers.Routes) { accounts.Register(r, s, db, s.App()) },
		func(s *handlers.Server, r handlers.Routes) {
			search.Register(r, search.Deps{Core: s, App: s.App(), Rate: s.SearchRate()})
		},
		func(s *handlers.Server, r handlers.Routes) { members.Register(r, s, db, s.App()) },
		func(s *handlers.Server, r handlers.Routes) { changes.Register(r, s, db, s.App()) },
		func(s *handlers.Server, r handlers.Routes) {
			events.Register(r, events.Deps{Core: s, Streams: s.Live(), Sessions: db, Members: db, Ender: s.App(), Log: s.Log()})
		},
		func(s *handlers.Server, r handlers.Routes) {
			files.Register(r, files.Deps{Core: s, Files: db, App: s.App(), Config: s.Config(),
				CSRF: s.CSRF(), Messages: s.MessageRate(), Metrics: s.Metrics(), Log: s.Log(), Closing: s.Closing()})
		},
		func(s *handlers.Server, r handlers.Routes) { dms.Register(r, s, s, s.App()) },
		func(s *handlers.Server, r handlers.Routes) { mentions.Register(r, s, db) },
		func(s *handlers.Server, r handlers.Routes) { notifications.Register(r, s, s.App()) },
		func(s *handlers.Server, r handlers.Routes) { typing.Register(r, s) },
		func(s *handlers.Server, r handlers.Routes) { presence.Register(r, s) },
		func(s *handlers.Server, r handlers.Routes) { push.Register(r, s.StaticFiles(), s, db) },
		func(s *handlers.Server, r handlers.Routes) {
			avatars.Register(r, avatars.Deps{Core: s, DB: db, App: s.App(), CSRF: s.CSRF(), MaxUpload: s.Config().MaxUpload, Bytes: s.UploadBytes(), Uploads: s.Uploads()})
		},
		func(s *handlers.Server, r handlers.Routes) { catchup.Register(r, s, s.App()) },
		func(s *handlers.Server, r handlers.Routes) { directory.Register(r, s, s.App()) },
		func(s *handlers.Server, r handlers.Routes) {
			admin.Register(r, s, s, s.App(), s.Config().Limits.Admin, s.CheckBotEndpoint)
		},
		func(s *handlers.Server, r handlers.Routes) {
			botapi.Register(r, botapi.Deps{App: s.App(), Core: s, MaxUpload: s.Config().MaxUpload, Store: db, Watcher: s, Rate: s.Config().Limits.API, Log: s.Log()})
		},
		func(s *handlers.Server, r handlers.Routes) { hooks.Register(r, s, s.App(), s.Config().Limits.Hooks) },
		func(s *handlers.Server, r handlers.Routes) { switcher.Register(r, s, db, s.App()) },
		func(s *handlers.Server, r handlers.Routes) {
			emails.Register(r, emails.Deps{Core: s, App: s.App(), UnsubscribeKey: s.UnsubscribeKey()})
		}}
}

// Register installs the middleware and every route of srv on e, the
// modules given db, the store srv was made with.
func Register(e *echo.Echo, srv *handlers.Server, db *store.Store) { srv.Register(e, Modules(db)...) }
