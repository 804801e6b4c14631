package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/limit"
)

// UseCases are the administrative use cases (service.Service).
type UseCases interface {
	RequireAdmin(ctx context.Context, login string) error
	Site(ctx context.Context) (chat.Site, error)
	FindPeople(ctx context.Context, prefix string, after chat.AdminCursor, n int) ([]chat.Person, chat.AdminCursor, error)
	SetAdmin(ctx context.Context, actor, who string, admin bool) error
	Deactivate(ctx context.Context, actor, who string) error
	Reactivate(ctx context.Context, actor, who string) error
	EndSessions(ctx context.Context, actor, who string) error
	CreateResetLink(ctx context.Context, actor, who string) (string, error)
	SaveSettings(ctx context.Context, actor string, f chat.Settings) error
	ChooseDefaultRooms(ctx context.Context, actor string, rooms []string) error
	CreateSiteInvite(ctx context.Context, actor string, f chat.NewInvite) (string, chat.SiteInvite, error)
	SiteInvites(ctx context.Context) ([]chat.SiteInvite, error)
	AuditLog(ctx context.Context, before chat.ID, n int) ([]chat.AuditEntry, error)

	CreateBot(ctx context.Context, actor string, f chat.NewBot) (chat.Bot, string, error)
	SiteBots(ctx context.Context) ([]chat.Bot, error)
	RotateBotToken(ctx context.Context, actor, who string) (string, error)
	RevokeBotToken(ctx context.Context, actor, who string) error
	SetBotEndpoint(ctx context.Context, actor, who, endpoint string, check func(string) error) (string, error)
}

// Pages render a page in the layout, or its fragment for htmx
// (handlers.Server).
type Pages interface {
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// Signer makes and reads the signed cursors of the next page
// (handlers.Server).
type Signer interface {
	Sign(name string, value any) (string, error)
	Unsign(name, token string, dst any) error
}

const (
	// PeoplePerPage and AuditPerPage are the pages' sizes.
	PeoplePerPage = 25
	AuditPerPage  = 50
	peopleCursor  = "admin-people"
)

type module struct {
	app   UseCases
	pages Pages
	sign  Signer
	// checkEndpoint says why a bot's outgoing webhook address is
	// refused (handlers.Server.CheckBotEndpoint).
	checkEndpoint func(string) error
}

// Register lists the administration's routes, over the use cases app;
// rate bounds each administrator's actions.
func Register(r handlers.Routes, pages Pages, sign Signer, app UseCases, rate limit.Rate, checkEndpoint func(string) error) {
	m := module{app: app, pages: pages, sign: sign, checkEndpoint: checkEndpoint}
	g := r.Public.Group("/admin", m.requireAdmin)
	actions := limit.By(limit.NewKeyed(rate), "taking administrative actions",
		func(c echo.Context) string { return handlers.MustUser(c).Login })
	g.GET("", m.showAdmin)
	g.GET("/audit", m.showAudit)
	g.POST("/people/:login/:action", m.personAction, actions)
	g.POST("/settings", m.saveSettings, actions)
	g.POST("/default-rooms", m.saveDefaultRooms, actions)
	g.POST("/invites", m.createInvite, actions)
	g.POST("/bots", m.createBot, actions)
	g.POST("/bots/:login/:action", m.botAction, actions)
}

// requireAdmin answers 404, as for a page that does not exist, to
// everyone who is not an administrator, signed in or not.
func (m module) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, ok := handlers.CurrentUser(c)
		if !ok {
			return echo.ErrNotFound
		}
		if err := m.app.RequireAdmin(c.Request().Context(), u.Login); err != nil {
			return err
		}
		return next(c)
	}
}

