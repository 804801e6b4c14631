package emails

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web/limit"
)

// App are the use cases (service.Service).
type App interface {
	EmailOn() bool
	ForgotPassword(ctx context.Context, who string) error
	VerifyEmail(ctx context.Context, token string) (string, error)
	SendVerification(ctx context.Context, login string) (bool, error)
	SetEmailSettings(ctx context.Context, login string, notify chat.EmailNotify, hideText bool) error
	Unsubscribe(ctx context.Context, login string) error
}

// Core is what the module uses of the HTTP core (handlers.Server).
type Core interface {
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	Log() *slog.Logger
}

// Deps are the module's parts.
type Deps struct {
	Core Core
	App  App
	// UnsubscribeKey checks the tokens of unsubscribe links.
	UnsubscribeKey []byte
	// PerAddress limits the requests of "forgot your password" for one
	// login or address, on this instance.
	PerAddress *limit.Keyed
}

type routes struct{ Deps }

// ForgotRate is the default of Deps.PerAddress: 3 requests, then one
// every 20 minutes, for one login or address.
var ForgotRate = limit.Rate{Burst: 3, Per: 20 * time.Minute}

// Register lists the module's routes.
func Register(r handlers.Routes, d Deps) {
	if d.PerAddress == nil {
		d.PerAddress = limit.NewKeyed(ForgotRate)
	}
	s := routes{d}
	r.Public.GET("/forgot", s.showForgot)
	r.Public.POST("/forgot", s.forgot, r.SignIn)
	r.Public.GET("/email/verify/:token", s.showVerify)
	r.Public.POST("/email/verify/:token", s.verify, r.SignIn)
	r.Auth.POST("/profile/email", s.saveSettings)
	r.Auth.POST("/profile/email/verify", s.sendVerification)
	r.Bare.GET("/email/unsubscribe/:token", s.showUnsubscribe)
	r.Bare.POST("/email/unsubscribe/:token", s.unsubscribe)
}

func (s routes) showForgot(c echo.Context) error {
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Forgot your password?"},
		views.ForgotPasswordView(views.Form{}, s.App.EmailOn(), false))
}

// forgot answers the same sentence whether or not an account matches;
// the look-up and the mail run after the answer, so its time tells
// nothing either.
func (s routes) forgot(c echo.Context) error {
	f := handlers.FormOf(c, "who")
	who := strings.TrimSpace(f.Value("who"))
	if !s.App.EmailOn() {
		return s.Core.Render(c, http.StatusOK, views.Page{Title: "Forgot your password?"}, views.ForgotPasswordView(f, false, false))
	}
	if who == "" || len(who) > 254 || strings.ContainsAny(who, "\r\n") {
		f.Errors = map[string]string{"who": "Give your login or your email address."}
		return s.Core.Render(c, http.StatusUnprocessableEntity, views.Page{Title: "Forgot your password?"}, views.ForgotPasswordView(f, true, false))
	}
	if ok, wait := s.PerAddress.Allow(strings.ToLower(who)); !ok {
		return limit.TooMany(c, wait, "asking for password links for this login or address")
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.App.ForgotPassword(ctx, who); err != nil {
			s.Core.Log().Warn("forgot password", "err", err)
		}
	}()
	f.Values["who"] = ""
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Forgot your password?"}, views.ForgotPasswordView(f, true, true))
}

func (s routes) showVerify(c echo.Context) error {
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Verify your email address"}, views.VerifyEmailView(c.Request().URL.Path))
}

func (s routes) verify(c echo.Context) error {
	if _, err := s.App.VerifyEmail(c.Request().Context(), c.Param("token")); err != nil {
		return err
	}
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Your address is verified"}, views.EmailVerifiedView())
}

func (s routes) saveSettings(c echo.Context) error {
	me := handlers.MustUser(c)
	notify, err := chat.ParseEmailNotify(c.FormValue("email_notify"))
	if err != nil {
		var ve chat.ValidationError
		if errors.As(err, &ve) {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, ve["email_notify"])
		}
		return err
	}
	if err := s.App.SetEmailSettings(c.Request().Context(), me.Login, notify, c.FormValue("email_hide_text") != ""); err != nil {
		return err
	}
	return handlers.Redirect(c, "/profile/notifications?notice=email-saved#email-heading")
}

func (s routes) sendVerification(c echo.Context) error {
	me := handlers.MustUser(c)
	if _, err := s.App.SendVerification(c.Request().Context(), me.Login); err != nil {
		return err
	}
	return handlers.Redirect(c, "/profile/notifications?notice=email-link-sent#email-heading")
}

func (s routes) showUnsubscribe(c echo.Context) error {
	if _, ok := email.UnsubscribeLogin(s.UnsubscribeKey, c.Param("token")); !ok {
		return chat.ErrLinkRefused
	}
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Missed-message emails"}, views.UnsubscribeView(c.Request().URL.Path, false))
}

// unsubscribe turns the token's person's missed-message emails off: the
// mail client's one-click POST (body List-Unsubscribe=One-Click) or the
// page's button.
func (s routes) unsubscribe(c echo.Context) error {
	login, ok := email.UnsubscribeLogin(s.UnsubscribeKey, c.Param("token"))
	if !ok {
		return chat.ErrLinkRefused
	}
	if err := s.App.Unsubscribe(c.Request().Context(), login); err != nil && !errors.Is(err, chat.ErrNotFound) {
		return err
	}
	return s.Core.Render(c, http.StatusOK, views.Page{Title: "Missed-message emails"}, views.UnsubscribeView(c.Request().URL.Path, true))
}
