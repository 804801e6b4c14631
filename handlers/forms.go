// This file owns the forms every page shares: a form read from the
// request, and a store error shown on it.

package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

// FormOf reads fields of the request into a form.
func FormOf(c echo.Context, fields ...string) views.Form {
	f := views.Form{Values: map[string]string{}, Errors: map[string]string{}}
	for _, name := range fields {
		f.Values[name] = c.FormValue(name)
	}
	return f
}

// WithErrors adds a store error to the form: field errors for a
// ValidationError, a form-level sentence otherwise.
func WithErrors(f views.Form, err error) views.Form {
	var v chat.ValidationError
	if errors.As(err, &v) {
		for field, msg := range v {
			f.Errors[field] = msg
		}
		f.Error = "Please correct the fields marked below."
		return f
	}
	_, f.Error = web.StatusOf(err)
	return f
}

// FormStatus is the status of a form re-rendered for err.
func FormStatus(err error) int {
	if errors.Is(err, chat.ErrInvalid) {
		return http.StatusUnprocessableEntity
	}
	code, _ := web.StatusOf(err)
	return code
}

// FormError decides whether err is about the form (re-render it with the
// message) or not (let the error handler show its page).
func FormError(err error) bool {
	code := FormStatus(err)
	return code == http.StatusUnprocessableEntity || code == http.StatusConflict || code == http.StatusUnauthorized
}
