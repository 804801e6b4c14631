// This file owns the site's links: password-reset links (used once, by
// "IF used_at = null") and site invitation links for sign-up by
// invitation (counted by "IF uses = <as read>"). A token is given once
// and stored only as its sha256; an unknown, expired or used-up link
// gets the one refusal chat.ErrLinkRefused.

package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertReset = `INSERT INTO password_resets (token_hash, login, created_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?) USING TTL ?`
	selectReset = `SELECT login, expires_at, used_at FROM password_resets WHERE token_hash = ?`
	useReset    = `UPDATE password_resets SET used_at = ? WHERE token_hash = ? IF used_at = null AND login = ?`

	insertSiteInvite = `INSERT INTO site_invites (token_hash, invite_id, created_by, created_at, expires_at, max_uses, uses)
		VALUES (?, ?, ?, ?, ?, ?, 0) USING TTL ?`
	listSiteInvite = `INSERT INTO site_invites_by_id (part, invite_id, token_hash, created_by, created_at, expires_at, max_uses)
		VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?`
	selectSiteInvite  = `SELECT invite_id, expires_at, max_uses, uses FROM site_invites WHERE token_hash = ?`
	useSiteInvite     = `UPDATE site_invites SET uses = ? WHERE token_hash = ? IF uses = ?`
	selectSiteInvites = `SELECT invite_id, created_by, created_at, expires_at, max_uses FROM site_invites_by_id WHERE part = ?`

	// linkKept is how long a link's row outlives its expiry, so that a
	// late use is refused as expired, not as unknown (the same answer,
	// but a row to look at).
	linkKept = 7 * 24 * time.Hour
	// inviteRetries bounds the rounds of one sign-up counting its use of
	// a link that racing sign-ups count too.
	inviteRetries = 100
)

// newToken is a link's token (256 random bits) and its hash.
func newToken() (string, []byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("store: link token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	return token, tokenHash(token), nil
}

// CreateResetLink makes a password-reset link for login, valid for
// chat.ResetLinkTTL, and returns its token (the only time it is known).
func (s *Store) CreateResetLink(ctx context.Context, actor, login string) (string, error) {
	return s.CreateResetLinkFor(ctx, actor, login, chat.ResetLinkTTL)
}

// CreateResetLinkFor is CreateResetLink with a life of its own (a link
// sent by mail lives chat.MailedResetTTL).
func (s *Store) CreateResetLinkFor(ctx context.Context, actor, login string, life time.Duration) (string, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	ttl := int((life + linkKept) / time.Second)
	err = s.exec(ctx, "create reset link for "+login, insertReset, hash, chat.NameKey(login), actor, now, now.Add(life), ttl)
	return token, err
}

// ResetLink is the login a reset link is for, if it still works;
// chat.ErrLinkRefused otherwise.
func (s *Store) ResetLink(ctx context.Context, token string) (string, error) {
	q, err := s.query(ctx, selectReset, tokenHash(token))
	if err != nil {
		return "", err
	}
	var (
		login   string
		expires time.Time
		used    time.Time
	)
	err = q.Scan(&login, &expires, &used)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", fmt.Errorf("store: reset link: %w", chat.ErrLinkRefused)
	}
	if err != nil {
		return "", s.fail("read reset link", err)
	}
	if !used.IsZero() || !s.Now().Before(expires) {
		return "", fmt.Errorf("store: reset link: %w", chat.ErrLinkRefused)
	}
	return login, nil
}

// UseResetLink spends the reset link token, once: of two uses, racing
// or not, one gets its login and the other chat.ErrLinkRefused, as do an
// expired or unknown link.
func (s *Store) UseResetLink(ctx context.Context, token string) (string, error) {
	login, err := s.ResetLink(ctx, token)
	if err != nil {
		return "", err
	}
	now := s.Now().UTC()
	hash := tokenHash(token)
	applied, err := s.lwt(ctx, "use reset link", useReset, []any{now, hash, login}, nil,
		func(ctx context.Context) (bool, error) {
			q, err := s.serialRead(ctx, selectReset, hash)
			if err != nil {
				return false, err
			}
			var (
				l          string
				exp, usedT time.Time
			)
			if err := q.Scan(&l, &exp, &usedT); err != nil {
				return false, err
			}
			return usedT.Equal(now.Truncate(time.Millisecond)), nil
		})
	if err != nil {
		return "", err
	}
	if !applied {
		return "", fmt.Errorf("store: reset link: used: %w", chat.ErrLinkRefused)
	}
	return login, nil
}

