package avatars

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/csrf"
	"github.com/killrchat/killrchat/web/limit"
)

// MaxPicture is the largest picture file taken (or --max-upload, if lower).
const MaxPicture = 10 << 20

// Pictures are the profile pictures as stored, and the files the old
// ones were kept as (store.Store).
type Pictures interface {
	Avatar(ctx context.Context, login string) (chat.Avatar, error)
	User(ctx context.Context, login string) (chat.User, error)
	Attachment(ctx context.Context, id chat.ID) (chat.Attachment, error)
	OpenAttachment(ctx context.Context, a chat.Attachment) io.ReadSeekCloser
}

// Core is what the module uses of the HTTP core (handlers.Server):
// telling every instance of a new picture, whether one has a picture,
// rendering.
type Core interface {
	AvatarVersion(login string) string
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// App is the use cases of a person's picture (service.Service).
type App interface {
	SetAvatar(ctx context.Context, user chat.UserRef, body io.Reader, limit int64) (chat.Avatar, error)
	RemoveAvatar(ctx context.Context, login string) error
}

// Deps are what the module is built from.
type Deps struct {
	Core Core
	DB   Pictures
	App  App
	// CSRF checks a form read as a stream; MaxUpload bounds a file;
	// Bytes is the hourly upload budget per person, Uploads the uploads
	// under way per person.
	CSRF      *csrf.Guard
	MaxUpload int64
	Bytes     *limit.Keyed
	Uploads   *limit.UserCounts
}

// routes are the avatar routes.
type routes struct{ Deps }

// Register lists the avatar routes.
func Register(r handlers.Routes, d Deps) {
	s := routes{d}
	r.Auth.POST("/profile/avatar", s.upload)
	r.Auth.POST("/profile/avatar/delete", s.remove)
	r.Auth.GET("/users/:login/avatar", s.serve)
}

func (s routes) limit() int64 { return min(int64(MaxPicture), s.MaxUpload) }

// upload reads the form's _csrf field (first, when the header carried no
// token) and its picture, which it stores as the person's avatar.
func (s routes) upload(c echo.Context) error {
	req := c.Request()
	me := handlers.MustUser(c)
	most := s.limit()
	if req.ContentLength > most+64<<10 {
		return s.refuse(c, fmt.Errorf("%w", chat.ErrTooLarge))
	}
	if req.ContentLength > 0 {
		if ok, wait := s.Bytes.AllowN(me.Login, int(req.ContentLength)); !ok {
			return limit.TooMany(c, wait, "uploading")
		}
	}
	if !s.Uploads.Take(me.Login) {
		return limit.TooMany(c, 5*time.Second, "uploading several files at once")
	}
	defer s.Uploads.Give(me.Login)
	body := &web.RecordingBody{ReadCloser: http.MaxBytesReader(c.Response(), req.Body, most+64<<10)}
	req.Body = body
	mr, err := req.MultipartReader()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The upload could not be read.")
	}
	sawCSRF := !csrf.NeedsStreamed(c)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && body.Err == nil {
			// The bytes arrived; they are not a form (a NUL in a
			// file name, a broken header).
			return echo.NewHTTPError(http.StatusBadRequest, "The upload could not be read: its form is malformed. Nothing was changed.")
		}
		if err != nil {
			return s.refuse(c, err)
		}
		if !sawCSRF {
			if part.FormName() != csrf.Field {
				return csrf.ErrToken
			}
			token, err := web.ReadField(part, 256)
			if err != nil {
				return s.refuse(c, err)
			}
			if err := s.CSRF.CheckStreamed(c, token); err != nil {
				return err
			}
			sawCSRF = true
			continue
		}
		if part.FormName() != "picture" || part.FileName() == "" {
			if _, err := io.Copy(io.Discard, part); err != nil {
				return s.refuse(c, err)
			}
			continue
		}
		if _, err := s.App.SetAvatar(req.Context(), me, part, most); err != nil {
			return s.refuse(c, err)
		}
		return handlers.Redirect(c, "/profile?saved=1#profile-picture")
	}
	if !sawCSRF {
		return csrf.ErrToken
	}
	return s.refuse(c, chat.ValidationError{"picture": "Choose a picture to upload."})
}

// refuse answers a picture that was not taken with the profile page and
// why (422 or 413), or with the error page for anything else.
func (s routes) refuse(c echo.Context, err error) error {
	var (
		tooBig  *http.MaxBytesError
		invalid chat.ValidationError
		msg     string
		status  = http.StatusUnprocessableEntity
	)
	switch {
	case errors.As(err, &tooBig), errors.Is(err, chat.ErrTooLarge):
		status, msg = http.StatusRequestEntityTooLarge,
			fmt.Sprintf("This picture is larger than %s. Nothing was changed.", views.HumanSize(s.limit()))
	case errors.As(err, &invalid):
		msg = invalid["picture"] + invalid["file"]
	default:
		return err
	}
	if errors.As(err, &tooBig) {
		// The rest of the body is not read: the connection goes.
		c.Response().Header().Set("Connection", "close")
	}
	u, err := s.DB.User(c.Request().Context(), handlers.MustUser(c).Login)
	if err != nil {
		return err
	}
	p := views.NewProfileEdit(u, s.Core.AvatarVersion(u.Login) != "")
	p.Picture.Errors["picture"] = msg
	return s.Core.Render(c, status, views.Page{Title: "Your profile"}, views.ProfileEditView(p))
}

func (s routes) remove(c echo.Context) error {
	me := handlers.MustUser(c)
	if err := s.App.RemoveAvatar(c.Request().Context(), me.Login); err != nil {
		return err
	}
	return handlers.Redirect(c, "/profile?saved=1#profile-picture")
}

// serve sends login's picture, s=48 or s=128 (the default), to anyone
// signed in. With v (the version the page was drawn with) the address
// names these bytes for good, and browsers keep them a day; without it,
// they ask again after 5 minutes. The ETag is the square's id.
func (s routes) serve(c echo.Context) error {
	ctx := c.Request().Context()
	av, err := s.DB.Avatar(ctx, c.Param("login"))
	if err != nil {
		return err
	}
	id := av.Large
	switch c.QueryParam("s") {
	case "", strconv.Itoa(chat.AvatarLarge):
	case strconv.Itoa(chat.AvatarSmall):
		id = av.Small
	default:
		return echo.NewHTTPError(http.StatusBadRequest, "A picture is 48 or 128 pixels.")
	}
	a, err := s.DB.Attachment(ctx, id)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("ETag", `"`+a.ID.String()+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if v := c.QueryParam("v"); v != "" && v == av.Version() {
		h.Set("Cache-Control", "private, max-age=86400, immutable")
	} else {
		h.Set("Cache-Control", "private, max-age=300")
	}
	r := s.DB.OpenAttachment(ctx, a)
	defer r.Close()
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, r)
	return nil
}
