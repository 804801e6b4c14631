// This file lists the API's routes and answers the reads: who the bot
// is, its conversations, and a conversation's messages newest first.

package botapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live/fence"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/web/limit"
)

// UseCases are the use cases the API calls (service.Service).
type UseCases interface {
	Tokens
	PostText(ctx context.Context, p service.TextPost) (chat.Message, []byte, error)
	EditMessage(ctx context.Context, in chat.Place, m chat.Message, editor, content string) (chat.Message, error)
	DeleteMessage(ctx context.Context, in chat.Place, m chat.Message, by string) error
	React(ctx context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool) error
	EnterRoom(room string) *fence.Pass
	PostFile(ctx context.Context, f service.FilePost) (chat.Message, bool, error)
}

// Core is what the API uses of the HTTP core (handlers.Server): the
// conversation an id names for a login, and the checks and answers of
// an upload, a person's and a bot's alike.
type Core interface {
	ConversationByID(ctx context.Context, login, id string) (handlers.Conversation, error)
	OpenUpload(c echo.Context, login string) (*handlers.Upload, error)
	UploadError(err error) error
}

// Deps are what the API is built from.
type Deps struct {
	App  UseCases
	Core Core
	// MaxUpload bounds an uploaded file's bytes (Config.MaxUpload).
	MaxUpload int64
	Store     StoreReads
	Watcher   Watcher
	Rate      limit.Rate
	Log       *slog.Logger
}

// StoreReads are the reads of the store the API makes (store.Store).
type StoreReads interface {
	MessagesBefore(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error)
	MessagesAfter(ctx context.Context, in chat.Place, after chat.ID, limit int) ([]chat.Message, bool, error)
	Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error)
	DMList(ctx context.Context, login string) ([]chat.DMEntry, error)
	User(ctx context.Context, login string) (chat.User, error)
}

type module struct {
	app       UseCases
	core      Core
	maxUpload int64
	store     StoreReads
	tokens    *tokenCache
	rates     *botRates
	log       *slog.Logger
}

const (
	// PageSize is a page's default length; MaxPage its longest.
	PageSize = 50
	MaxPage  = 100
)

// Register lists the API's routes under /api/v1.
func Register(r handlers.Routes, d Deps) {
	m := &module{app: d.App, core: d.Core, maxUpload: d.MaxUpload, store: d.Store, tokens: newTokenCache(d.Watcher), rates: newBotRates(d.Rate), log: d.Log}
	g := r.Bare.Group("/api/v1", m.authenticate, m.limited)
	g.GET("/me", m.me)
	g.GET("/conversations", m.conversations)
	g.GET("/conversations/:conv/messages", m.messages)
	g.POST("/conversations/:conv/messages", m.post)
	g.POST(strings.TrimPrefix(handlers.BotUploadRoute, "/api/v1"), m.upload)
	g.PATCH("/conversations/:conv/messages/:id", m.edit)
	g.DELETE("/conversations/:conv/messages/:id", m.delete)
	g.PUT("/conversations/:conv/messages/:id/reactions/:emoji", m.react)
	g.DELETE("/conversations/:conv/messages/:id/reactions/:emoji", m.react)
}

// me is the bot the token is of.
func (m *module) me(c echo.Context) error {
	b := botOf(c)
	return c.JSON(http.StatusOK, map[string]string{"login": b.Login, "name": b.Name()})
}

// conversationJSON is a conversation as the API lists it.
type conversationJSON struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Title string `json:"title"`
	// Messages is the API's address of its messages; URL its page.
	Messages string `json:"messages"`
	URL      string `json:"url"`
}

func convJSON(c echo.Context, id, kind, title, page string) conversationJSON {
	return conversationJSON{ID: id, Kind: kind, Title: title, Messages: "/api/v1/conversations/" + url.PathEscape(id) + "/messages",
		URL: c.Scheme() + "://" + c.Request().Host + page}
}

// conversations are the bot's rooms and DMs.
func (m *module) conversations(c echo.Context) error {
	ctx := c.Request().Context()
	b := botOf(c)
	u, err := m.store.User(ctx, b.Login)
	if err != nil {
		return m.fail(c, err)
	}
	out := []conversationJSON{}
	for _, room := range u.ChatRooms {
		out = append(out, convJSON(c, room, "room", u.RoomTitle(room), handlers.RoomURL(room)))
	}
	dms, err := m.store.DMList(ctx, b.Login)
	if err != nil {
		return m.fail(c, err)
	}
	for _, e := range dms {
		cv := e.DM.Conversation()
		out = append(out, convJSON(c, cv.ID, "dm", e.DM.Address, handlers.DMURL(e.DM.Address)))
	}
	return c.JSON(http.StatusOK, map[string]any{"conversations": out})
}