// CreateSiteInvite makes a sign-up link by actor, valid for f.TTL and
// f.MaxUses sign-ups (0: any number), and returns its token.
func (s *Store) CreateSiteInvite(ctx context.Context, actor string, f chat.NewInvite) (string, chat.SiteInvite, error) {
	if err := f.Validate(); err != nil {
		return "", chat.SiteInvite{}, err
	}
	token, hash, err := newToken()
	if err != nil {
		return "", chat.SiteInvite{}, err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	inv := chat.SiteInvite{ID: hex.EncodeToString(hash[:8]), CreatedBy: actor, CreatedAt: now, ExpiresAt: now.Add(f.TTL), MaxUses: f.MaxUses}
	ttl := int((f.TTL + linkKept) / time.Second)
	if err := s.exec(ctx, "list site invite", listSiteInvite, siteRowKey, inv.ID, hash, actor, now, inv.ExpiresAt, f.MaxUses, ttl); err != nil {
		return "", chat.SiteInvite{}, err
	}
	if err := s.exec(ctx, "create site invite", insertSiteInvite, hash, inv.ID, actor, now, inv.ExpiresAt, f.MaxUses, ttl); err != nil {
		return "", chat.SiteInvite{}, err
	}
	return token, inv, nil
}

// SiteInvites are the site's links that have not expired, newest last.
func (s *Store) SiteInvites(ctx context.Context) ([]chat.SiteInvite, error) {
	q, err := s.query(ctx, selectSiteInvites, siteRowKey)
	if err != nil {
		return nil, err
	}
	var (
		out []chat.SiteInvite
		inv chat.SiteInvite
	)
	iter := q.Iter()
	for iter.Scan(&inv.ID, &inv.CreatedBy, &inv.CreatedAt, &inv.ExpiresAt, &inv.MaxUses) {
		if s.Now().Before(inv.ExpiresAt) {
			out = append(out, inv)
		}
		inv = chat.SiteInvite{}
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("list site invites", err)
	}
	return out, nil
}

// UseSiteInvite counts one sign-up by the link token, IF its count is
// still as read (retried while racing sign-ups count theirs), so no more
// than its limit ever sign up by it. chat.ErrLinkRefused for a link
// unknown, expired or used up. ReturnSiteInvite gives a use back.
func (s *Store) UseSiteInvite(ctx context.Context, token string) error {
	return s.countSiteInvite(ctx, token, 1)
}

// ReturnSiteInvite gives back a use of UseSiteInvite whose sign-up
// failed after (a login taken).
func (s *Store) ReturnSiteInvite(ctx context.Context, token string) error {
	return s.countSiteInvite(ctx, token, -1)
}

func (s *Store) countSiteInvite(ctx context.Context, token string, by int) error {
	hash := tokenHash(token)
	for range inviteRetries {
		q, err := s.serialRead(ctx, selectSiteInvite, hash)
		if err != nil {
			return err
		}
		var (
			id            string
			expires       time.Time
			maxUses, uses int
		)
		err = q.Scan(&id, &expires, &maxUses, &uses)
		if errors.Is(err, gocql.ErrNotFound) {
			return fmt.Errorf("store: site invite: %w", chat.ErrLinkRefused)
		}
		if err != nil {
			return s.fail("read site invite", err)
		}
		if by > 0 && (!s.Now().Before(expires) || (maxUses > 0 && uses >= maxUses)) {
			return fmt.Errorf("store: site invite: %w", chat.ErrLinkRefused)
		}
		if by < 0 && uses == 0 {
			return nil
		}
		// A round whose outcome is unknown fails the sign-up and gives
		// nothing back: the count errs on the side of fewer sign-ups,
		// never more.
		applied, err := s.lwt(ctx, "use site invite", useSiteInvite, []any{uses + by, hash, uses}, nil, nil)
		if err != nil {
			return err
		}
		if applied {
			return nil
		}
	}
	return fmt.Errorf("store: site invite: %w", chat.ErrConflict)
}
