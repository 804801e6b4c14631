// This file owns the changes of a person's account that other instances
// must hear of: their profile, their picture, and their sessions ending
// (logout, a password change, a replaced or expired session), whose live
// streams stop on every instance.

package service

import (
	"context"
	"io"
	"strings"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// ChangeProfile sets login's email and bio; a malformed one is a
// chat.ValidationError. A new address that is not verified is sent its
// verification link (and nothing else until it is used).
func (s *Service) ChangeProfile(ctx context.Context, login, email, bio string) error {
	before, rerr := s.Storage.User(ctx, login)
	err := s.Storage.UpdateProfile(ctx, login, email, bio)
	s.Invalidate(ctx, live.Invalidation{Users: []string{login}})
	if err == nil && rerr == nil && !strings.EqualFold(before.Email, strings.TrimSpace(email)) {
		if _, verr := s.SendVerification(ctx, login); verr != nil {
			s.Log.Warn("send a verification link", "login", login, "err", verr)
		}
	}
	return err
}

// ChangePassword sets login's new password after checking the old one,
// then ends every other session of login (whoever knew the password may
// hold one) and returns their ids; their streams end once the caller
// calls SessionsEnded, after it has given the person a new session. A
// wrong old password or a bad new one is a chat.ValidationError, and
// changes nothing.
func (s *Service) ChangePassword(ctx context.Context, login, keep, old, password, confirm string) ([]string, error) {
	if err := s.Storage.ChangePassword(ctx, login, old, password, confirm); err != nil {
		return nil, err
	}
	return s.Storage.EndOtherSessions(ctx, login, keep)
}

// RemoveAvatar takes login's picture away (the initials show again) and
// tells every instance.
func (s *Service) RemoveAvatar(ctx context.Context, login string) error {
	if err := s.Storage.RemoveAvatar(ctx, login); err != nil {
		return err
	}
	s.AvatarChanged(ctx, login, "")
	return nil
}

// SetAvatar stores the picture read from body (at most limit bytes) as
// user's and tells every instance; chat.ErrTooLarge past limit, a
// chat.ValidationError for a picture refused, and nothing changes.
func (s *Service) SetAvatar(ctx context.Context, user chat.UserRef, body io.Reader, limit int64) (chat.Avatar, error) {
	av, err := s.Storage.SetAvatar(ctx, user, body, limit)
	if err != nil {
		return chat.Avatar{}, err
	}
	s.AvatarChanged(ctx, user.Login, av.Version())
	return av, nil
}

// AvatarChanged tells every instance, this one at once, that login's
// picture is now version ("" for none).
func (s *Service) AvatarChanged(ctx context.Context, login, version string) {
	if s.Pictures != nil {
		s.Pictures.Apply(map[string]string{login: version})
	}
	s.Invalidate(ctx, live.Invalidation{Avatars: map[string]string{login: version}, Users: []string{login}})
}

// SessionsEnded ends, on every instance, the live streams that login's
// sessions ids opened: their sessions are gone (logged out, replaced,
// expired), so a stream opened meanwhile is refused by its own check.
func (s *Service) SessionsEnded(ctx context.Context, login string, ids []string) {
	s.EndStreams(ctx, live.StreamEnd{Login: login, Sessions: ids})
}
