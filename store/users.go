// This file owns users: sign-up by LWT, password checks, profiles and the
// "my rooms" list kept on the user's row.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"golang.org/x/crypto/bcrypt"
)

const (
	insertUser = `INSERT INTO users (login, pass, firstname, lastname, email, bio, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectUser = `SELECT login, pass, firstname, lastname, email, bio, chat_rooms, created_at
		FROM users WHERE login = ?`
	selectUserPass   = `SELECT pass FROM users WHERE login = ?`
	updateProfile    = `UPDATE users SET email = ?, bio = ? WHERE login = ?`
	updatePassword   = `UPDATE users SET pass = ? WHERE login = ?`
	addUserRoom      = `UPDATE users SET chat_rooms = chat_rooms + ? WHERE login = ?`
	removeUserRoom   = `UPDATE users SET chat_rooms = chat_rooms - ? WHERE login = ?`
	selectUserExists = `SELECT login FROM users WHERE login = ?`
)

// PasswordCost is the bcrypt cost of new password hashes.
var PasswordCost = 10

// dummyHash is compared against when a login does not exist, so that a
// wrong login takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a real password"), PasswordCost)

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
	Login     string
	Firstname string
	Lastname  string
	Email     string
	Bio       string
	// ChatRooms are the names of the rooms the user takes part in, sorted.
	ChatRooms []string
	CreatedAt time.Time
}

// Ref is the user as denormalised elsewhere.
func (u User) Ref() UserRef {
	return UserRef{Login: u.Login, Firstname: u.Firstname, Lastname: u.Lastname}
}

// Name is the person's display name.
func (u User) Name() string { return u.Ref().Name() }

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{2,30}$`)

// ValidName reports whether s is a valid login or room name.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// SignUp is the sign-up form.
type SignUp struct {
	Login, Password, PasswordConfirm string
	Firstname, Lastname              string
	Email, Bio                       string
}

// Validate returns a ValidationError naming each bad field, or nil.
// It trims the text fields in place.
func (f *SignUp) Validate() error {
	f.Login = strings.TrimSpace(f.Login)
	f.Firstname = strings.TrimSpace(f.Firstname)
	f.Lastname = strings.TrimSpace(f.Lastname)
	f.Email = strings.TrimSpace(f.Email)
	f.Bio = strings.TrimSpace(f.Bio)
	v := ValidationError{}
	if !ValidName(f.Login) {
		v["login"] = "3 to 31 letters, digits, '_', '.' or '-', starting with a letter or digit."
	}
	checkPassword(v, f.Password, f.PasswordConfirm)
	checkText(v, "firstname", f.Firstname, 1, 50)
	checkText(v, "lastname", f.Lastname, 1, 50)
	checkProfile(v, f.Email, f.Bio)
	return v.orNil()
}

func checkPassword(v ValidationError, password, confirm string) {
	switch {
	case utf8.RuneCountInString(password) < 8:
		v["password"] = "At least 8 characters."
	case len(password) > 72:
		v["password"] = "At most 72 bytes."
	case password != confirm:
		v["password_confirm"] = "The two passwords differ."
	}
}

func checkText(v ValidationError, field, s string, lo, hi int) {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		v[field] = "Not valid text."
	case n < lo && lo == 1:
		v[field] = "Required."
	case n < lo || n > hi:
		v[field] = fmt.Sprintf("Between %d and %d characters.", lo, hi)
	}
}

func checkProfile(v ValidationError, email, bio string) {
	if email != "" {
		if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
			v["email"] = "Not an email address."
		}
	}
	if utf8.RuneCountInString(bio) > 500 || !utf8.ValidString(bio) {
		v["bio"] = "At most 500 characters."
	}
}

