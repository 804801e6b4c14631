// This file owns the users of the domain: people as messages carry them
// (UserRef), their profile (User), names and the sign-up form.

package chat

import (
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// UserRef is a person as denormalised into rooms and messages (the CQL
// type user_ref).
type UserRef struct {
	Login     string `cql:"login"`
	Firstname string `cql:"firstname"`
	Lastname  string `cql:"lastname"`
}

// Name is the person's display name.
func (u UserRef) Name() string {
	return strings.TrimSpace(u.Firstname + " " + u.Lastname)
}

// User is an account.
type User struct {
	// Login is the key: lower-case, in sessions, URLs, participants and
	// every stored reference to the user.
	Login string
	// DisplayLogin is the login as typed at sign-up ("Alice" for "alice").
	DisplayLogin string
	Firstname    string
	Lastname     string
	Email        string
	Bio          string
	// ChatRooms are the names (keys) of the rooms the user takes part in,
	// sorted.
	ChatRooms []string
	// RoomTitles maps a name of ChatRooms to the room's display name.
	RoomTitles map[string]string
	CreatedAt  time.Time
	// Status is AccountActive (""), AccountDeactivated or AccountDeleted.
	Status string
	// Kind is KindPerson ("") or KindBot.
	Kind string
	// Mail are their email settings.
	Mail EmailSettings
}

// RoomTitle is the display name of room, one of u.ChatRooms.
func (u User) RoomTitle(room string) string {
	if t := u.RoomTitles[room]; t != "" {
		return t
	}
	return room
}

// Ref is the user as denormalised elsewhere.
func (u User) Ref() UserRef {
	return UserRef{Login: u.Login, Firstname: u.Firstname, Lastname: u.Lastname}
}

// Name is the person's display name.
func (u User) Name() string { return u.Ref().Name() }

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{2,30}$`)

// ValidName reports whether s is a valid login or room name, in any case.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// nameProblem is the sentence for a login or room name that is not valid.
const kindProblem = "Choose open or closed."

const nameProblem = "3 to 31 letters, digits, '_', '.' or '-', starting with a letter or digit."

// SignUp is the sign-up form.
type SignUp struct {
	Login, Password, PasswordConfirm string
	Firstname, Lastname              string
	Email, Bio                       string
}

// Validate returns a ValidationError naming each bad field, or nil.
// It cleans the text fields in place (see cleanText); the login keeps the
// case it was typed in, and is stored under NameKey(Login).
func (f *SignUp) Validate() error {
	f.Login = strings.TrimSpace(f.Login)
	v := ValidationError{}
	if !ValidName(f.Login) {
		v["login"] = nameProblem
	}
	CheckPassword(v, f.Password, f.PasswordConfirm)
	checkField(v, "firstname", &f.Firstname, nameRule)
	checkField(v, "lastname", &f.Lastname, nameRule)
	CheckProfile(v, &f.Email, &f.Bio)
	return v.Err()
}

// CheckPassword records in v what is wrong with a new password (8 characters
// to 72 bytes, the bcrypt limit) and its confirmation.
func CheckPassword(v ValidationError, password, confirm string) {
	switch {
	case utf8.RuneCountInString(password) < 8:
		v["password"] = "At least 8 characters."
	case len(password) > 72:
		v["password"] = "At most 72 bytes."
	case password != confirm:
		v["password_confirm"] = "The two passwords differ."
	}
}

// CheckProfile cleans the e-mail address and bio in place, or records
// why they are refused.
func CheckProfile(v ValidationError, email, bio *string) {
	*email = strings.TrimSpace(*email)
	if *email != "" && !validEmail(*email) {
		v["email"] = "Not an e-mail address (one plain address such as ada@example.com, without '?', '&' or spaces)."
	}
	checkField(v, "bio", bio, bioRule)
}

// validEmail reports whether s is one bare address that net/mail accepts
// as it is. It also refuses '?', '&' and any space or control character,
// which net/mail allows in a local part but which would add headers or
// recipients to the mailto: link the profile shows.
func validEmail(s string) bool {
	if len(s) > 254 || !utf8.ValidString(s) || strings.ContainsAny(s, "?&") ||
		strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}
