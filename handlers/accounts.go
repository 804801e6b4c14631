// This file owns sign-up, login and logout.
package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
)

func FormOf(c echo.Context, fields ...string) views.Form {
	f := views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	for _, name := range fields {
		f.Values[name] = c.FormValue(name)
	}
	return f
}

// withErrors adds a store error to the form: field errors for a
// ValidationError, a form-level sentence otherwise.
func WithErrors(f views.Form, err error) views.Form {
	var v store.ValidationError
	if errors.As(err, &v) {
		for field, msg := range v {
			f.Errors[field] = msg
		}
		f.Error = "Please correct the fields marked below."
		return f
	}
	_, f.Error = statusOf(err)
	return f
}

// formStatus is the status of a form re-rendered for err.
func formStatus(err error) int {
	if errors.Is(err, store.ErrInvalid) {
		return http.StatusUnprocessableEntity
	}
	code, _ := statusOf(err)
	return code
}

// formError decides whether err is about the form (re-render it with the
// message) or not (let the error handler show its page).
func formError(err error) bool {
	code := formStatus(err)
	return code == http.StatusUnprocessableEntity || code == http.StatusConflict || code == http.StatusUnauthorized
}

func (s *Server) showSignup(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	f := views.Form{Values: map[string]string{"next": safeNext(c.QueryParam("next"))}}
	return s.Render(c, http.StatusOK, views.Page{Title: "Sign up"}, views.SignupView(f))
}

func (s *Server) signup(c echo.Context) error {
	f := FormOf(c, "login", "firstname", "lastname", "email", "bio", "next")
	u, err := s.db.CreateUser(c.Request().Context(), store.SignUp{
		Login: f.Value("login"), Password: c.FormValue("password"), PasswordConfirm: c.FormValue("password_confirm"),
		Firstname: f.Value("firstname"), Lastname: f.Value("lastname"), Email: f.Value("email"), Bio: f.Value("bio"),
	})
	if err != nil {
		if !formError(err) {
			return err
		}
		f = WithErrors(f, err)
		if errors.Is(err, store.ErrUserExists) {
			// Said once, beside the field.
			f.Errors["login"], f.Error = "This login is taken.", ""
		}
		return s.Render(c, formStatus(err), views.Page{Title: "Sign up"}, views.SignupView(f))
	}
	if err := s.logIn(c, u, false); err != nil {
		return err
	}
	next := safeNext(f.Value("next"))
	if next == "/" {
		next = "/?notice=welcome"
	}
	return Redirect(c, next)
}

func (s *Server) showLogin(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	f := views.Form{Values: map[string]string{"next": safeNext(c.QueryParam("next"))}}
	return s.Render(c, http.StatusOK, views.Page{Title: "Log in"}, views.LoginView(f))
}

func (s *Server) login(c echo.Context) error {
	f := FormOf(c, "login", "next")
	f.Errors = map[string]string{}
	u, err := s.db.Authenticate(c.Request().Context(), f.Value("login"), c.FormValue("password"))
	if err != nil {
		if !formError(err) {
			return err
		}
		f.Error = "Wrong login or password."
		return s.Render(c, http.StatusUnauthorized, views.Page{Title: "Log in"}, views.LoginView(f))
	}
	if err := s.logIn(c, u, c.FormValue("remember_me") != ""); err != nil {
		return err
	}
	return Redirect(c, safeNext(f.Value("next")))
}

func (s *Server) logout(c echo.Context) error {
	if sess := Session(c); sess != nil && sess.ID != "" {
		sess.Options.MaxAge = -1
		if err := sess.Save(c.Request(), c.Response()); err != nil {
			return err
		}
		// The streams this session opened stop too, on every instance;
		// the person's other sessions keep theirs.
		if u, ok := currentUser(c); ok {
			s.EndStreams(c.Request().Context(), live.StreamEnd{Login: u.Login, Sessions: []string{sess.ID}})
		}
	}
	return Redirect(c, "/login?notice=logged-out")
}