// adminPage is the page with its settings form filled from the site.
func (m module) adminPage(c echo.Context) (views.Admin, error) {
	ctx := c.Request().Context()
	v := views.Admin{Me: handlers.MustUser(c).Login, Query: strings.TrimSpace(c.QueryParam("q"))}
	var after chat.AdminCursor
	if tok := c.QueryParam("after"); tok != "" {
		if err := m.sign.Unsign(peopleCursor, tok, &after); err != nil {
			return v, echo.NewHTTPError(http.StatusBadRequest, "This page link is broken or too old. Start from the first page.")
		}
	}
	var (
		people []chat.Person
		next   chat.AdminCursor
		err    error
	)
	if len(v.Query) > 100 {
		// Said beside the search field; the rest of the page as usual.
		v.QueryError = "Search with at most 100 characters."
	} else if people, next, err = m.app.FindPeople(ctx, v.Query, after, PeoplePerPage); err != nil {
		return v, err
	}
	v.People = people
	if next != (chat.AdminCursor{}) {
		tok, err := m.sign.Sign(peopleCursor, next)
		if err != nil {
			return v, err
		}
		v.Next = "/admin?q=" + urlQuery(v.Query) + "&after=" + tok
	}
	if v.Site, err = m.app.Site(ctx); err != nil {
		return v, err
	}
	v.Settings = views.Form{Values: map[string]string{
		"signup_policy": v.Site.Policy(), "domains": strings.Join(v.Site.SignupDomains, ", "), "room_creation": v.Site.Rooms(),
	}, Errors: map[string]string{}}
	rooms := v.Site.DefaultRooms
	if !v.Site.DefaultRoomsSet {
		rooms = []string{service.GeneralRoom}
	}
	v.DefaultRooms = views.Form{Values: map[string]string{"rooms": strings.Join(rooms, ", ")}, Errors: map[string]string{}}
	v.Invite = views.Form{Values: map[string]string{"expires_hours": "168"}, Errors: map[string]string{}}
	if v.Invites, err = m.app.SiteInvites(ctx); err != nil {
		return v, err
	}
	if v.Audit, err = m.app.AuditLog(ctx, chat.ID{}, AuditPerPage); err != nil {
		return v, err
	}
	v.AuditNext = auditNext(v.Audit)
	if v.Bots, err = m.app.SiteBots(ctx); err != nil {
		return v, err
	}
	v.BotForm = views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	v.Notice = notices[c.QueryParam("done")]
	return v, nil
}

func urlQuery(s string) string { return url.QueryEscape(s) }

// auditNext is the link to the entries older than a full page's.
func auditNext(entries []chat.AuditEntry) string {
	if len(entries) < AuditPerPage {
		return ""
	}
	return "/admin/audit?before=" + entries[len(entries)-1].ID.String()
}

// notices are what an action's redirect says it did.
var notices = map[string]string{
	"deactivate":    "The account is deactivated: its sessions ended on every instance.",
	"reactivate":    "The account is active again. The rooms it left stay left.",
	"promote":       "They are an administrator now.",
	"demote":        "They are no longer an administrator.",
	"end-sessions":  "Their sessions have ended.",
	"settings":      "The settings are saved.",
	"default-rooms": "The rooms every newcomer joins are saved.",
	"revoke":        "The bot's API token is revoked on every instance.",
}

func (m module) render(c echo.Context, status int, v views.Admin) error {
	return m.pages.Render(c, status, views.Page{Title: "Administration"}, views.AdminView(v))
}

func (m module) showAdmin(c echo.Context) error {
	v, err := m.adminPage(c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if v.QueryError != "" {
		status = http.StatusUnprocessableEntity
	}
	return m.render(c, status, v)
}

func (m module) showAudit(c echo.Context) error {
	var before chat.ID
	if b := c.QueryParam("before"); b != "" {
		id, err := chat.ParseID(b)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "This page link is broken. Start from the first page.")
		}
		before = id
	}
	entries, err := m.app.AuditLog(c.Request().Context(), before, AuditPerPage)
	if err != nil {
		return err
	}
	v := views.AdminAudit{Entries: entries, Next: auditNext(entries)}
	return m.pages.Render(c, http.StatusOK, views.Page{Title: "Audit log"}, views.AdminAuditView(v))
}

