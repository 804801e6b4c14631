// This file owns email's rows: a person's email settings, address
// verification links (used once, by "IF used_at = null"), verified
// addresses' accounts, and the missed-message emails waiting (claimed
// once across instances by LWT; see schema/021_email.cql).

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	updateEmailSettings = `UPDATE users SET email_notify = ?, email_hide_text = ? WHERE login = ?`
	updateEmailVerified = `UPDATE users SET email_verified = ? WHERE login = ?`
	insertVerification  = `INSERT INTO email_verifications (token_hash, login, email, expires_at) VALUES (?, ?, ?, ?) USING TTL ?`
	selectVerification  = `SELECT login, email, expires_at, used_at FROM email_verifications WHERE token_hash = ?`
	useVerification     = `UPDATE email_verifications SET used_at = ? WHERE token_hash = ? IF used_at = null`
	insertUserByEmail   = `INSERT INTO users_by_email (email, login) VALUES (?, ?)`
	selectUserByEmail   = `SELECT login FROM users_by_email WHERE email = ?`

	addPending = `UPDATE email_pending SET messages = messages + ?, attempts = ? WHERE due = ? AND login = ? AND conversation = ?`
	// A message's first recording leaves attempts alone: a row moved
	// there after failed tries keeps its count (and its back-off).
	addPendingFirst = `UPDATE email_pending SET messages = messages + ? WHERE due = ? AND login = ? AND conversation = ?`
	addDue          = `INSERT INTO email_dues (day, due) VALUES (?, ?)`
	selectDues      = `SELECT due FROM email_dues WHERE day = ? AND due > ? AND due <= ?`
	selectDue       = `SELECT login, conversation, messages, attempts, owner, lease_until, state FROM email_pending WHERE due = ?`
	claimNew        = `UPDATE email_pending SET owner = ?, lease_until = ? WHERE due = ? AND login = ? AND conversation = ? IF owner = null`
	claimLapse      = `UPDATE email_pending SET owner = ?, lease_until = ? WHERE due = ? AND login = ? AND conversation = ?
		IF owner = ? AND lease_until = ? AND state = null`
	finishPending = `UPDATE email_pending SET state = ? WHERE due = ? AND login = ? AND conversation = ? IF owner = ?`
	selectOwner   = `SELECT owner, lease_until, state FROM email_pending WHERE due = ? AND login = ? AND conversation = ?`
)

// SetEmailSettings saves login's missed-message setting and whether
// their emails leave message text out.
func (s *Store) SetEmailSettings(ctx context.Context, login string, notify chat.EmailNotify, hideText bool) error {
	return s.exec(ctx, "email settings of "+login, updateEmailSettings, string(notify), hideText, chat.NameKey(login))
}

// CreateVerification makes a link that verifies address for login,
// valid for chat.VerifyLinkTTL, and returns its token.
func (s *Store) CreateVerification(ctx context.Context, login, address string) (string, error) {
	token, hash, err := newToken()
	if err != nil {
		return "", err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	ttl := int((chat.VerifyLinkTTL + linkKept) / time.Second)
	err = s.exec(ctx, "create verification for "+login, insertVerification, hash, chat.NameKey(login), address, now.Add(chat.VerifyLinkTTL), ttl)
	return token, err
}

// Verify spends the verification link token, once, and marks its
// address verified for its person if it is still their address. It
// returns the login; chat.ErrLinkRefused for a link used, expired or
// unknown, or an address the person changed since.
func (s *Store) Verify(ctx context.Context, token string) (string, error) {
	hash := tokenHash(token)
	q, err := s.query(ctx, selectVerification, hash)
	if err != nil {
		return "", err
	}
	var (
		login, address string
		expires, used  time.Time
	)
	if err := q.Scan(&login, &address, &expires, &used); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return "", fmt.Errorf("store: verification: %w", chat.ErrLinkRefused)
		}
		return "", s.fail("read verification", err)
	}
	if !used.IsZero() || !s.Now().Before(expires) {
		return "", fmt.Errorf("store: verification: %w", chat.ErrLinkRefused)
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	applied, err := s.lwt(ctx, "use verification", useVerification, []any{now, hash}, nil,
		func(ctx context.Context) (bool, error) {
			q, err := s.serialRead(ctx, selectVerification, hash)
			if err != nil {
				return false, err
			}
			var l, a string
			var exp, u time.Time
			if err := q.Scan(&l, &a, &exp, &u); err != nil {
				return false, err
			}
			return u.Equal(now), nil
		})
	if err != nil {
		return "", err
	}
	if !applied {
		return "", fmt.Errorf("store: verification: used: %w", chat.ErrLinkRefused)
	}
	u, err := s.User(ctx, login)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(u.Email, address) {
		return "", fmt.Errorf("store: verification of an address no longer %s's: %w", login, chat.ErrLinkRefused)
	}
	if err := s.exec(ctx, "verify address of "+login, updateEmailVerified, u.Email, login); err != nil {
		return "", err
	}
	return login, s.exec(ctx, "address's account", insertUserByEmail, strings.ToLower(u.Email), login)
}

