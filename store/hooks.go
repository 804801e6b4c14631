// This file owns incoming webhooks (schema/020_bots.cql): a hook is a
// room's, posts as a bot account of its own, and is found by its id;
// its secret is given once and stored only as its sha256.

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertHook = `INSERT INTO incoming_hooks (id, room, name, login, secret_hash, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	insertRoomHook = `INSERT INTO room_hooks (room, id, name, login, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	selectHook     = `SELECT id, room, name, login, secret_hash, created_by, created_at FROM incoming_hooks WHERE id = ?`
	selectRoomHook = `SELECT id, room, name, login, created_by, created_at FROM room_hooks WHERE room = ?`
	deleteHook     = `DELETE FROM incoming_hooks WHERE id = ?`
	deleteRoomHook = `DELETE FROM room_hooks WHERE room = ? AND id = ?`
	// hookLoginTries bounds the draws of a hook's login that someone
	// already holds.
	hookLoginTries = 5
)

// CreateHook makes an incoming webhook named name for room (a key), as
// actor, with a bot account of its own (not yet a member of the room:
// the caller adds it), and returns it with its secret, the only time
// the secret is known. A chat.ValidationError for a bad name.
func (s *Store) CreateHook(ctx context.Context, actor, room, name string) (chat.Hook, string, error) {
	v := chat.ValidationError{}
	chat.CheckHookName(v, "name", &name, true)
	if err := v.Err(); err != nil {
		return chat.Hook{}, "", err
	}
	var (
		id  string
		bot chat.Bot
		err error
	)
	for range hookLoginTries {
		raw := make([]byte, 12)
		if _, err := rand.Read(raw); err != nil {
			return chat.Hook{}, "", fmt.Errorf("store: hook id: %w", err)
		}
		id = hex.EncodeToString(raw)
		bot, err = s.createBotAccount(ctx, actor, chat.NewBot{Login: "hook-" + id[:12], Firstname: name}, room)
		if !errors.Is(err, chat.ErrUserExists) {
			break
		}
	}
	if err != nil {
		return chat.Hook{}, "", err
	}
	secret, hash, err := newToken()
	if err != nil {
		return chat.Hook{}, "", err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	h := chat.Hook{ID: id, Room: room, Name: name, Login: bot.Login, CreatedBy: actor, CreatedAt: now}
	if err := s.exec(ctx, "list hook", insertRoomHook, room, id, name, bot.Login, actor, now); err != nil {
		return chat.Hook{}, "", err
	}
	if err := s.exec(ctx, "create hook", insertHook, id, room, name, bot.Login, hash, actor, now); err != nil {
		return chat.Hook{}, "", err
	}
	return h, secret, nil
}

// HookBySecret is the hook id whose secret this is; chat.ErrNotFound
// for an unknown id or a wrong secret alike.
func (s *Store) HookBySecret(ctx context.Context, id, secret string) (chat.Hook, error) {
	notFound := fmt.Errorf("store: hook %q: %w", id, chat.ErrNotFound)
	if len(id) != 24 || secret == "" || len(secret) > 100 {
		return chat.Hook{}, notFound
	}
	q, err := s.query(ctx, selectHook, id)
	if err != nil {
		return chat.Hook{}, err
	}
	var (
		h    chat.Hook
		hash []byte
	)
	err = q.Scan(&h.ID, &h.Room, &h.Name, &h.Login, &hash, &h.CreatedBy, &h.CreatedAt)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.Hook{}, notFound
	}
	if err != nil {
		return chat.Hook{}, s.fail("read hook", err)
	}
	if !sameHash(hash, tokenHash(secret)) {
		return chat.Hook{}, notFound
	}
	return h, nil
}

// RoomHooks are room's incoming webhooks (room a key), by id.
func (s *Store) RoomHooks(ctx context.Context, room string) ([]chat.Hook, error) {
	q, err := s.query(ctx, selectRoomHook, room)
	if err != nil {
		return nil, err
	}
	var (
		out []chat.Hook
		h   chat.Hook
	)
	iter := q.Iter()
	for iter.Scan(&h.ID, &h.Room, &h.Name, &h.Login, &h.CreatedBy, &h.CreatedAt) {
		out = append(out, h)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read room hooks", err)
	}
	return out, nil
}

// DeleteHook deletes room's hook id: posts to it are refused from now
// on. Its bot account and messages stay.
func (s *Store) DeleteHook(ctx context.Context, room, id string) error {
	if err := s.exec(ctx, "delete hook", deleteHook, id); err != nil {
		return err
	}
	return s.exec(ctx, "unlist hook", deleteRoomHook, room, id)
}
