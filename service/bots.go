// This file owns bots: site administrators create them, rotate and
// revoke their API tokens; a request with a token is the bot's only if
// the token is the bot's current one and the account is active.
//
// Room administrators do not create bots: a bot is an account of the
// whole site (it can be added to any room, start DMs and hold a token
// that outlives the room), and by default anyone may create a room, so
// letting a room's administrators make accounts would let anyone mint
// accounts past the site's sign-up policy. A room's administrators add
// an existing bot to their room like a person, and make the room's
// incoming webhooks.
//
// A revocation or rotation reaches every instance before it answers:
// the fence on the bot ("@login") drops the bot's cached row and every
// instance's cached token of it (live.Invalidation.Accounts), as a
// deactivation drops a person's sessions.

package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
)

// BotStorage is the storage of bots and their tokens (store.Store).
type BotStorage interface {
	CreateBot(ctx context.Context, actor string, f chat.NewBot) (chat.Bot, string, error)
	Bot(ctx context.Context, login string) (chat.Bot, error)
	Bots(ctx context.Context) ([]chat.Bot, error)
	RotateBotToken(ctx context.Context, login string) (string, error)
	RevokeBotToken(ctx context.Context, login string) error
	BotByToken(ctx context.Context, token string) (string, error)
	SetBotEndpoint(ctx context.Context, login, endpoint string) (string, error)
}

// ErrBadToken refuses a request whose API token is malformed, unknown,
// rotated or revoked, or whose bot is deactivated.
var ErrBadToken = errors.New("this API token is not valid")

// CreateBot creates the bot f describes, as the administrator actor,
// and returns it with its API token, shown once. ErrNotSiteAdmin for
// anyone else; a chat.ValidationError for a bad form;
// chat.ErrUserExists for a login taken.
func (s *Service) CreateBot(ctx context.Context, actor string, f chat.NewBot) (chat.Bot, string, error) {
	if err := s.RequireAdmin(ctx, actor); err != nil {
		return chat.Bot{}, "", err
	}
	b, token, err := s.Bots.CreateBot(ctx, actor, f)
	if err != nil {
		return b, "", err
	}
	// Every instance reads its list of bots again, for the marks.
	s.Invalidate(ctx, live.Invalidation{Users: []string{b.Login}, Accounts: []string{b.Login}})
	s.audit(ctx, actor, chat.AuditCreateBot, b.Login, "")
	return b, token, nil
}

// SiteBots are the site's bots, for the administration page.
func (s *Service) SiteBots(ctx context.Context) ([]chat.Bot, error) { return s.Bots.Bots(ctx) }

// RotateBotToken gives the bot who a new token, as the administrator
// actor, and returns it (shown once); the old one is refused on every
// instance before this returns. chat.ErrNotFound if who is no bot.
func (s *Service) RotateBotToken(ctx context.Context, actor, who string) (string, error) {
	if err := s.RequireAdmin(ctx, actor); err != nil {
		return "", err
	}
	// An incoming webhook's bot posts by its hook's secret only.
	if b, err := s.Bots.Bot(ctx, who); err != nil {
		return "", err
	} else if b.HookRoom != "" {
		return "", fmt.Errorf("bot %q is a webhook's: %w", who, chat.ErrNotFound)
	}
	token, err := s.Bots.RotateBotToken(ctx, who)
	if err != nil {
		return "", err
	}
	s.forgetBotToken(ctx, chat.NameKey(who))
	s.audit(ctx, actor, chat.AuditRotateBot, chat.NameKey(who), "")
	return token, nil
}

// RevokeBotToken takes the bot who's token away, as the administrator
// actor: refused on every instance before this returns.
// chat.ErrNotFound if who is no bot.
func (s *Service) RevokeBotToken(ctx context.Context, actor, who string) error {
	if err := s.RequireAdmin(ctx, actor); err != nil {
		return err
	}
	if err := s.Bots.RevokeBotToken(ctx, who); err != nil {
		return err
	}
	s.forgetBotToken(ctx, chat.NameKey(who))
	s.audit(ctx, actor, chat.AuditRevokeBot, chat.NameKey(who), "")
	return nil
}

// forgetBotToken drops login's cached token and row on every instance
// that answers the fence, before the caller answers.
func (s *Service) forgetBotToken(ctx context.Context, login string) {
	s.fence(ctx, "@"+login, live.Invalidation{Users: []string{login}, Accounts: []string{login}})
}

// BotByToken is the active bot whose current API token this is, read
// from storage; ErrBadToken otherwise. Callers may cache the answer
// until an invalidation names the bot's login in Accounts.
func (s *Service) BotByToken(ctx context.Context, token string) (chat.User, error) {
	login, err := s.Bots.BotByToken(ctx, token)
	if errors.Is(err, chat.ErrNotFound) {
		return chat.User{}, ErrBadToken
	}
	if err != nil {
		return chat.User{}, err
	}
	u, err := s.Storage.User(ctx, login)
	if errors.Is(err, chat.ErrNotFound) {
		return chat.User{}, ErrBadToken
	}
	if err != nil {
		return chat.User{}, err
	}
	if !u.IsBot() || !u.Active() {
		return chat.User{}, fmt.Errorf("%w: the bot %s is not active", ErrBadToken, u.Login)
	}
	return u, nil
}

// SetBotEndpoint sets the outgoing webhook of the bot who ("" for none),
// as the administrator actor, and returns its new signing secret (shown
// once). check says why an endpoint is refused (nil: fine).
// chat.ErrNotFound if who is no bot; a chat.ValidationError for an
// endpoint refused.
func (s *Service) SetBotEndpoint(ctx context.Context, actor, who, endpoint string, check func(string) error) (string, error) {
	if err := s.RequireAdmin(ctx, actor); err != nil {
		return "", err
	}
	if endpoint != "" {
		if err := check(endpoint); err != nil {
			return "", chat.ValidationError{"endpoint": err.Error()}
		}
	}
	secret, err := s.Bots.SetBotEndpoint(ctx, who, endpoint)
	if err != nil {
		return "", err
	}
	s.Invalidate(ctx, live.Invalidation{Accounts: []string{chat.NameKey(who)}})
	s.audit(ctx, actor, chat.AuditBotEndpoint, chat.NameKey(who), endpoint)
	return secret, nil
}
