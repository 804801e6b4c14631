// This file owns users: sign-up by LWT, password checks, profiles and the
// "my rooms" list kept on the user's row.

package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
	"golang.org/x/crypto/bcrypt"
)

// The login column is the key: the lower-case form of the login (see
// NameKey); display_login is the form the person typed at sign-up. A room's
// entry in chat_rooms is its key, and chat_room_titles maps it to the
// room's display name, for the sidebar; both change in one statement.
const (
	insertUser = `INSERT INTO users (login, display_login, pass, firstname, lastname, email, bio, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectUser = `SELECT login, display_login, pass, firstname, lastname, email, bio, chat_rooms, chat_room_titles, created_at, status,
		email_verified, email_notify, email_hide_text, kind FROM users WHERE login = ?`
	selectUserPass   = `SELECT pass FROM users WHERE login = ?`
	updateProfile    = `UPDATE users SET email = ?, bio = ? WHERE login = ?`
	updatePassword   = `UPDATE users SET pass = ? WHERE login = ?`
	addUserRoom      = `UPDATE users SET chat_rooms = chat_rooms + ?, chat_room_titles = chat_room_titles + ? WHERE login = ?`
	removeUserRoom   = `UPDATE users SET chat_rooms = chat_rooms - ?, chat_room_titles = chat_room_titles - ? WHERE login = ?`
	selectUserExists = `SELECT login FROM users WHERE login = ?`
)

// PasswordCost is the bcrypt cost of new password hashes.
var PasswordCost = 10

// dummyHash is compared against when a login does not exist, so that a
// wrong login takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a real password"), PasswordCost)

// CreateUser creates an account by INSERT ... IF NOT EXISTS under the
// login's lower-case key, keeping the typed form for display. It returns a
// chat.ValidationError for bad input and chat.ErrUserExists if the login is taken in
// any case ("Alice" when "alice" exists); an existing account is never
// overwritten.
func (s *Store) CreateUser(ctx context.Context, f chat.SignUp) (chat.User, error) {
	if err := f.Validate(); err != nil {
		return chat.User{}, err
	}
	key := chat.NameKey(f.Login)
	hash, err := hashPassword(ctx, f.Password)
	if err != nil {
		return chat.User{}, err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	applied, err := s.lwt(ctx, "create user "+key, insertUser,
		[]any{key, f.Login, hash, f.Firstname, f.Lastname, f.Email, f.Bio, now}, nil,
		func(ctx context.Context) (bool, error) {
			// Our insert applied iff the row now holds our hash.
			q, err := s.serialRead(ctx, selectUserPass, key)
			if err != nil {
				return false, err
			}
			var pass string
			if err := q.Scan(&pass); err != nil {
				if errors.Is(err, gocql.ErrNotFound) {
					return false, fmt.Errorf("store: insert of %q timed out and left no row", key)
				}
				return false, err
			}
			return pass == hash, nil
		})
	if err != nil {
		return chat.User{}, err
	}
	if !applied {
		return chat.User{}, fmt.Errorf("store: create user %q: %w", f.Login, chat.ErrUserExists)
	}
	if err := s.indexPerson(ctx, key, f.Firstname, f.Lastname, f.Email); err != nil {
		// The account exists: only the administrators' search misses it.
		s.log.Warn("store: index person", "login", key, "err", err)
	}
	return chat.User{Login: key, DisplayLogin: f.Login, Firstname: f.Firstname, Lastname: f.Lastname,
		Email: f.Email, Bio: f.Bio, CreatedAt: now}, nil
}

// User returns the account with this login, in any case, or chat.ErrNotFound.
func (s *Store) User(ctx context.Context, login string) (chat.User, error) {
	u, _, err := s.userWithHash(ctx, login)
	return u, err
}

func (s *Store) userWithHash(ctx context.Context, login string) (chat.User, string, error) {
	if !chat.ValidName(login) {
		return chat.User{}, "", fmt.Errorf("store: user %q: %w", login, chat.ErrNotFound)
	}
	login = chat.NameKey(login)
	q, err := s.query(ctx, selectUser, login)
	if err != nil {
		return chat.User{}, "", err
	}
	var (
		u      chat.User
		hash   string
		notify string
	)
	err = q.Scan(&u.Login, &u.DisplayLogin, &hash, &u.Firstname, &u.Lastname, &u.Email, &u.Bio, &u.ChatRooms, &u.RoomTitles, &u.CreatedAt, &u.Status,
		&u.Mail.Verified, &notify, &u.Mail.HideText, &u.Kind)
	u.Mail.Notify = chat.EmailNotify(notify)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.User{}, "", fmt.Errorf("store: user %q: %w", login, chat.ErrNotFound)
	}
	if err != nil {
		return chat.User{}, "", s.fail("read user "+login, err)
	}
	if u.DisplayLogin == "" { // a row from before display_login existed
		u.DisplayLogin = u.Login
	}
	sort.Strings(u.ChatRooms)
	return u, hash, nil
}

// Authenticate returns the user if the password matches (the login in any
// case: "ALICE" logs in as alice), and
// chat.ErrBadCredentials if the login is unknown or the password wrong; both
// cases cost one bcrypt comparison, so they take about the same time.
func (s *Store) Authenticate(ctx context.Context, login, password string) (chat.User, error) {
	u, hash, err := s.userWithHash(ctx, strings.TrimSpace(login))
	if err != nil && !errors.Is(err, chat.ErrNotFound) {
		return chat.User{}, err
	}
	ok, perr := passwordMatches(ctx, hash, password) // hash is "" for an unknown login
	if perr != nil {
		return chat.User{}, perr
	}
	if !ok {
		return chat.User{}, fmt.Errorf("store: authenticate %q: %w", login, chat.ErrBadCredentials)
	}
	return u, nil
}

// UpdateProfile changes the email and bio of login (names are fixed after
// sign-up because they are denormalised into rooms and messages). It returns
// a chat.ValidationError for bad input.
func (s *Store) UpdateProfile(ctx context.Context, login, email, bio string) error {
	v := chat.ValidationError{}
	chat.CheckProfile(v, &email, &bio)
	if err := v.Err(); err != nil {
		return err
	}
	login = chat.NameKey(login)
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
// a chat.ValidationError if the old password is wrong or the new one is bad.
func (s *Store) ChangePassword(ctx context.Context, login, old, password, confirm string) error {
	if _, err := s.Authenticate(ctx, login, old); err != nil {
		if errors.Is(err, chat.ErrBadCredentials) {
			return chat.ValidationError{"old_password": "This is not your current password."}
		}
		return err
	}
	v := chat.ValidationError{}
	chat.CheckPassword(v, password, confirm)
	if err := v.Err(); err != nil {
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
