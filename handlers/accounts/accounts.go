package accounts

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/session"
)

// deactivatedSentence is what a deactivated person reads at login.
const deactivatedSentence = "This account is deactivated. Ask an administrator of the site to reactivate it."

// Users are the accounts as stored (store.Store).
type Users interface {
	CreateUser(ctx context.Context, f chat.SignUp) (chat.User, error)
	User(ctx context.Context, login string) (chat.User, error)
	Authenticate(ctx context.Context, login, password string) (chat.User, error)
	Invite(ctx context.Context, token string) (chat.Invite, error)
	Room(ctx context.Context, name string) (chat.Room, error)
	RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error)
}

// Accounts are the use cases of an account that other instances hear of
// (service.Service).
type Accounts interface {
	ChangeProfile(ctx context.Context, login, email, bio string) error
	ChangePassword(ctx context.Context, login, keep, old, password, confirm string) ([]string, error)
	SessionsEnded(ctx context.Context, login string, ids []string)
	JoinByInvite(ctx context.Context, me chat.UserRef, token string, before chat.RoomFor) (chat.RoomFor, error)
	Onboard(ctx context.Context, me chat.UserRef) ([]string, error)

	Site(ctx context.Context) (chat.Site, error)
	SignUp(ctx context.Context, f chat.SignUp, invite string) (chat.User, bool, error)
	LogIn(ctx context.Context, login, password string) (chat.User, error)
	ConfirmLogin(ctx context.Context, login, session string) error
	ResetLink(ctx context.Context, token string) (string, error)
	ResetPassword(ctx context.Context, token, password, confirm string) (string, error)
	DeleteAccount(ctx context.Context, login, password string) error
	EmailOn() bool
	EmailHidesText() bool
}

// Core is what the module uses of the HTTP core (handlers.Server):
// giving a person a session, whether they have a picture, rendering.
type Core interface {
	LogIn(c echo.Context, u chat.User, remember bool) error
	AvatarVersion(login string) string
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
	RenderRaw(c echo.Context, status int, comp templ.Component) error
	Log() *slog.Logger
}

// routes are the accounts' routes.
type routes struct {
	core Core
	db   Users
	app  Accounts
}

// Register lists the accounts' routes.
func Register(r handlers.Routes, core Core, db Users, app Accounts) {
	s := routes{core, db, app}
	r.Public.GET("/signup", s.showSignup)
	r.Public.POST("/signup", s.signup, r.SignIn)
	r.Public.GET("/login", s.showLogin)
	r.Public.POST("/login", s.login, r.SignIn)
	r.Public.POST("/logout", s.logout)
	r.Auth.GET("/users/:login", s.showUser)
	r.Auth.GET("/profile", s.showProfile)
	r.Auth.POST("/profile", s.updateProfile)
	r.Auth.POST("/profile/password", s.changePassword, r.Passwords...)
	r.Auth.GET("/profile/notifications", s.notificationSettings)
	r.Public.GET("/reset/:token", s.showReset)
	r.Public.POST("/reset/:token", s.resetPassword, r.SignIn)
	r.Auth.GET("/profile/delete", s.showDeleteAccount)
	r.Auth.POST("/profile/delete", s.deleteAccount, r.Passwords...)
}

// notificationSettings is the page of this browser's notifications and
// of the person's email.
func (s routes) notificationSettings(c echo.Context) error {
	u, err := s.db.User(c.Request().Context(), handlers.MustUser(c).Login)
	if err != nil {
		return err
	}
	e := views.EmailSettings{On: s.app.EmailOn(), Address: u.Email, Verified: u.EmailVerified(),
		Notify: string(u.Mail.NotifyOr()), HideText: u.Mail.HideText, SiteHidesText: s.app.EmailHidesText()}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Notifications"}, views.NotificationSettingsView(e))
}

