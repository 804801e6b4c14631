// This file owns a bot's upload: one file, streamed in as a multipart
// body, posted as the bot's message by the use case a person's composer
// calls, under the same checks (handlers.Server.OpenUpload).

package botapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/web"
)

// upload posts a file as the bot's message: a multipart/form-data body
// of an optional text (and its format) then one file, its last part,
// as `curl -F text=… -F file=@report.pdf` sends it. 201 with the
// message; the file's refusals are a person's (413 past the limit, 429
// past the byte budget, 408 too slow), and store nothing.
func (m *module) upload(c echo.Context) error {
	cv, ok, err := m.conversation(c)
	if !ok {
		return err
	}
	if !web.IsMultipart(c.Request()) {
		return jsonError(c, http.StatusUnsupportedMediaType,
			`Send the file as multipart/form-data, in a part named "file" (curl -F file=@report.pdf).`)
	}
	b := botOf(c)
	up, err := m.core.OpenUpload(c, b.Login)
	if err != nil {
		return m.fail(c, err)
	}
	defer up.Close()
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return jsonError(c, http.StatusBadRequest, "The body is not a multipart form.")
	}
	var text, format string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return jsonError(c, http.StatusBadRequest, `The form has no file: send it in a part named "file", after the text.`)
		}
		if err != nil {
			return m.fail(c, m.core.UploadError(partError(up, err)))
		}
		switch name := part.FormName(); {
		case name == "text" || name == "format":
			v, err := web.ReadField(part, 4*chat.MaxContent+1024)
			if err != nil {
				return m.fail(c, m.core.UploadError(err))
			}
			if name == "text" {
				text = v
			} else {
				format = v
			}
		case name == "file" && part.FileName() != "":
			caption, err := formatted(text, format)
			if err != nil {
				return jsonError(c, http.StatusBadRequest, err.Error())
			}
			if _, err := chat.CheckCaption(caption); err != nil {
				return m.fail(c, err)
			}
			msg, _, err := m.app.PostFile(c.Request().Context(), service.FilePost{In: cv.Place, Uploader: b.Ref(),
				Name: part.FileName(), Body: up.File(part), Limit: m.maxUpload, Text: caption})
			var notStored *service.StoreError
			if errors.As(err, &notStored) {
				return m.fail(c, m.core.UploadError(notStored.Err))
			}
			if err != nil {
				return m.fail(c, err)
			}
			if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
				return jsonError(c, http.StatusBadRequest, fmt.Sprintf(
					"Send one file a request, as the form's last part: the file was posted as message %s, and nothing after it was read.", msg.ID))
			}
			c.Response().Header().Set(echo.HeaderLocation, "/api/v1/conversations/"+url.PathEscape(cv.ID)+"/messages?after="+msg.ID.String())
			return c.JSON(http.StatusCreated, toJSON(msg))
		default:
			return jsonError(c, http.StatusBadRequest, fmt.Sprintf(`The form has a part %q: it takes "text", "format" and "file", in that order.`, name))
		}
	}
}

// partError is a fault of the multipart stream: the connection's, or
// bytes that are not a form.
func partError(up *handlers.Upload, err error) error {
	if up.Body.Err == nil {
		return fmt.Errorf("%w: %w", handlers.ErrMalformedUpload, err)
	}
	return err
}

// formatted is a text in its format, as readText takes it.
func formatted(text, format string) (string, error) {
	switch format {
	case "", "markdown":
		return text, nil
	case "plain":
		return chat.EscapeMarkdown(text), nil
	}
	return "", errors.New(`format is "markdown" or "plain".`)
}
