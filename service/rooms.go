// This file owns a room's life and its members: create, join, leave and
// delete, add, promote and remove a member, a room's kind and banner, a
// join by invitation link. The store decides each change in an LWT; here
// each use case drops the cached rows it changed on every instance,
// fences the room's posts when it takes the right to post away, ends the
// streams of who is out, and tells open pages.

package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// ErrUnknownLogin is AddMember's error for a login no one has.
var ErrUnknownLogin = fmt.Errorf("no one has this login: %w", chat.ErrNotFound)

// CreateRoom creates the room f describes, creator its first participant
// and admin. Its errors are store.CreateRoom's (ErrRoomExists, a
// validation error, ...).
func (s *Service) CreateRoom(ctx context.Context, creator chat.UserRef, f chat.NewRoom) (chat.RoomFor, error) {
	if s.Accounts != nil {
		if err := s.MayCreateRoom(ctx, creator.Login); err != nil {
			return chat.RoomFor{}, err
		}
	}
	r, err := s.Storage.CreateRoom(ctx, creator, f)
	// The creator's list of rooms changed (or may have, on an error).
	s.Invalidate(ctx, live.Invalidation{Users: []string{creator.Login}})
	return r, err
}

// JoinRoom makes me a participant of the open room named name and
// welcomes them. Errors are store.JoinRoom's (ErrNotFound if there is no
// such room).
func (s *Service) JoinRoom(ctx context.Context, me chat.UserRef, name string) (chat.RoomFor, error) {
	if err := s.MayAct(ctx, me.Login); err != nil {
		return chat.RoomFor{}, err
	}
	r, err := s.Storage.JoinRoom(ctx, me, name)
	// The room's participants and the person's list changed, or may have
	// on an error: both are read again.
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{chat.NameKey(name)}, Users: []string{me.Login}})
	if err != nil {
		return r, err
	}
	if err := s.confirmJoin(ctx, me, name); err != nil {
		return chat.RoomFor{}, err
	}
	s.Welcome(ctx, r, me, me.Name()+" joins the room")
	return r, nil
}

// LeaveRoom takes me out of the room named name: once it returns, no post
// of theirs that checked the room before is still writing, and their
// streams of the room have ended on every instance. Errors are
// store.LeaveRoom's.
func (s *Service) LeaveRoom(ctx context.Context, me chat.UserRef, name string) error {
	err := s.Storage.LeaveRoom(ctx, me, name)
	// Before the leave is acknowledged, no post of the leaver's that
	// checked the room before it is still writing (live/fence).
	s.fence(ctx, name, live.Invalidation{Rooms: []string{chat.NameKey(name)}, Users: []string{me.Login}})
	if err != nil {
		return err
	}
	s.EndStreams(ctx, live.StreamEnd{Login: me.Login, Room: name})
	if r, err := s.Rows.Room(ctx, name); err == nil {
		s.Announce(ctx, r, me, me.Name()+" leaves the room")
	}
	return nil
}

// DeleteRoom deletes the room named name, if login created it, with its
// messages, and tells its open pages. ErrNotCreator if login did not.
func (s *Service) DeleteRoom(ctx context.Context, login, name string) error {
	// Between the delete's LWT and its clean-up, a fence waits for every
	// post that checked the room before, so the clean-up deletes what
	// they stored (live/fence).
	r, err := s.Storage.DeleteRoomFenced(ctx, login, name, func(ctx context.Context, room string) error {
		return s.Bus.Fence(ctx, room, live.Invalidation{Rooms: []string{room}})
	})
	if r.Name != "" {
		// Deleted (perhaps with its clean-up failing): the room and every
		// participant's list changed, and the creator's, who may have left.
		inv := live.Invalidation{Rooms: []string{r.Name}, Users: []string{login}}
		for p := range r.Participants {
			inv.Users = append(inv.Users, p)
		}
		s.Invalidate(ctx, inv)
	}
	if err != nil {
		return err
	}
	s.Publish(ctx, live.Event{Kind: live.KindRoomDeleted, Conversation: r.Name})
	return nil
}

// DropListedRoom repairs login's list of rooms, which names room although
// it is gone (exists false) or login is not in it: the name is removed
// (store.ForgetRoom reads at SERIAL first) and login's row read again
// everywhere when the list changed or the room is gone. It returns
// whether the name was removed.
func (s *Service) DropListedRoom(ctx context.Context, login, room string, exists bool) (bool, error) {
	forgot, err := s.Storage.ForgetRoom(ctx, login, room)
	if forgot || !exists {
		s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
	}
	return forgot, err
}