func (s routes) showSignup(c echo.Context) error {
	if _, ok := handlers.CurrentUser(c); ok {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	f := views.Form{Values: map[string]string{"next": handlers.SafeNext(c.QueryParam("next")), "invite": c.QueryParam("invite")}}
	note, err := s.signupNote(c)
	if err != nil {
		return err
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Sign up"}, views.SignupView(f, s.invitedName(c, f.Value("next")), note))
}

// signupNote says what the site's sign-up is: whoever signs up first on
// a site with no administrator becomes it; a closed sign-up says so.
func (s routes) signupNote(c echo.Context) (string, error) {
	site, err := s.app.Site(c.Request().Context())
	if err != nil {
		return "", err
	}
	switch {
	case !site.Claimed:
		return "This site has no administrator yet: you are the first to sign up, so you will be its administrator.", nil
	case site.Policy() == chat.SignupInvite:
		return "Sign-up on this site is by invitation only: open the invitation link you were given.", nil
	case site.Policy() == chat.SignupDomains:
		return "Sign-up on this site is open to email addresses at " + strings.Join(site.SignupDomains, ", ") + " only.", nil
	}
	return "", nil
}

func (s routes) signup(c echo.Context) error {
	f := handlers.FormOf(c, "login", "firstname", "lastname", "email", "bio", "next", "invite")
	u, _, err := s.app.SignUp(c.Request().Context(), chat.SignUp{
		Login: f.Value("login"), Password: c.FormValue("password"), PasswordConfirm: c.FormValue("password_confirm"),
		Firstname: f.Value("firstname"), Lastname: f.Value("lastname"), Email: f.Value("email"), Bio: f.Value("bio"),
	}, f.Value("invite"))
	if err != nil {
		closed := errors.Is(err, chat.ErrSignupClosed) || errors.Is(err, chat.ErrLinkRefused)
		if !handlers.FormError(err) && !closed {
			return err
		}
		status := handlers.FormStatus(err)
		if closed {
			status, f.Errors = http.StatusForbidden, map[string]string{}
			_, f.Error = web.StatusOf(err)
		} else {
			f = handlers.WithErrors(f, err)
		}
		if errors.Is(err, chat.ErrUserExists) {
			// Said once, beside the field.
			f.Errors["login"], f.Error = "This login is taken.", ""
		}
		return s.core.Render(c, status, views.Page{Title: "Sign up"}, views.SignupView(f, s.invitedName(c, f.Value("next")), ""))
	}
	// The people directory and the site's default rooms (issue 39); a
	// failure leaves the account as it is.
	if _, err := s.app.Onboard(c.Request().Context(), u.Ref()); err != nil {
		s.core.Log().Warn("sign-up: onboard", "login", u.Login, "err", err)
	}
	if err := s.core.LogIn(c, u, false); err != nil {
		return err
	}
	next := handlers.SafeNext(f.Value("next"))
	if next == "/" {
		next = "/?notice=welcome"
	}
	return handlers.Redirect(c, s.afterSignup(c, u.Ref(), next))
}

func (s routes) showLogin(c echo.Context) error {
	if _, ok := handlers.CurrentUser(c); ok {
		return c.Redirect(http.StatusSeeOther, handlers.SafeNext(c.QueryParam("next")))
	}
	f := views.Form{Values: map[string]string{"next": handlers.SafeNext(c.QueryParam("next"))}}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Log in"}, views.LoginView(f, s.invitedName(c, f.Value("next"))))
}

func (s routes) login(c echo.Context) error {
	f := handlers.FormOf(c, "login", "next")
	f.Errors = map[string]string{}
	u, err := s.app.LogIn(c.Request().Context(), f.Value("login"), c.FormValue("password"))
	if err == nil {
		if err = s.core.LogIn(c, u, c.FormValue("remember_me") != ""); err != nil {
			return err
		}
		// A deactivation that ran meanwhile either sees this session or
		// is seen by this check (service/admin.go).
		err = s.app.ConfirmLogin(c.Request().Context(), u.Login, handlers.Session(c).ID)
	}
	if errors.Is(err, chat.ErrDeactivated) {
		f.Error = deactivatedSentence
		return s.core.Render(c, http.StatusForbidden, views.Page{Title: "Log in"}, views.LoginView(f, s.invitedName(c, f.Value("next"))))
	}
	if err != nil {
		if !handlers.FormError(err) {
			return err
		}
		f.Error = "Wrong login or password."
		return s.core.Render(c, http.StatusUnauthorized, views.Page{Title: "Log in"}, views.LoginView(f, s.invitedName(c, f.Value("next"))))
	}
	return handlers.Redirect(c, handlers.SafeNext(f.Value("next")))
}

func (s routes) logout(c echo.Context) error {
	if sess := handlers.Session(c); sess != nil && sess.ID != "" {
		sess.Options.MaxAge = -1
		if err := sess.Save(c.Request(), c.Response()); err != nil {
			return err
		}
		// The streams this session opened stop too, on every instance;
		// the person's other sessions keep theirs.
		if u, ok := handlers.CurrentUser(c); ok {
			s.app.SessionsEnded(c.Request().Context(), u.Login, []string{sess.ID})
		}
	}
	return handlers.Redirect(c, "/login?notice=logged-out")
}

func (s routes) showUser(c echo.Context) error {
	u, err := s.db.User(c.Request().Context(), c.Param("login"))
	if err != nil {
		return err
	}
	me := handlers.MustUser(c)
	p := views.Profile{User: u, Own: u.Login == me.Login}
	if !p.Own {
		if address, err := chat.DMAddress([]string{me.Login, u.Login}); err == nil {
			p.MessageURL = handlers.DMURL(address)
		}
	}
	if handlers.IsHTMX(c) {
		return s.core.RenderRaw(c, http.StatusOK, views.HoverCard(p))
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: u.Name()}, views.ProfileView(p))
}

func (s routes) profileEdit(c echo.Context) (views.ProfileEdit, error) {
	u, err := s.db.User(c.Request().Context(), handlers.MustUser(c).Login)
	if err != nil {
		return views.ProfileEdit{}, err
	}
	p := views.NewProfileEdit(u, s.core.AvatarVersion(u.Login) != "")
	site, err := s.app.Site(c.Request().Context())
	if err != nil {
		return p, err
	}
	p.Admin = site.IsAdmin(u.Login)
	return p, nil
}

func (s routes) showProfile(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	if c.QueryParam("saved") != "" {
		p.Saved = "Your changes are saved."
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Your profile"}, views.ProfileEditView(p))
}

func (s routes) updateProfile(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	p.Form = handlers.FormOf(c, "email", "bio")
	err = s.app.ChangeProfile(c.Request().Context(), p.User.Login, p.Form.Value("email"), p.Form.Value("bio"))
	if err != nil {
		if !handlers.FormError(err) {
			return err
		}
		p.Form = handlers.WithErrors(p.Form, err)
		return s.core.Render(c, handlers.FormStatus(err), views.Page{Title: "Your profile"}, views.ProfileEditView(p))
	}
	return handlers.Redirect(c, "/profile?saved=1")
}

func (s routes) changePassword(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	ended, err := s.app.ChangePassword(c.Request().Context(), p.User.Login, handlers.Session(c).ID,
		c.FormValue("old_password"), c.FormValue("password"), c.FormValue("password_confirm"))
	if err != nil {
		if !handlers.FormError(err) {
			return err
		}
		p.Password = handlers.WithErrors(p.Password, err)
		return s.core.Render(c, handlers.FormStatus(err), views.Page{Title: "Your profile"}, views.ProfileEditView(p))
	}
	if err := s.renewSession(c, p.User, ended); err != nil {
		return err
	}
	return handlers.Redirect(c, "/profile?saved=1")
}

// renewSession gives u a new session in place of this one (whoever knew
// its id is out too) and closes, on every instance, the live streams of
// the sessions ended and of this one.
func (s routes) renewSession(c echo.Context, u chat.User, ended []string) error {
	current := handlers.Session(c)
	remember, _ := current.Values[session.KeyRemember].(bool)
	ended = append(ended, current.ID)
	if err := s.core.LogIn(c, u, remember); err != nil {
		return err
	}
	s.app.SessionsEnded(c.Request().Context(), u.Login, ended)
	return nil
}

// showReset is the page of a password-reset link; a link that does not
// work gets the one refusal, whatever the reason.
func (s routes) showReset(c echo.Context) error {
	if _, err := s.app.ResetLink(c.Request().Context(), c.Param("token")); err != nil {
		return err
	}
	return s.core.Render(c, http.StatusOK, views.Page{Title: "New password"}, views.ResetPasswordView(c.Request().URL.Path, views.Form{}))
}

// resetPassword sets the password by a reset link, once, and ends the
// person's sessions; they log in with the new one.
func (s routes) resetPassword(c echo.Context) error {
	_, err := s.app.ResetPassword(c.Request().Context(), c.Param("token"), c.FormValue("password"), c.FormValue("password_confirm"))
	if errors.Is(err, chat.ErrInvalid) {
		f := handlers.WithErrors(views.Form{Values: map[string]string{}, Errors: map[string]string{}}, err)
		return s.core.Render(c, handlers.FormStatus(err), views.Page{Title: "New password"}, views.ResetPasswordView(c.Request().URL.Path, f))
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, "/login?notice=password-set")
}

func (s routes) showDeleteAccount(c echo.Context) error {
	return s.core.Render(c, http.StatusOK, views.Page{Title: "Delete your account"}, views.DeleteAccountView(views.Form{}))
}

// deleteAccount deletes the person's own account, once they confirm
// their password.
func (s routes) deleteAccount(c echo.Context) error {
	me := handlers.MustUser(c)
	err := s.app.DeleteAccount(c.Request().Context(), me.Login, c.FormValue("password"))
	if handlers.FormError(err) {
		f := handlers.WithErrors(views.Form{Values: map[string]string{}, Errors: map[string]string{}}, err)
		return s.core.Render(c, handlers.FormStatus(err), views.Page{Title: "Delete your account"}, views.DeleteAccountView(f))
	}
	if err != nil {
		return err
	}
	if sess := handlers.Session(c); sess != nil && sess.ID != "" {
		sess.Options.MaxAge = -1
		if err := sess.Save(c.Request(), c.Response()); err != nil {
			return err
		}
	}
	return handlers.Redirect(c, "/login?notice=account-deleted")
}
