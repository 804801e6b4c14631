// This file owns incoming webhooks: a room's administrators make and
// delete them; a post to one is a text post like a person's (the same
// PostText: sequence, save, mentions, unread, live, search, push),
// authored by the hook's own bot account, a member of the room.

package service

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// HookStorage is the storage of incoming webhooks (store.Store).
type HookStorage interface {
	CreateHook(ctx context.Context, actor, room, name string) (chat.Hook, string, error)
	HookBySecret(ctx context.Context, id, secret string) (chat.Hook, error)
	RoomHooks(ctx context.Context, room string) ([]chat.Hook, error)
	DeleteHook(ctx context.Context, room, id string) error
}

// ErrHookGone refuses a post to a hook whose room was deleted, or whose
// bot is no longer in it.
var ErrHookGone = fmt.Errorf("this webhook's room is gone: %w", chat.ErrNotFound)

// CreateHook makes an incoming webhook named name in r, as actor (an
// administrator of r), and returns it with its secret (shown once).
// chat.ErrNotAdmin for anyone else; a chat.ValidationError for a bad
// name.
func (s *Service) CreateHook(ctx context.Context, actor chat.UserRef, r chat.RoomFor, name string) (chat.Hook, string, error) {
	if !r.IsAdmin() || r.Login() != actor.Login {
		return chat.Hook{}, "", chat.ErrNotAdmin
	}
	h, secret, err := s.Hooks.CreateHook(ctx, actor.Login, r.Name, name)
	if err != nil {
		return chat.Hook{}, "", err
	}
	// Every instance reads its list of bots again, for the mark.
	s.Invalidate(ctx, live.Invalidation{Users: []string{h.Login}, Accounts: []string{h.Login}})
	if err := s.AddMember(ctx, actor, r.Room, h.Login); err != nil {
		return chat.Hook{}, "", err
	}
	return h, secret, nil
}

// RoomHooks are r's incoming webhooks, for actor (an administrator of
// r); chat.ErrNotAdmin for anyone else.
func (s *Service) RoomHooks(ctx context.Context, actor string, r chat.RoomFor) ([]chat.Hook, error) {
	if !r.IsAdmin() || r.Login() != actor {
		return nil, chat.ErrNotAdmin
	}
	return s.Hooks.RoomHooks(ctx, r.Name)
}

// DeleteHook deletes r's hook id, as actor (an administrator of r):
// posts to it are refused from then on; what it posted stays.
// chat.ErrNotFound if r has no such hook.
func (s *Service) DeleteHook(ctx context.Context, actor string, r chat.RoomFor, id string) error {
	hooks, err := s.RoomHooks(ctx, actor, r)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(hooks, func(h chat.Hook) bool { return h.ID == id }) {
		return fmt.Errorf("hook %q of %q: %w", id, r.Name, chat.ErrNotFound)
	}
	return s.Hooks.DeleteHook(ctx, r.Name, id)
}

// HookPost is a post to an incoming webhook, its text already in this
// project's Markdown.
type HookPost struct {
	Text string
	// Username is the name the post asks to be shown under ("" for the
	// hook's own); it shows followed by "via" the hook's name.
	Username string
}

// HookFor is the hook id whose secret this is: chat.ErrNotFound for an
// unknown id or a wrong secret alike.
func (s *Service) HookFor(ctx context.Context, id, secret string) (chat.Hook, error) {
	return s.Hooks.HookBySecret(ctx, id, secret)
}

// PostByHook posts p into h's room as h's bot. A chat.ValidationError
// for a text or name the domain refuses; ErrHookGone when the room is
// deleted or the hook's bot is no longer in it.
func (s *Service) PostByHook(ctx context.Context, h chat.Hook, p HookPost) (chat.Message, error) {
	v := chat.ValidationError{}
	chat.CheckHookName(v, "username", &p.Username, false)
	if err := v.Err(); err != nil {
		return chat.Message{}, err
	}
	pass := s.EnterRoom(h.Room)
	defer pass.Leave()
	r, err := s.Rows.Room(ctx, h.Room)
	if errors.Is(err, chat.ErrNotFound) {
		return chat.Message{}, ErrHookGone
	}
	if err != nil {
		return chat.Message{}, err
	}
	st, err := s.Rows.Standing(ctx, r, h.Login)
	if err != nil {
		return chat.Message{}, err
	}
	if !st.Member {
		return chat.Message{}, ErrHookGone
	}
	m, _, err := s.PostText(ctx, TextPost{In: r.For(st), Author: h.Ref(p.Username), Content: p.Text, Pass: pass})
	if errors.Is(err, chat.ErrNotParticipant) || errors.Is(err, chat.ErrDeactivated) {
		return chat.Message{}, ErrHookGone
	}
	return m, err
}