// CreateUser creates an account by INSERT ... IF NOT EXISTS. It returns a
// ValidationError for bad input and ErrUserExists if the login is taken;
// an existing account is never overwritten.
func (s *Store) CreateUser(ctx context.Context, f SignUp) (User, error) {
	if err := f.Validate(); err != nil {
		return User{}, err
	}
	hash, err := hashPassword(ctx, f.Password)
	if err != nil {
		return User{}, err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	applied, err := s.lwt(ctx, "create user "+f.Login, insertUser,
		[]any{f.Login, hash, f.Firstname, f.Lastname, f.Email, f.Bio, now}, nil,
		func(ctx context.Context) (bool, error) {
			// Our insert applied iff the row now holds our hash.
			q, err := s.serialRead(ctx, selectUserPass, f.Login)
			if err != nil {
				return false, err
			}
			var pass string
			if err := q.Scan(&pass); err != nil {
				if errors.Is(err, gocql.ErrNotFound) {
					return false, fmt.Errorf("store: insert of %q timed out and left no row", f.Login)
				}
				return false, err
			}
			return pass == hash, nil
		})
	if err != nil {
		return User{}, err
	}
	if !applied {
		return User{}, fmt.Errorf("store: create user %q: %w", f.Login, ErrUserExists)
	}
	return User{Login: f.Login, Firstname: f.Firstname, Lastname: f.Lastname, Email: f.Email, Bio: f.Bio, CreatedAt: now}, nil
}

// User returns the account with this login, or ErrNotFound.
func (s *Store) User(ctx context.Context, login string) (User, error) {
	u, _, err := s.userWithHash(ctx, login)
	return u, err
}

func (s *Store) userWithHash(ctx context.Context, login string) (User, string, error) {
	if !ValidName(login) {
		return User{}, "", fmt.Errorf("store: user %q: %w", login, ErrNotFound)
	}
	q, err := s.query(ctx, selectUser, login)
	if err != nil {
		return User{}, "", err
	}
	var (
		u    User
		hash string
	)
	err = q.Scan(&u.Login, &hash, &u.Firstname, &u.Lastname, &u.Email, &u.Bio, &u.ChatRooms, &u.CreatedAt)
	if errors.Is(err, gocql.ErrNotFound) {
		return User{}, "", fmt.Errorf("store: user %q: %w", login, ErrNotFound)
	}
	if err != nil {
		return User{}, "", s.fail("read user "+login, err)
	}
	sort.Strings(u.ChatRooms)
	return u, hash, nil
}

// Authenticate returns the user if the password matches, and
// ErrBadCredentials if the login is unknown or the password wrong; both
// cases cost one bcrypt comparison, so they take about the same time.
func (s *Store) Authenticate(ctx context.Context, login, password string) (User, error) {
	u, hash, err := s.userWithHash(ctx, strings.TrimSpace(login))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, err
	}
	ok, perr := passwordMatches(ctx, hash, password) // hash is "" for an unknown login
	if perr != nil {
		return User{}, perr
	}
	if !ok {
		return User{}, fmt.Errorf("store: authenticate %q: %w", login, ErrBadCredentials)
	}
	return u, nil
}

// UpdateProfile changes the email and bio of login (names are fixed after
// sign-up because they are denormalised into rooms and messages). It returns
// a ValidationError for bad input.
func (s *Store) UpdateProfile(ctx context.Context, login, email, bio string) error {
	email, bio = strings.TrimSpace(email), strings.TrimSpace(bio)
	v := ValidationError{}
	checkProfile(v, email, bio)
	if err := v.orNil(); err != nil {
		return err
	}
	q, err := s.query(ctx, updateProfile, email, bio, login)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("update profile "+login, err)
	}
	return nil
}

// ChangePassword sets a new password after checking the old one. It returns
// a ValidationError if the old password is wrong or the new one is bad.
func (s *Store) ChangePassword(ctx context.Context, login, old, password, confirm string) error {
	if _, err := s.Authenticate(ctx, login, old); err != nil {
		if errors.Is(err, ErrBadCredentials) {
			return ValidationError{"old_password": "This is not your current password."}
		}
		return err
	}
	v := ValidationError{}
	checkPassword(v, password, confirm)
	if err := v.orNil(); err != nil {
		return err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return err
	}
	q, err := s.query(ctx, updatePassword, hash, login)
	if err != nil {
		return err
	}
	if err := q.Exec(); err != nil {
		return s.fail("change password "+login, err)
	}
	return nil
}