// conversation is the one the path names, if the bot is in it; a JSON
// 404 for any other, open rooms included.
func (m *module) conversation(c echo.Context) (handlers.Conversation, bool, error) {
	id, err := url.PathUnescape(c.Param("conv"))
	if err != nil {
		return handlers.Conversation{}, false, jsonError(c, http.StatusNotFound, "No conversation of this bot has this id.")
	}
	b := botOf(c)
	cv, err := m.core.ConversationByID(c.Request().Context(), b.Login, id)
	if err == nil && !cv.Place.Conversation().Has(b.Login) {
		err = chat.ErrNotFound
	}
	if err != nil {
		return handlers.Conversation{}, false, m.fail(c, err)
	}
	return cv, true, nil
}

// messageJSON is a message as the API gives it.
type messageJSON struct {
	ID           string         `json:"id"`
	Conversation string         `json:"conversation"`
	Author       authorJSON     `json:"author"`
	Text         string         `json:"text"`
	Time         time.Time      `json:"time"`
	System       bool           `json:"system,omitempty"`
	Edited       bool           `json:"edited,omitempty"`
	File         *fileJSON      `json:"file,omitempty"`
	Reactions    []reactionJSON `json:"reactions,omitempty"`
}

type authorJSON struct {
	Login string `json:"login"`
	Name  string `json:"name"`
}

type fileJSON struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

type reactionJSON struct {
	Emoji string `json:"emoji"`
	Login string `json:"login"`
}

func toJSON(msg chat.Message) messageJSON {
	out := messageJSON{ID: msg.ID.String(), Conversation: msg.Room, Author: authorJSON{Login: msg.Author.Login, Name: msg.Author.Name()},
		Text: msg.Content, Time: msg.Time().UTC(), System: msg.System, Edited: msg.Edited != chat.ID{}}
	if a := msg.Attachment; a != nil {
		out.File = &fileJSON{Name: a.Name, Size: a.Size}
	}
	for _, r := range msg.Reactions {
		out.Reactions = append(out.Reactions, reactionJSON{Emoji: r.Emoji, Login: r.Reactor.Login})
	}
	return out
}

// messages is a page of the conversation's messages, newest first:
// before a cursor (the newest page without one), or just after one;
// Link rel="next" names the page that follows in the same direction.
func (m *module) messages(c echo.Context) error {
	cv, ok, err := m.conversation(c)
	if !ok {
		return err
	}
	n := PageSize
	if s := c.QueryParam("limit"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > MaxPage {
			return jsonError(c, http.StatusBadRequest, fmt.Sprintf("limit is a number from 1 to %d.", MaxPage))
		}
	}
	before, after := c.QueryParam("before"), c.QueryParam("after")
	if before != "" && after != "" {
		return jsonError(c, http.StatusBadRequest, "Give before or after, not both.")
	}
	cursor := before + after
	var at chat.ID
	if cursor != "" {
		if at, err = chat.ParseMessageID(cursor); err != nil {
			return jsonError(c, http.StatusBadRequest, "The cursor is not a message id.")
		}
	}
	ctx := c.Request().Context()
	var (
		msgs []chat.Message
		more bool
	)
	if after != "" {
		msgs, more, err = m.store.MessagesAfter(ctx, cv.Place, at, n)
	} else {
		msgs, more, err = m.store.MessagesBefore(ctx, cv.Place, at, n)
	}
	if err != nil {
		return m.fail(c, err)
	}
	out := make([]messageJSON, len(msgs))
	for i, msg := range msgs {
		out[i] = toJSON(msg)
	}
	slices.Reverse(out) // oldest first as read: newest first as given
	if more && len(msgs) > 0 {
		base := "/api/v1/conversations/" + url.PathEscape(cv.ID) + "/messages?limit=" + strconv.Itoa(n)
		next := base + "&before=" + msgs[0].ID.String()
		if after != "" {
			next = base + "&after=" + msgs[len(msgs)-1].ID.String()
		}
		c.Response().Header().Set("Link", "<"+next+`>; rel="next"`)
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": out})
}
