// This file owns the gorilla/sessions Store: the cookie holds only a
// signed random id; the values live in storage (Cassandra's sessions
// table), in a row with a TTL, so any instance can serve any session and
// logout revokes.

package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/web"
)

const (
	// RememberFor is how long a "remember me" session lasts.
	RememberFor = 30 * 24 * time.Hour
	// IdleTimeout ends any other session after this long without a request.
	IdleTimeout = 12 * time.Hour
	// refreshAfter is how stale a session row may get before a request
	// rewrites it to push its TTL back (a write per request would be waste).
	refreshAfter = 10 * time.Minute
)

// Sessions is what the session store needs of storage: one row per
// session id, which expires by itself. *store.Store implements it on
// Cassandra; sessiontest.Run is the contract both it and the in-memory
// sessiontest.Memory pass.
type Sessions interface {
	// Session returns the row of id, or an error wrapping chat.ErrNotFound
	// if it never existed, expired or was deleted, or chat.ErrUnavailable
	// if storage did not answer.
	Session(ctx context.Context, id string) (chat.SessionRow, error)
	// SaveSession writes (or rewrites) the row of id, to expire after
	// maxAge, counted in whole seconds: less than a second is
	// chat.ErrInvalid.
	SaveSession(ctx context.Context, id string, row chat.SessionRow, maxAge time.Duration) error
	// DeleteSession removes the row of id, whose login is login ("" for a
	// session nobody logged into); a missing row is no error.
	DeleteSession(ctx context.Context, login, id string) error
}

// Store implements sessions.Store over Sessions.
type Store struct {
	db    Sessions
	cache *sessionCache
	// cookies remembers cookie values whose signature was verified, for
	// as long as a session is cached: checking the HMAC and decoding the
	// id is most of what a cached session costs.
	cookies *web.RowCache[verifiedCookie]
	codecs  []securecookie.Codec
	// Options are the cookie options new sessions start with.
	Options sessions.Options
}

// NewStore signs session cookies with key (32 bytes or more). It trusts a
// session it read for cacheTTL (negative or zero: no cache), and keeps at
// most cacheSize of them.
func NewStore(db Sessions, key []byte, secure bool, cacheTTL time.Duration, cacheSize int) *Store {
	codec := securecookie.New(key, nil)
	codec.MaxAge(int(RememberFor / time.Second))
	return &Store{
		db:      db,
		cache:   newSessionCache(cacheTTL, cacheSize),
		cookies: web.NewRowCache[verifiedCookie](cacheTTL, cacheSize),
		codecs:  []securecookie.Codec{codec},
		Options: sessions.Options{
			Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode,
		},
	}
}

// verifiedCookie is a session cookie's id, its signature checked, and the
// id's digest (see Digest).
type verifiedCookie struct {
	id, digest string
}

// Get returns the session cached for this request, loading it once.
func (s *Store) Get(r *http.Request, name string) (*sessions.Session, error) {
	return sessions.GetRegistry(r).Get(s, name)
}

// New loads the session named by the request's cookie. A missing, forged,
// expired or revoked cookie yields a new empty session and no error; a
// database failure yields the new session and an error wrapping
// chat.ErrUnavailable.
func (s *Store) New(r *http.Request, name string) (*sessions.Session, error) {
	sess := sessions.NewSession(s, name)
	opts := s.Options
	sess.Options = &opts
	sess.IsNew = true
	c, err := r.Cookie(name)
	if err != nil {
		return sess, nil
	}
	vc, _, err := s.cookies.Load(name+"\x00"+c.Value, func() (verifiedCookie, error) {
		var id string
		if err := securecookie.DecodeMulti(name, c.Value, &id, s.codecs...); err != nil {
			return verifiedCookie{}, err
		}
		return verifiedCookie{id: id, digest: Digest(id)}, nil
	})
	if err != nil {
		return sess, nil
	}
	id, digest := vc.id, vc.digest
	v, cached := s.cache.get(digest)
	if !cached {
		row, err := s.db.Session(r.Context(), id)
		if errors.Is(err, chat.ErrNotFound) {
			return sess, nil
		}
		if err != nil {
			return sess, err
		}
		if err := json.Unmarshal(row.Data, &v); err != nil {
			return sess, nil // an unreadable row is treated like no session
		}
		s.cache.put(digest, v)
	}
	v.into(sess.Values)
	sess.ID = id
	sess.IsNew = false
	if remember, _ := sess.Values[KeyRemember].(bool); remember {
		sess.Options.MaxAge = int(RememberFor / time.Second)
	}
	return sess, nil
}

