package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
)

// StatusClientClosed marks requests the client abandoned (nginx's 499);
// they are neither answered nor logged as errors.
const StatusClientClosed = 499

// StatusOf maps an error to the HTTP status and the sentence a person sees.
func StatusOf(err error) (int, string) {
	var he *echo.HTTPError
	switch {
	case errors.Is(err, context.Canceled):
		return StatusClientClosed, "The request was cancelled."
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" || he.Code >= 500 {
			msg = http.StatusText(he.Code)
		}
		return he.Code, msg
	case errors.Is(err, chat.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "The database is not reachable right now. Please try again in a moment."
	case errors.Is(err, chat.ErrNotFound):
		return http.StatusNotFound, "There is nothing here. It may have been deleted."
	case errors.Is(err, chat.ErrUserExists):
		return http.StatusConflict, "This login is taken."
	case errors.Is(err, chat.ErrRoomExists):
		return http.StatusConflict, "This room name is taken."
	case errors.Is(err, chat.ErrConflict):
		return http.StatusConflict, "Too many people changed this at once. Please try again."
	case errors.Is(err, chat.ErrNotCreator):
		return http.StatusForbidden, "Only the creator of a room can do that."
	case errors.Is(err, chat.ErrNotAuthor):
		return http.StatusForbidden, "Only the author of a message can change it."
	case errors.Is(err, chat.ErrNotAdmin):
		return http.StatusForbidden, "Only an admin of the room can do that."
	case errors.Is(err, chat.ErrHandOver):
		return http.StatusConflict, "You created this room: make another member an admin before you leave, and they become its creator."
	case errors.Is(err, chat.ErrNotParticipant):
		return http.StatusForbidden, "Join the room first."
	case errors.Is(err, chat.ErrBadCredentials):
		return http.StatusUnauthorized, "Wrong login or password."
	case errors.Is(err, chat.ErrDeactivated):
		return http.StatusForbidden, "This account is deactivated. Ask an administrator of the site to reactivate it."
	case errors.Is(err, chat.ErrDMClosed):
		return http.StatusForbidden, "This conversation takes no new messages: an account in it is deactivated or deleted."
	case errors.Is(err, chat.ErrLastAdmin):
		return http.StatusConflict, "The site needs at least one administrator: make someone else an administrator first."
	case errors.Is(err, chat.ErrLinkRefused):
		return http.StatusNotFound, "This link does not work: it was used, it expired, or it never existed. Ask an administrator for a new one."
	case errors.Is(err, chat.ErrSignupClosed):
		return http.StatusForbidden, "Sign-up on this site is by invitation only: open the invitation link you were given."
	case errors.Is(err, chat.ErrRoomsByAdmins):
		return http.StatusForbidden, "On this site, only administrators create rooms."
	case errors.Is(err, chat.ErrInvalid):
		return http.StatusBadRequest, "The request was not valid."
	}
	return http.StatusInternalServerError, "Something went wrong on our side. It has been logged."
}

// TitleOf is the heading of err's error page: ErrorTitle of its status,
// unless err says more than its status does (a creator's leave refused is
// a 409, but nothing was "already taken").
func TitleOf(err error, status int) string {
	if errors.Is(err, chat.ErrHandOver) {
		return "You cannot leave yet"
	}
	return ErrorTitle(status)
}

// ErrorTitle is the heading of an error page: what happened, in words.
func ErrorTitle(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "This link or form is broken"
	case http.StatusUnauthorized:
		return "Please log in"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusConflict:
		return "Already taken"
	case http.StatusRequestEntityTooLarge:
		return "Too large"
	case http.StatusTooManyRequests:
		return "Too many tries"
	case http.StatusServiceUnavailable:
		return "KillrChat is unavailable"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return http.StatusText(status)
}