// personAction does one action to a person's account.
func (m module) personAction(c echo.Context) error {
	ctx := c.Request().Context()
	me := handlers.MustUser(c).Login
	who := c.Param("login")
	if !chat.ValidName(who) {
		return chat.ErrNotFound
	}
	var err error
	switch action := c.Param("action"); action {
	case "deactivate":
		err = m.app.Deactivate(ctx, me, who)
	case "reactivate":
		err = m.app.Reactivate(ctx, me, who)
	case "promote", "demote":
		err = m.app.SetAdmin(ctx, me, who, action == "promote")
	case "end-sessions":
		err = m.app.EndSessions(ctx, me, who)
	case "reset-link":
		token, err := m.app.CreateResetLink(ctx, me, who)
		if err != nil {
			return err
		}
		v, err := m.adminPage(c)
		if err != nil {
			return err
		}
		v.NewLink = c.Scheme() + "://" + c.Request().Host + "/reset/" + token
		v.LinkFor = "Password-reset link for " + chat.NameKey(who) + ", valid for 24 hours and once"
		// The token is shown once, in this answer: it is stored only
		// as its hash.
		return m.render(c, http.StatusOK, v)
	default:
		return chat.ErrNotFound
	}
	if errors.Is(err, chat.ErrLastAdmin) || errors.Is(err, chat.ErrDeactivated) {
		v, perr := m.adminPage(c)
		if perr != nil {
			return perr
		}
		status, msg := http.StatusConflict, "The site needs at least one administrator: make someone else an administrator first."
		if errors.Is(err, chat.ErrDeactivated) {
			msg = "A deactivated account cannot be made an administrator: reactivate it first."
		}
		v.Notice = msg
		return m.render(c, status, v)
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, "/admin?done="+c.Param("action")+"&q="+urlQuery(chat.NameKey(who)))
}

func (m module) saveSettings(c echo.Context) error {
	f := handlers.FormOf(c, "signup_policy", "domains", "room_creation")
	err := m.app.SaveSettings(c.Request().Context(), handlers.MustUser(c).Login, chat.Settings{
		SignupPolicy: f.Value("signup_policy"), Domains: f.Value("domains"), RoomCreation: f.Value("room_creation")})
	if errors.Is(err, chat.ErrInvalid) {
		return m.refuse(c, func(v *views.Admin) { v.Settings = handlers.WithErrors(f, err) })
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, "/admin?done=settings#settings")
}

// refuse answers a form's invalid input: the page again (422), with the
// form and its errors put in place by set.
func (m module) refuse(c echo.Context, set func(*views.Admin)) error {
	v, err := m.adminPage(c)
	if err != nil {
		return err
	}
	set(&v)
	return m.render(c, http.StatusUnprocessableEntity, v)
}