// Save writes the session row with a TTL equal to its lifetime and sets the
// cookie; a negative MaxAge deletes the row and the cookie.
func (s *Store) Save(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	if sess.Options.MaxAge < 0 {
		if sess.ID != "" {
			login, _ := sess.Values[KeyLogin].(string)
			if err := s.db.DeleteSession(r.Context(), login, sess.ID); err != nil {
				return err
			}
			// This instance forgets it now; the others through the hub
			// (logout ends the session's streams, which says so).
			s.cache.forget(login, "", []string{Digest(sess.ID)}, "")
		}
		http.SetCookie(w, sessions.NewCookie(sess.Name(), "", sess.Options))
		return nil
	}
	if sess.ID == "" {
		id, err := web.RandomToken(32)
		if err != nil {
			return err
		}
		sess.ID = id
	}
	life := IdleTimeout
	if sess.Options.MaxAge > 0 {
		life = time.Duration(sess.Options.MaxAge) * time.Second
	}
	sess.Values[KeySaved] = time.Now().Unix()
	v, err := valuesOf(sess.Values)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.db.SaveSession(r.Context(), sess.ID, chat.SessionRow{Login: v.Login, Data: data}, life); err != nil {
		return err
	}
	s.cache.put(Digest(sess.ID), v)
	encoded, err := securecookie.EncodeMulti(sess.Name(), sess.ID, s.codecs...)
	if err != nil {
		return fmt.Errorf("session: sign cookie: %w", err)
	}
	opts := *sess.Options
	opts.Secure = opts.Secure || web.SecureCookie(r)
	http.SetCookie(w, sessions.NewCookie(sess.Name(), encoded, &opts))
	return nil
}

// sessionValues is what a session row holds. The values are a fixed set
// rather than gob: a gob blob carries its type description, and decoding
// it on every request cost more CPU than the rest of a message post.
type sessionValues struct {
	Login     string `json:"login,omitempty"`
	Firstname string `json:"firstname,omitempty"`
	Lastname  string `json:"lastname,omitempty"`
	Remember  bool   `json:"remember,omitempty"`
	Saved     int64  `json:"saved,omitempty"`
}

// valuesOf takes the known session keys; any other key is an error, so
// nothing put in a session is silently dropped.
func valuesOf(values map[any]any) (sessionValues, error) {
	var v sessionValues
	for key, val := range values {
		ok := true
		switch key {
		case KeyLogin:
			v.Login, ok = val.(string)
		case KeyFirstname:
			v.Firstname, ok = val.(string)
		case KeyLastname:
			v.Lastname, ok = val.(string)
		case KeyRemember:
			v.Remember, ok = val.(bool)
		case KeySaved:
			v.Saved, ok = val.(int64)
		default:
			ok = false
		}
		if !ok {
			return v, fmt.Errorf("session: cannot store key %v (%T)", key, val)
		}
	}
	return v, nil
}

// into puts the values in a session's map.
func (v sessionValues) into(values map[any]any) {
	values[KeyLogin], values[KeyFirstname], values[KeyLastname] = v.Login, v.Firstname, v.Lastname
	values[KeyRemember], values[KeySaved] = v.Remember, v.Saved
}

// Stale reports whether the session row should be rewritten to extend it.
func Stale(sess *sessions.Session) bool {
	saved, _ := sess.Values[KeySaved].(int64)
	return time.Since(time.Unix(saved, 0)) > refreshAfter
}

// IDFromCookie returns the session id inside a signed cookie value of
// the cookie name; tests use it to look at the stored row.
func (s *Store) IDFromCookie(name, value string) (string, error) {
	var id string
	err := securecookie.DecodeMulti(name, value, &id, s.codecs...)
	return id, err
}

// Forget removes, on this instance, the cached sessions of login that a
// stream end names (see sessionCache.forget); the hub calls it for every
// instance's ends.
func (s *Store) Forget(login, room string, digests []string, except string) {
	s.cache.forget(login, room, digests, except)
}

// Reset drops every cached session: events may have been missed.
func (s *Store) Reset() { s.cache.reset() }

// Session value keys, and the session cookie's name.
const (
	CookieName   = "killrchat_session"
	KeyLogin     = "login"
	KeyFirstname = "firstname"
	KeyLastname  = "lastname"
	KeyRemember  = "remember"
	KeySaved     = "saved"
)

// Digest is how a session is named in the hub and on the broker
// (stream ends, the session cache): a digest, since the session id itself
// is the key to the session and must not travel.
func Digest(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("killrchat stream session\x00" + id))
	return hex.EncodeToString(sum[:16])
}
