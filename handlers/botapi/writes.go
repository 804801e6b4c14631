// This file owns what a bot writes: posts (Markdown, or plain text
// shown as it is), edits and deletes of its own messages, reactions.
// Each is the use case a person's form calls.

package botapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live/fence"
	"github.com/killrchat/killrchat/service"
)

// textBody is the body of a post or an edit.
type textBody struct {
	Text *string `json:"text"`
	// Format is "markdown" (the default) or "plain".
	Format string `json:"format"`
}

// readText reads a textBody strictly: JSON only, no unknown field, one
// value, a text. ok false when it answered the refusal.
func readText(c echo.Context) (string, bool, error) {
	mediaType, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || mediaType != echo.MIMEApplicationJSON {
		return "", false, jsonError(c, http.StatusUnsupportedMediaType, "Send the body as application/json.")
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	var b textBody
	if err := dec.Decode(&b); err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return "", false, jsonError(c, he.Code, "The body is too large.")
		}
		return "", false, jsonError(c, http.StatusBadRequest, "The body is not the JSON expected ({\"text\": …, \"format\": \"markdown\" or \"plain\"}): "+err.Error()+".")
	}
	if dec.More() {
		return "", false, jsonError(c, http.StatusBadRequest, "The body holds more than one JSON value.")
	}
	if b.Text == nil {
		return "", false, jsonError(c, http.StatusBadRequest, "The body has no text.")
	}
	text, err := formatted(*b.Text, b.Format)
	if err != nil {
		return "", false, jsonError(c, http.StatusBadRequest, err.Error())
	}
	return text, true, nil
}

// post posts the bot's message: 201 with the message.
func (m *module) post(c echo.Context) error {
	// A room post holds a pass on the room's gate from before its check
	// to the end of its writes, as a person's (live/fence).
	var pass *fence.Pass
	if id := c.Param("conv"); !chat.IsDM(id) && !strings.Contains(id, "%") {
		pass = m.app.EnterRoom(id)
		defer pass.Leave()
	}
	cv, ok, err := m.conversation(c)
	if !ok {
		return err
	}
	text, ok, err := readText(c)
	if !ok {
		return err
	}
	b := botOf(c)
	p := service.TextPost{In: cv.Place, Author: b.Ref(), Content: text, Pass: pass}
	msg, _, err := m.app.PostText(c.Request().Context(), p)
	if err != nil {
		return m.fail(c, err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/conversations/"+url.PathEscape(cv.ID)+"/messages?after="+msg.ID.String())
	return c.JSON(http.StatusCreated, toJSON(msg))
}

// message is the conversation's message the path names.
func (m *module) message(c echo.Context) (handlers.Conversation, chat.Message, bool, error) {
	cv, ok, err := m.conversation(c)
	if !ok {
		return cv, chat.Message{}, false, err
	}
	id, err := chat.ParseMessageID(c.Param("id"))
	if err != nil {
		return cv, chat.Message{}, false, jsonError(c, http.StatusNotFound, "No message has this id here.")
	}
	msg, err := m.store.Message(c.Request().Context(), cv.Place, id)
	if err != nil {
		return cv, chat.Message{}, false, m.fail(c, err)
	}
	return cv, msg, true, nil
}

// edit replaces the text of one of the bot's own messages.
func (m *module) edit(c echo.Context) error {
	cv, msg, ok, err := m.message(c)
	if !ok {
		return err
	}
	text, ok, err := readText(c)
	if !ok {
		return err
	}
	edited, err := m.app.EditMessage(c.Request().Context(), cv.Place, msg, botOf(c).Login, text)
	if err != nil {
		return m.fail(c, err)
	}
	return c.JSON(http.StatusOK, toJSON(edited))
}

// delete deletes one of the bot's own messages (or any, in a room it
// administers, as for a person).
func (m *module) delete(c echo.Context) error {
	cv, msg, ok, err := m.message(c)
	if !ok {
		return err
	}
	if err := m.app.DeleteMessage(c.Request().Context(), cv.Place, msg, botOf(c).Login); err != nil {
		return m.fail(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// react adds (PUT) or takes back (DELETE) the bot's reaction.
func (m *module) react(c echo.Context) error {
	cv, ok, err := m.conversation(c)
	if !ok {
		return err
	}
	id, err := chat.ParseMessageID(c.Param("id"))
	if err != nil {
		return jsonError(c, http.StatusNotFound, "No message has this id here.")
	}
	emoji, err := url.PathUnescape(c.Param("emoji"))
	if err != nil {
		return jsonError(c, http.StatusBadRequest, "The emoji is not a valid path segment.")
	}
	add := c.Request().Method == http.MethodPut
	if err := m.app.React(c.Request().Context(), cv.Place, id, botOf(c).Ref(), emoji, add); err != nil {
		return m.fail(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}