// LoginByEmail is the account whose verified address is address (any
// case); chat.ErrNotFound if none is (any more).
func (s *Store) LoginByEmail(ctx context.Context, address string) (string, error) {
	q, err := s.query(ctx, selectUserByEmail, strings.ToLower(strings.TrimSpace(address)))
	if err != nil {
		return "", err
	}
	var login string
	if err := q.Scan(&login); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return "", fmt.Errorf("store: account of an address: %w", chat.ErrNotFound)
		}
		return "", s.fail("account of an address", err)
	}
	u, err := s.User(ctx, login)
	if err != nil {
		return "", err
	}
	if !u.EmailVerified() || !strings.EqualFold(u.Email, address) {
		return "", fmt.Errorf("store: account of an address: %w", chat.ErrNotFound)
	}
	return login, nil
}

// dues remembers the due times whose listing this process wrote.
type dues struct {
	mu   sync.Mutex
	seen map[time.Time]bool
}

func dayOf(t time.Time) string { return t.UTC().Format("20060102") }

// AddPendingEmail adds messages to login's email of conversation due at
// due (attempts: how many sends failed before; 0 leaves the row's count
// as it is), listing the due time
// first so that no row is unreachable by the scan.
func (s *Store) AddPendingEmail(ctx context.Context, due time.Time, login, conversation string, messages []chat.ID, attempts int) error {
	due = due.UTC().Truncate(time.Millisecond)
	s.emailDues.mu.Lock()
	listed := s.emailDues.seen[due]
	s.emailDues.mu.Unlock()
	if !listed {
		if err := s.exec(ctx, "list an email due time", addDue, dayOf(due), due); err != nil {
			return err
		}
		s.emailDues.mu.Lock()
		if s.emailDues.seen == nil || len(s.emailDues.seen) > 10_000 {
			s.emailDues.seen = map[time.Time]bool{}
		}
		s.emailDues.seen[due] = true
		s.emailDues.mu.Unlock()
	}
	ids := make([]gocql.UUID, len(messages))
	for i, id := range messages {
		ids[i] = gocql.UUID(id)
	}
	if attempts == 0 {
		return s.exec(ctx, "add a pending email", addPendingFirst, ids, due, login, conversation)
	}
	return s.exec(ctx, "add a pending email", addPending, ids, attempts, due, login, conversation)
}

// EmailDues are the listed due times of day (yyyyMMdd) after after and
// up to upTo, oldest first.
func (s *Store) EmailDues(ctx context.Context, day string, after, upTo time.Time) ([]time.Time, error) {
	q, err := s.query(ctx, selectDues, day, after, upTo)
	if err != nil {
		return nil, err
	}
	iter := q.Iter()
	var (
		out []time.Time
		t   time.Time
	)
	for iter.Scan(&t) {
		out = append(out, t)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("email due times", err)
	}
	return out, nil
}

// PendingEmails are the emails due at due, in any state.
func (s *Store) PendingEmails(ctx context.Context, due time.Time) ([]chat.PendingEmail, error) {
	q, err := s.query(ctx, selectDue, due)
	if err != nil {
		return nil, err
	}
	iter := q.Iter()
	var out []chat.PendingEmail
	for {
		p := chat.PendingEmail{Due: due}
		var (
			ids      []gocql.UUID
			attempts *int
		)
		if !iter.Scan(&p.Login, &p.Conversation, &ids, &attempts, &p.Owner, &p.LeaseUntil, &p.State) {
			break
		}
		if attempts != nil {
			p.Attempts = *attempts
		}
		for _, id := range ids {
			p.Messages = append(p.Messages, chat.ID(id))
		}
		out = append(out, p)
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("pending emails", err)
	}
	return out, nil
}

// ClaimPendingEmail makes owner the sender of p until leaseUntil: by "IF
// owner = null" for a row no one claimed, or, for one whose owner's
// lease ran out (p as read), "IF owner = <p's> AND lease_until = <p's>
// AND state = null". Of racing claims one applies. false: another
// instance has it.
func (s *Store) ClaimPendingEmail(ctx context.Context, p chat.PendingEmail, owner string, leaseUntil time.Time) (bool, error) {
	leaseUntil = leaseUntil.UTC().Truncate(time.Millisecond)
	stmt, values := claimNew, []any{owner, leaseUntil, p.Due, p.Login, p.Conversation}
	if p.Owner != "" {
		stmt, values = claimLapse, append(values, p.Owner, p.LeaseUntil)
	}
	return s.lwt(ctx, "claim a pending email", stmt, values, nil, func(ctx context.Context) (bool, error) {
		o, lease, _, err := s.pendingOwner(ctx, p)
		return o == owner && lease.Equal(leaseUntil), err
	})
}

// FinishPendingEmail sets p's final state, if owner still has it.
func (s *Store) FinishPendingEmail(ctx context.Context, p chat.PendingEmail, owner, state string) (bool, error) {
	return s.lwt(ctx, "finish a pending email", finishPending, []any{state, p.Due, p.Login, p.Conversation, owner}, nil,
		func(ctx context.Context) (bool, error) {
			o, _, st, err := s.pendingOwner(ctx, p)
			return o == owner && st == state, err
		})
}

func (s *Store) pendingOwner(ctx context.Context, p chat.PendingEmail) (string, time.Time, string, error) {
	q, err := s.serialRead(ctx, selectOwner, p.Due, p.Login, p.Conversation)
	if err != nil {
		return "", time.Time{}, "", err
	}
	var (
		owner, state string
		lease        time.Time
	)
	err = q.Scan(&owner, &lease, &state)
	return owner, lease, state, err
}
