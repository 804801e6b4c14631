package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web"
)

func TestStatusOf(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("store: something: %w", err) }
	for _, tc := range []struct {
		name   string
		err    error
		status int
		says   string // a part of the sentence
	}{
		{"Canceled", wrap(context.Canceled), web.StatusClientClosed, "cancelled"},
		{"DeadlineExceeded", wrap(context.DeadlineExceeded), http.StatusServiceUnavailable, "not reachable"},
		{"ErrUnavailable", wrap(chat.ErrUnavailable), http.StatusServiceUnavailable, "not reachable"},
		{"ErrNotFound", wrap(chat.ErrNotFound), http.StatusNotFound, "nothing here"},
		{"ErrUserExists", wrap(chat.ErrUserExists), http.StatusConflict, "login is taken"},
		{"ErrRoomExists", wrap(chat.ErrRoomExists), http.StatusConflict, "room name is taken"},
		{"ErrConflict", wrap(chat.ErrConflict), http.StatusConflict, "Too many people"},
		{"ErrNotCreator", wrap(chat.ErrNotCreator), http.StatusForbidden, "creator"},
		{"ErrNotAuthor", wrap(chat.ErrNotAuthor), http.StatusForbidden, "author"},
		{"ErrNotAdmin", wrap(chat.ErrNotAdmin), http.StatusForbidden, "admin"},
		{"ErrHandOver", wrap(chat.ErrHandOver), http.StatusConflict, "make another member an admin"},
		{"ErrNotParticipant", wrap(chat.ErrNotParticipant), http.StatusForbidden, "Join the room"},
		{"ErrBadCredentials", wrap(chat.ErrBadCredentials), http.StatusUnauthorized, "Wrong login or password"},
		{"ErrInvalid", wrap(chat.ErrInvalid), http.StatusBadRequest, "not valid"},
		{"HTTPError", echo.NewHTTPError(http.StatusTooManyRequests, "Slow down."), http.StatusTooManyRequests, "Slow down."},
		{"HTTPErrorWithoutSentence", echo.NewHTTPError(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed, "Method Not Allowed"},
		// A 5xx never shows its message, which may hold internals.
		{"HTTPError5xx", echo.NewHTTPError(http.StatusBadGateway, "upstream 10.0.0.3 said no"), http.StatusBadGateway, "Bad Gateway"},
		{"Unknown", fmt.Errorf("boom"), http.StatusInternalServerError, "Something went wrong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, msg := web.StatusOf(tc.err)
			if status != tc.status || !strings.Contains(msg, tc.says) {
				t.Fatalf("StatusOf = %d %q, want %d and %q", status, msg, tc.status, tc.says)
			}
		})
	}
}

func TestErrorTitle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusBadRequest, "This link or form is broken"},
		{http.StatusUnauthorized, "Please log in"},
		{http.StatusForbidden, "Not allowed"},
		{http.StatusNotFound, "Not found"},
		{http.StatusConflict, "Already taken"},
		{http.StatusRequestEntityTooLarge, "Too large"},
		{http.StatusTooManyRequests, "Too many tries"},
		{http.StatusServiceUnavailable, "KillrChat is unavailable"},
		{http.StatusInternalServerError, "Something went wrong"},
		{http.StatusBadGateway, "Something went wrong"},
		{http.StatusUnprocessableEntity, "Unprocessable Entity"},
	} {
		if got := web.ErrorTitle(tc.status); got != tc.want {
			t.Errorf("ErrorTitle(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
}
