// This file owns bots (schema/020_bots.cql): creating a bot's account
// by LWT like a sign-up but with no password, the site's list of bots,
// and their API tokens, given once and stored only as their sha256.

package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertBotUser = `INSERT INTO users (login, display_login, firstname, lastname, kind, created_at)
		VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectBotUserCreated = `SELECT kind, created_at FROM users WHERE login = ?`
	insertBot            = `INSERT INTO bots (part, login, created_by, created_at, hook_room) VALUES (?, ?, ?, ?, ?)`
	updateBotToken       = `UPDATE bots SET token_hash = ?, token_at = ? WHERE part = ? AND login = ?`
	selectBot            = `SELECT login, created_by, created_at, token_hash, token_at, hook_room, endpoint FROM bots WHERE part = ? AND login = ?`
	selectBots           = `SELECT login, created_by, created_at, token_hash, token_at, hook_room, endpoint FROM bots WHERE part = ?`
	insertBotToken       = `INSERT INTO bot_tokens (token_hash, login) VALUES (?, ?)`
	deleteBotToken       = `DELETE FROM bot_tokens WHERE token_hash = ?`
	selectBotToken       = `SELECT login FROM bot_tokens WHERE token_hash = ?`
	botsPart             = "bots"
)

// newBotToken is a bot's API token (256 random bits behind a prefix
// that tells what it is, as secret scanners look for) and its hash.
func newBotToken() (string, []byte, error) {
	random, _, err := newToken()
	if err != nil {
		return "", nil, err
	}
	token := chat.BotTokenPrefix + random
	return token, tokenHash(token), nil
}

// CreateBot creates the bot f describes, as actor, and returns it with
// its API token (the only time the token is known). A
// chat.ValidationError for a bad form; chat.ErrUserExists if the login
// is taken by anyone, in any case.
func (s *Store) CreateBot(ctx context.Context, actor string, f chat.NewBot) (chat.Bot, string, error) {
	if err := f.Validate(); err != nil {
		return chat.Bot{}, "", err
	}
	b, err := s.createBotAccount(ctx, actor, f, "")
	if err != nil {
		return chat.Bot{}, "", err
	}
	token, err := s.RotateBotToken(ctx, b.Login)
	if err != nil {
		return b, "", err
	}
	b.HasToken, b.TokenAt = true, s.Now().UTC()
	return b, token, nil
}

// createBotAccount writes a bot's account by LWT (chat.ErrUserExists
// if its login is taken) and lists it among the bots; hookRoom names
// the room of an incoming webhook's bot ("" for others). f is valid.
func (s *Store) createBotAccount(ctx context.Context, actor string, f chat.NewBot, hookRoom string) (chat.Bot, error) {
	key := chat.NameKey(f.Login)
	now := s.Now().UTC().Truncate(time.Millisecond)
	applied, err := s.lwt(ctx, "create bot "+key, insertBotUser,
		[]any{key, f.Login, f.Firstname, f.Lastname, chat.KindBot, now}, nil,
		func(ctx context.Context) (bool, error) {
			q, err := s.serialRead(ctx, selectBotUserCreated, key)
			if err != nil {
				return false, err
			}
			var (
				kind    string
				created time.Time
			)
			if err := q.Scan(&kind, &created); err != nil {
				if errors.Is(err, gocql.ErrNotFound) {
					return false, fmt.Errorf("store: insert of bot %q timed out and left no row", key)
				}
				return false, err
			}
			return kind == chat.KindBot && created.Equal(now), nil
		})
	if err != nil {
		return chat.Bot{}, err
	}
	if !applied {
		return chat.Bot{}, fmt.Errorf("store: create bot %q: %w", f.Login, chat.ErrUserExists)
	}
	var room any
	if hookRoom != "" {
		room = hookRoom
	}
	if err := s.exec(ctx, "list bot "+key, insertBot, botsPart, key, actor, now, room); err != nil {
		return chat.Bot{}, err
	}
	if err := s.indexPerson(ctx, key, f.Firstname, f.Lastname, ""); err != nil {
		s.log.Warn("store: index bot", "login", key, "err", err)
	}
	return chat.Bot{Login: key, Firstname: f.Firstname, Lastname: f.Lastname, CreatedBy: actor, CreatedAt: now, HookRoom: hookRoom}, nil
}

// Bot is the bot login; chat.ErrNotFound if login is no bot.
func (s *Store) Bot(ctx context.Context, login string) (chat.Bot, error) {
	if !chat.ValidName(login) {
		return chat.Bot{}, fmt.Errorf("store: bot %q: %w", login, chat.ErrNotFound)
	}
	q, err := s.query(ctx, selectBot, botsPart, chat.NameKey(login))
	if err != nil {
		return chat.Bot{}, err
	}
	var (
		b    chat.Bot
		hash []byte
	)
	err = q.Scan(&b.Login, &b.CreatedBy, &b.CreatedAt, &hash, &b.TokenAt, &b.HookRoom, &b.Endpoint)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.Bot{}, fmt.Errorf("store: bot %q: %w", login, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Bot{}, s.fail("read bot "+login, err)
	}
	b.HasToken = len(hash) > 0
	return b, s.botNames(ctx, &b)
}

func (s *Store) botNames(ctx context.Context, b *chat.Bot) error {
	u, err := s.User(ctx, b.Login)
	if err != nil {
		return err
	}
	b.Firstname, b.Lastname = u.Firstname, u.Lastname
	return nil
}

// Bots are the site's bots by login, with their names.
func (s *Store) Bots(ctx context.Context) ([]chat.Bot, error) {
	q, err := s.query(ctx, selectBots, botsPart)
	if err != nil {
		return nil, err
	}
	var (
		out  []chat.Bot
		b    chat.Bot
		hash []byte
	)
	iter := q.Iter()
	for iter.Scan(&b.Login, &b.CreatedBy, &b.CreatedAt, &hash, &b.TokenAt, &b.HookRoom, &b.Endpoint) {
		b.HasToken = len(hash) > 0
		out = append(out, b)
		b, hash = chat.Bot{}, nil
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read bots", err)
	}
	for i := range out {
		if err := s.botNames(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BotLogins are the logins of the site's bots, for their marks: one
// read of one small partition.
func (s *Store) BotLogins(ctx context.Context) (map[string]bool, error) {
	q, err := s.query(ctx, `SELECT login FROM bots WHERE part = ?`, botsPart)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var login string
	iter := q.Iter()
	for iter.Scan(&login) {
		out[login] = true
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read bot logins", err)
	}
	return out, nil
}

// RotateBotToken gives the bot login a new API token and returns it
// (the only time it is known); the old one stops working.
// chat.ErrNotFound if login is no bot.
func (s *Store) RotateBotToken(ctx context.Context, login string) (string, error) {
	old, err := s.botTokenHash(ctx, login)
	if err != nil {
		return "", err
	}
	token, hash, err := newBotToken()
	if err != nil {
		return "", err
	}
	key := chat.NameKey(login)
	if err := s.exec(ctx, "insert bot token", insertBotToken, hash, key); err != nil {
		return "", err
	}
	if err := s.exec(ctx, "set bot token", updateBotToken, hash, s.Now().UTC(), botsPart, key); err != nil {
		return "", err
	}
	if len(old) > 0 {
		if err := s.exec(ctx, "delete old bot token", deleteBotToken, old); err != nil {
			return "", err
		}
	}
	return token, nil
}

// RevokeBotToken takes the bot login's API token away: it stops
// working, and no new one exists until a rotation. chat.ErrNotFound if
// login is no bot.
func (s *Store) RevokeBotToken(ctx context.Context, login string) error {
	old, err := s.botTokenHash(ctx, login)
	if err != nil {
		return err
	}
	if err := s.exec(ctx, "clear bot token", updateBotToken, nil, nil, botsPart, chat.NameKey(login)); err != nil {
		return err
	}
	if len(old) > 0 {
		return s.exec(ctx, "delete bot token", deleteBotToken, old)
	}
	return nil
}

func (s *Store) botTokenHash(ctx context.Context, login string) ([]byte, error) {
	if !chat.ValidName(login) {
		return nil, fmt.Errorf("store: bot %q: %w", login, chat.ErrNotFound)
	}
	q, err := s.query(ctx, `SELECT token_hash FROM bots WHERE part = ? AND login = ?`, botsPart, chat.NameKey(login))
	if err != nil {
		return nil, err
	}
	var hash []byte
	if err := q.Scan(&hash); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return nil, fmt.Errorf("store: bot %q: %w", login, chat.ErrNotFound)
		}
		return nil, s.fail("read bot token", err)
	}
	return hash, nil
}

// BotByToken is the login of the bot whose API token this is;
// chat.ErrNotFound for a malformed, unknown, rotated or revoked token.
func (s *Store) BotByToken(ctx context.Context, token string) (string, error) {
	if !chat.WellFormedBotToken(token) {
		return "", fmt.Errorf("store: bot token: %w", chat.ErrNotFound)
	}
	q, err := s.query(ctx, selectBotToken, tokenHash(token))
	if err != nil {
		return "", err
	}
	var login string
	if err := q.Scan(&login); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return "", fmt.Errorf("store: bot token: %w", chat.ErrNotFound)
		}
		return "", s.fail("read bot token", err)
	}
	return login, nil
}

// sameHash compares two hashes in constant time.
func sameHash(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
