// This file owns public profiles (with their hover-card fragment) and the
// editing of one's own profile and password.
package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

func (s *Server) showUser(c echo.Context) error {
	u, err := s.db.User(c.Request().Context(), c.Param("login"))
	if err != nil {
		return err
	}
	me := MustUser(c)
	p := views.Profile{User: u, Own: u.Login == me.Login}
	if !p.Own {
		if address, err := store.DMAddress([]string{me.Login, u.Login}); err == nil {
			p.MessageURL = dmURL(address)
		}
	}
	if IsHTMX(c) {
		return s.RenderRaw(c, http.StatusOK, views.HoverCard(p))
	}
	return s.Render(c, http.StatusOK, views.Page{Title: u.Name()}, views.ProfileView(p))
}

func (s *Server) profileEdit(c echo.Context) (views.ProfileEdit, error) {
	u, err := s.db.User(c.Request().Context(), MustUser(c).Login)
	if err != nil {
		return views.ProfileEdit{}, err
	}
	return views.ProfileEdit{
		User:     u,
		Form:     views.Form{Values: map[string]string{"email": u.Email, "bio": u.Bio}, Errors: map[string]string{}},
		Password: views.Form{Values: map[string]string{}, Errors: map[string]string{}},
	}, nil
}

func (s *Server) showProfile(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	if c.QueryParam("saved") != "" {
		p.Saved = "Your changes are saved."
	}
	return s.Render(c, http.StatusOK, views.Page{Title: "Your profile"}, views.ProfileEditView(p))
}

func (s *Server) updateProfile(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	p.Form = FormOf(c, "email", "bio")
	err = s.db.UpdateProfile(c.Request().Context(), p.User.Login, p.Form.Value("email"), p.Form.Value("bio"))
	s.Invalidate(c.Request().Context(), live.Invalidation{Users: []string{p.User.Login}})
	if err != nil {
		if !formError(err) {
			return err
		}
		return s.Render(c, formStatus(err), views.Page{Title: "Your profile"}, views.ProfileEditView(
			views.ProfileEdit{User: p.User, Form: WithErrors(p.Form, err), Password: p.Password}))
	}
	return Redirect(c, "/profile?saved=1")
}

func (s *Server) changePassword(c echo.Context) error {
	p, err := s.profileEdit(c)
	if err != nil {
		return err
	}
	err = s.db.ChangePassword(c.Request().Context(), p.User.Login,
		c.FormValue("old_password"), c.FormValue("password"), c.FormValue("password_confirm"))
	if err != nil {
		if !formError(err) {
			return err
		}
		p.Password = WithErrors(p.Password, err)
		return s.Render(c, formStatus(err), views.Page{Title: "Your profile"}, views.ProfileEditView(p))
	}
	if err := s.endOtherSessions(c, p.User); err != nil {
		return err
	}
	return Redirect(c, "/profile?saved=1")
}

// endOtherSessions ends every session of u but this one, which gets a new
// id (whoever knew the old one is out too), and closes the live streams of
// the ended sessions on every instance.
func (s *Server) endOtherSessions(c echo.Context, u store.User) error {
	ctx := c.Request().Context()
	current := Session(c)
	ended, err := s.db.EndOtherSessions(ctx, u.Login, current.ID)
	if err != nil {
		return err
	}
	remember, _ := current.Values[web.KeyRemember].(bool)
	ended = append(ended, current.ID)
	if err := s.logIn(c, u, remember); err != nil {
		return err
	}
	s.EndStreams(ctx, live.StreamEnd{Login: u.Login, Sessions: ended})
	return nil
}