// saveDefaultRooms sets the rooms every newcomer joins (issue 39), from
// names separated by commas or spaces, with or without "#"; an empty
// field is none.
func (m module) saveDefaultRooms(c echo.Context) error {
	f := handlers.FormOf(c, "rooms")
	names := strings.FieldsFunc(f.Value("rooms"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	err := m.app.ChooseDefaultRooms(c.Request().Context(), handlers.MustUser(c).Login, names)
	if errors.Is(err, chat.ErrInvalid) {
		return m.refuse(c, func(v *views.Admin) { v.DefaultRooms = handlers.WithErrors(f, err) })
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, "/admin?done=default-rooms#default-rooms")
}

// createInvite makes a sign-up link and shows it, once.
func (m module) createInvite(c echo.Context) error {
	f := handlers.FormOf(c, "expires_hours", "max_uses")
	in := chat.NewInvite{}
	bad := chat.ValidationError{}
	if h := f.Value("expires_hours"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || n > int(chat.MaxInviteTTL/time.Hour) {
			bad["expires"] = "Write a number of hours from 1 to 2160 (90 days), such as 168 for a week."
		} else {
			in.TTL = time.Duration(n) * time.Hour
		}
	}
	if u := f.Value("max_uses"); u != "" {
		n, err := strconv.Atoi(u)
		if err != nil || n <= 0 || n > 10000 {
			bad["max_uses"] = "Write a number of sign-ups from 1 to 10,000, or leave it empty for any number."
		} else {
			in.MaxUses = n
		}
	}
	var (
		token string
		err   = bad.Err()
	)
	if err == nil {
		token, _, err = m.app.CreateSiteInvite(c.Request().Context(), handlers.MustUser(c).Login, in)
	}
	v, perr := m.adminPage(c)
	if perr != nil {
		return perr
	}
	if errors.Is(err, chat.ErrInvalid) {
		v.Invite = handlers.WithErrors(f, err)
		return m.render(c, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	v.NewLink = c.Scheme() + "://" + c.Request().Host + "/signup?invite=" + token
	v.LinkFor = "Sign-up link"
	return m.render(c, http.StatusOK, v)
}

// createBot makes a bot and shows its API token, once.
func (m module) createBot(c echo.Context) error {
	f := handlers.FormOf(c, "login", "firstname", "lastname")
	b, token, err := m.app.CreateBot(c.Request().Context(), handlers.MustUser(c).Login,
		chat.NewBot{Login: f.Value("login"), Firstname: f.Value("firstname"), Lastname: f.Value("lastname")})
	if err != nil && !errors.Is(err, chat.ErrInvalid) && !errors.Is(err, chat.ErrUserExists) {
		return err
	}
	v, perr := m.adminPage(c)
	if perr != nil {
		return perr
	}
	if err != nil {
		status := http.StatusUnprocessableEntity
		if errors.Is(err, chat.ErrUserExists) {
			status, err = http.StatusConflict, chat.ValidationError{"login": "This login is taken."}
		}
		v.BotForm = handlers.WithErrors(f, err)
		return m.render(c, status, v)
	}
	// The token is shown once, in this answer: it is stored only as its
	// hash.
	v.NewToken, v.TokenFor = token, b.Login
	return m.render(c, http.StatusOK, v)
}

// botAction rotates (showing the new token once) or revokes a bot's
// API token.
func (m module) botAction(c echo.Context) error {
	ctx := c.Request().Context()
	me, who := handlers.MustUser(c).Login, c.Param("login")
	if !chat.ValidName(who) {
		return chat.ErrNotFound
	}
	switch c.Param("action") {
	case "rotate":
		token, err := m.app.RotateBotToken(ctx, me, who)
		if err != nil {
			return err
		}
		v, err := m.adminPage(c)
		if err != nil {
			return err
		}
		v.NewToken, v.TokenFor = token, chat.NameKey(who)
		return m.render(c, http.StatusOK, v)
	case "endpoint":
		endpoint := strings.TrimSpace(c.FormValue("endpoint"))
		secret, err := m.app.SetBotEndpoint(ctx, me, who, endpoint, m.checkEndpoint)
		var bad chat.ValidationError
		if errors.As(err, &bad) {
			v, perr := m.adminPage(c)
			if perr != nil {
				return perr
			}
			v.Notice = "The outgoing webhook of " + chat.NameKey(who) + " is not saved: " + bad["endpoint"]
			return m.render(c, http.StatusUnprocessableEntity, v)
		}
		if err != nil {
			return err
		}
		v, err := m.adminPage(c)
		if err != nil {
			return err
		}
		if secret != "" {
			v.NewToken, v.TokenFor = secret, chat.NameKey(who)+"'s outgoing webhook, its signing secret"
		} else {
			v.Notice = "The outgoing webhook of " + chat.NameKey(who) + " is off."
		}
		return m.render(c, http.StatusOK, v)
	case "revoke":
		if err := m.app.RevokeBotToken(ctx, me, who); err != nil {
			return err
		}
		return handlers.Redirect(c, "/admin?done=revoke#bots")
	}
	return chat.ErrNotFound
}
