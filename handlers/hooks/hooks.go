// This file owns the hooks' routes: the room administrators' page and
// the posts of tools.

package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
	"github.com/killrchat/killrchat/web/limit"
)

// SecretHeader carries a hook's secret when the URL does not.
const SecretHeader = "X-KillrChat-Hook-Secret"

// UseCases are the hooks' use cases (service.Service).
type UseCases interface {
	CreateHook(ctx context.Context, actor chat.UserRef, r chat.RoomFor, name string) (chat.Hook, string, error)
	RoomHooks(ctx context.Context, actor string, r chat.RoomFor) ([]chat.Hook, error)
	DeleteHook(ctx context.Context, actor string, r chat.RoomFor, id string) error
	HookFor(ctx context.Context, id, secret string) (chat.Hook, error)
	PostByHook(ctx context.Context, h chat.Hook, p service.HookPost) (chat.Message, error)
}

// Core is what the module uses of the HTTP core (handlers.Server).
type Core interface {
	VisibleRoom(c echo.Context) (chat.RoomFor, error)
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

type module struct {
	core  Core
	app   UseCases
	posts *limit.Keyed
}

// Register lists the hooks' routes; rate bounds the posts to each hook.
func Register(r handlers.Routes, core Core, app UseCases, rate limit.Rate) {
	m := module{core: core, app: app, posts: limit.NewKeyed(rate)}
	r.Auth.GET("/rooms/:room/hooks", m.showHooks)
	r.Auth.POST("/rooms/:room/hooks", m.createHook, r.Membership)
	r.Auth.POST("/rooms/:room/hooks/:id/delete", m.deleteHook)
	r.Bare.POST("/hooks/:id", m.post)
	r.Bare.POST("/hooks/:id/:secret", m.post)
}

// page is the room's hooks page for its administrator.
func (m module) page(c echo.Context) (views.RoomHooks, error) {
	r, err := m.core.VisibleRoom(c)
	if err != nil {
		return views.RoomHooks{}, err
	}
	hooks, err := m.app.RoomHooks(c.Request().Context(), handlers.MustUser(c).Login, r)
	if errors.Is(err, chat.ErrNotAdmin) {
		return views.RoomHooks{}, echo.NewHTTPError(http.StatusForbidden, "Only the room's administrators manage its webhooks.")
	}
	if err != nil {
		return views.RoomHooks{}, err
	}
	return views.RoomHooks{Room: r, Hooks: hooks, Base: c.Scheme() + "://" + c.Request().Host,
		Form: views.Form{Values: map[string]string{}, Errors: map[string]string{}}}, nil
}

func (m module) render(c echo.Context, status int, v views.RoomHooks) error {
	return m.core.Render(c, status, views.Page{Title: "Webhooks of " + v.Room.DisplayName}, views.RoomHooksView(v))
}

func (m module) showHooks(c echo.Context) error {
	v, err := m.page(c)
	if err != nil {
		return err
	}
	return m.render(c, http.StatusOK, v)
}

// createHook makes a hook and shows its URL, with the secret, once.
func (m module) createHook(c echo.Context) error {
	v, err := m.page(c)
	if err != nil {
		return err
	}
	f := handlers.FormOf(c, "name")
	h, secret, err := m.app.CreateHook(c.Request().Context(), handlers.MustUser(c), v.Room, f.Value("name"))
	if errors.Is(err, chat.ErrInvalid) {
		v.Form = handlers.WithErrors(f, err)
		return m.render(c, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	if v, err = m.page(c); err != nil {
		return err
	}
	v.NewURL = v.Base + "/hooks/" + h.ID + "/" + secret
	v.NewName = h.Name
	return m.render(c, http.StatusOK, v)
}

func (m module) deleteHook(c echo.Context) error {
	r, err := m.core.VisibleRoom(c)
	if err != nil {
		return err
	}
	err = m.app.DeleteHook(c.Request().Context(), handlers.MustUser(c).Login, r, c.Param("id"))
	if errors.Is(err, chat.ErrNotAdmin) {
		return echo.NewHTTPError(http.StatusForbidden, "Only the room's administrators manage its webhooks.")
	}
	if err != nil {
		return err
	}
	return handlers.Redirect(c, handlers.RoomURL(r.Name)+"/hooks")
}

// slackMessage is Slack's incoming-webhook body, as far as this server
// takes it: text, and how to show its sender. Other fields are refused
// rather than silently dropped (blocks and attachments would lose what
// the sender meant). icon_url and icon_emoji are accepted and not
// shown: the server fetches no pictures for a post.
type slackMessage struct {
	Text        *string `json:"text"`
	Username    string  `json:"username"`
	IconURL     string  `json:"icon_url"`
	IconEmoji   string  `json:"icon_emoji"`
	Channel     string  `json:"channel"`
	Mrkdwn      *bool   `json:"mrkdwn"`
	LinkNames   any     `json:"link_names"`
	UnfurlLinks bool    `json:"unfurl_links"`
	UnfurlMedia bool    `json:"unfurl_media"`
	Parse       string  `json:"parse"`
}

// post takes a tool's message (POST /hooks/:id[/:secret]). Every
// refusal is a plain-text 4xx and stores nothing.
func (m module) post(c echo.Context) error {
	ctx := c.Request().Context()
	secret := c.Param("secret")
	if secret == "" {
		secret = c.Request().Header.Get(SecretHeader)
	}
	h, err := m.app.HookFor(ctx, c.Param("id"), secret)
	if errors.Is(err, chat.ErrNotFound) {
		return c.String(http.StatusNotFound, "No webhook has this address and secret.\n")
	}
	if err != nil {
		return answer(c, err)
	}
	if ok, wait := m.posts.Allow(h.ID); !ok {
		c.Response().Header().Set("Retry-After", fmt.Sprint(max(1, int(wait.Seconds()+0.999))))
		return c.String(http.StatusTooManyRequests, "This webhook posts too fast: at most 20 at once, then one a second.\n")
	}
	p, status, problem := readPost(c)
	if problem != "" {
		return c.String(status, problem+"\n")
	}
	if _, err := m.app.PostByHook(ctx, h, p); err != nil {
		return answer(c, err)
	}
	return c.String(http.StatusOK, "ok")
}

// readPost reads the body in Slack's format (JSON, or the form field
// payload holding that JSON) or as text/plain; problem says what is
// wrong with it, with its status.
func readPost(c echo.Context) (service.HookPost, int, string) {
	req := c.Request()
	mediaType, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil {
		return service.HookPost{}, http.StatusUnsupportedMediaType, "Send application/json, a form with the field payload, or text/plain."
	}
	var body []byte
	switch mediaType {
	case echo.MIMEApplicationJSON:
		body, err = io.ReadAll(req.Body)
	case echo.MIMEApplicationForm:
		if err = req.ParseForm(); err == nil {
			if !req.PostForm.Has("payload") {
				return service.HookPost{}, http.StatusBadRequest, "The form has no field payload."
			}
			body = []byte(req.PostForm.Get("payload"))
		}
	case echo.MIMETextPlain:
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return service.HookPost{}, bodyStatus(err), "The body could not be read."
		}
		return service.HookPost{Text: chat.SlackToMarkdown(string(b))}, 0, ""
	default:
		return service.HookPost{}, http.StatusUnsupportedMediaType, "Send application/json, a form with the field payload, or text/plain."
	}
	if err != nil {
		return service.HookPost{}, bodyStatus(err), "The body could not be read."
	}
	return parseSlack(body)
}

func bodyStatus(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code // the body limit's 413
	}
	if strings.Contains(err.Error(), "too large") {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// parseSlack reads Slack's JSON message strictly.
func parseSlack(body []byte) (service.HookPost, int, string) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var msg slackMessage
	if err := dec.Decode(&msg); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return service.HookPost{}, http.StatusBadRequest, "This server does not take the field " + field + ": send text (Slack's mrkdwn), and optionally username."
		}
		return service.HookPost{}, http.StatusBadRequest, "The body is not valid JSON: " + err.Error() + "."
	}
	if dec.More() {
		return service.HookPost{}, http.StatusBadRequest, "The body holds more than one JSON value."
	}
	if msg.Text == nil || strings.TrimSpace(*msg.Text) == "" {
		return service.HookPost{}, http.StatusBadRequest, "The message has no text."
	}
	text := *msg.Text
	if msg.Mrkdwn == nil || *msg.Mrkdwn {
		text = chat.SlackToMarkdown(text)
	} else {
		text = chat.EscapeMarkdown(text)
	}
	return service.HookPost{Text: text, Username: msg.Username}, 0, ""
}

// answer is a refusal of the use case as plain text, with the status
// pages give it.
func answer(c echo.Context, err error) error {
	status, msg := web.StatusOf(err)
	var v chat.ValidationError
	if errors.As(err, &v) {
		status = http.StatusBadRequest
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + v[k]
		}
		msg = strings.Join(parts, " ")
	}
	if status >= 500 {
		return err
	}
	return c.String(status, msg+"\n")
}