// AddMember adds the person of login to r, as actor (an admin, or a
// participant of an open room), and welcomes them if they were not in it.
// ErrUnknownLogin if no one has login; the store's errors otherwise.
func (s *Service) AddMember(ctx context.Context, actor chat.UserRef, r chat.Room, login string) error {
	who, err := s.Storage.User(ctx, login)
	if errors.Is(err, chat.ErrNotFound) {
		return ErrUnknownLogin
	}
	if err != nil {
		return err
	}
	was, err := s.Storage.Standing(ctx, r, who.Login)
	if err != nil {
		return err
	}
	after, err := s.Storage.AddMember(ctx, actor.Login, r.Name, who.Ref())
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{r.Name}, Users: []string{who.Login}})
	if err != nil {
		return err
	}
	if !was.Member {
		s.Welcome(ctx, after, who.Ref(), actor.Name()+" added "+who.Name())
	}
	return nil
}

// PromoteMember makes who an admin of r, as actor (an admin).
func (s *Service) PromoteMember(ctx context.Context, actor string, r chat.Room, who string) error {
	_, err := s.Storage.MakeAdmin(ctx, actor, r.Name, who)
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{r.Name}})
	return err
}

// RemoveMember takes who out of r, as actor (an admin): once it returns,
// no post of theirs that checked the room before is still writing, and
// their streams of the room have ended on every instance.
func (s *Service) RemoveMember(ctx context.Context, actor chat.UserRef, r chat.Room, who string) error {
	before, err := s.Storage.RemoveMember(ctx, actor.Login, r.Name, who)
	// Before the removal is acknowledged, no post of theirs that checked
	// the room before it is still writing (live/fence).
	s.fence(ctx, r.Name, live.Invalidation{Rooms: []string{r.Name}, Users: []string{who}})
	if err != nil {
		return err
	}
	s.EndStreams(ctx, live.StreamEnd{Login: who, Room: r.Name})
	if after, err := s.Rows.Room(ctx, r.Name); err == nil {
		gone := before.Standing.Ref
		s.Announce(ctx, after, gone, actor.Name()+" removed "+gone.Name())
	}
	return nil
}

// SetRoomKind makes r open or closed, as actor (an admin); a kind that
// is neither is a chat.ValidationError.
func (s *Service) SetRoomKind(ctx context.Context, actor string, r chat.Room, kind string) error {
	_, err := s.Storage.SetRoomKind(ctx, actor, r.Name, kind)
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{r.Name}})
	return err
}

// SetBanner sets r's banner, as actor (an admin); a banner too long is a
// chat.ValidationError.
func (s *Service) SetBanner(ctx context.Context, actor string, r chat.Room, banner string) error {
	changed, err := s.Storage.SetBanner(ctx, actor, r.Name, banner)
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{r.Name}})
	if err != nil {
		return err
	}
	// Open pages of the room show the new banner at once (issue 39).
	s.publishHeader(ctx, changed, &changed.Banner)
	return nil
}

// JoinByInvite makes me a participant of the room of the link token, as
// it was read before (before), and welcomes them if they were not in it.
// A link that no longer works is ErrInviteExpired's, ErrInviteRevoked's
// or ErrInviteUsedUp's.
func (s *Service) JoinByInvite(ctx context.Context, me chat.UserRef, token string, before chat.RoomFor) (chat.RoomFor, error) {
	if err := s.MayAct(ctx, me.Login); err != nil {
		return chat.RoomFor{}, err
	}
	r, err := s.Storage.JoinByInvite(ctx, me, token)
	s.Invalidate(ctx, live.Invalidation{Rooms: []string{before.Name}, Users: []string{me.Login}})
	if err != nil {
		return r, err
	}
	if err := s.confirmJoin(ctx, me, before.Name); err != nil {
		return chat.RoomFor{}, err
	}
	if !before.IsMember() {
		s.Welcome(ctx, r, me, me.Name()+" joins the room")
	}
	return r, nil
}

// CreateInvite makes a link to room for actor (who may add people to
// it) as f says, and returns its token, shown once: chat.ErrNotFound for
// a room actor cannot see, a refusal if they may not invite, a
// chat.ValidationError for f refused.
func (s *Service) CreateInvite(ctx context.Context, actor chat.UserRef, room string, f chat.NewInvite) (string, error) {
	token, _, err := s.Storage.CreateInvite(ctx, actor, room, f)
	return token, err
}

// RevokeInvite revokes room's link id for actor, an admin of the room:
// from then on no join by it applies.
func (s *Service) RevokeInvite(ctx context.Context, actor, room, id string) error {
	return s.Storage.RevokeInvite(ctx, actor, room, id)
}

// publishParticipants tells open pages of r, as read after a change, its
// first participants and how many there are.
func (s *Service) publishParticipants(ctx context.Context, r chat.Room) { s.publishHeader(ctx, r, nil) }

// publishHeader is publishParticipants with the room's new banner, when
// banner is not nil.
func (s *Service) publishHeader(ctx context.Context, r chat.Room, banner *string) {
	people, err := s.Rows.RoomMembers(ctx, r, "", s.ShownParticipants)
	if err != nil {
		s.Log.Warn("participants", "room", r.Name, "err", err)
		return
	}
	s.Publish(ctx, live.Event{Kind: live.KindParticipants, Conversation: r.Name, Participants: people, Total: r.Members, Banner: banner})
}
