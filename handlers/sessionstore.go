// This file owns the gorilla/sessions Store backed by Cassandra: the cookie
// holds only a signed random id; the values live in the sessions table, in a
// row with a TTL, so any instance can serve any session and logout revokes.
package handlers

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"

	"github.com/killrchat/killrchat/store"
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

// SessionStore implements sessions.Store on the Cassandra sessions table.
type SessionStore struct {
	db    *store.Store
	cache *sessionCache
	// cookies remembers cookie values whose signature was verified, for
	// as long as a session is cached: checking the HMAC and decoding the
	// id is most of what a cached session costs.
	cookies *rowCache[verifiedCookie]
	codecs  []securecookie.Codec
	// Options are the cookie options new sessions start with.
	Options sessions.Options
}

// NewSessionStore signs session cookies with key (32 bytes or more).
func NewSessionStore(db *store.Store, key []byte, secure bool) *SessionStore {
	codec := securecookie.New(key, nil)
	codec.MaxAge(int(RememberFor / time.Second))
	return &SessionStore{
		db:      db,
		cache:   newSessionCache(0, 0),
		cookies: newRowCache[verifiedCookie](0, 0),
		codecs:  []securecookie.Codec{codec},
		Options: sessions.Options{
			Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode,
		},
	}
}

// verifiedCookie is a session cookie's id, its signature checked, and the
// id's digest (see streamSession).
type verifiedCookie struct {
	id, digest string
}

// Get returns the session cached for this request, loading it once.
func (s *SessionStore) Get(r *http.Request, name string) (*sessions.Session, error) {
	return sessions.GetRegistry(r).Get(s, name)
}

// New loads the session named by the request's cookie. A missing, forged,
// expired or revoked cookie yields a new empty session and no error; a
// database failure yields the new session and an error wrapping
// store.ErrUnavailable.
func (s *SessionStore) New(r *http.Request, name string) (*sessions.Session, error) {
	sess := sessions.NewSession(s, name)
	opts := s.Options
	sess.Options = &opts
	sess.IsNew = true
	c, err := r.Cookie(name)
	if err != nil {
		return sess, nil
	}
	vc, _, err := s.cookies.load(name+"\x00"+c.Value, func() (verifiedCookie, error) {
		var id string
		if err := securecookie.DecodeMulti(name, c.Value, &id, s.codecs...); err != nil {
			return verifiedCookie{}, err
		}
		return verifiedCookie{id: id, digest: streamSession(id)}, nil
	})
	if err != nil {
		return sess, nil
	}
	id, digest := vc.id, vc.digest
	v, cached := s.cache.get(digest)
	if !cached {
		row, err := s.db.Session(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
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
	if remember, _ := sess.Values[keyRemember].(bool); remember {
		sess.Options.MaxAge = int(RememberFor / time.Second)
	}
	return sess, nil
}

// Save writes the session row with a TTL equal to its lifetime and sets the
// cookie; a negative MaxAge deletes the row and the cookie.
func (s *SessionStore) Save(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	if sess.Options.MaxAge < 0 {
		if sess.ID != "" {
			login, _ := sess.Values[keyLogin].(string)
			if err := s.db.DeleteSession(r.Context(), login, sess.ID); err != nil {
				return err
			}
			// This instance forgets it now; the others through the hub
			// (logout ends the session's streams, which says so).
			s.cache.forget(StreamEnd{Login: login, Sessions: []string{streamSession(sess.ID)}})
		}
		http.SetCookie(w, sessions.NewCookie(sess.Name(), "", sess.Options))
		return nil
	}
	if sess.ID == "" {
		id, err := randomToken(32)
		if err != nil {
			return err
		}
		sess.ID = id
	}
	life := IdleTimeout
	if sess.Options.MaxAge > 0 {
		life = time.Duration(sess.Options.MaxAge) * time.Second
	}
	sess.Values[keySaved] = time.Now().Unix()
	v, err := valuesOf(sess.Values)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.db.SaveSession(r.Context(), sess.ID, store.SessionRow{Login: v.Login, Data: data}, life); err != nil {
		return err
	}
	s.cache.put(streamSession(sess.ID), v)
	encoded, err := securecookie.EncodeMulti(sess.Name(), sess.ID, s.codecs...)
	if err != nil {
		return fmt.Errorf("session: sign cookie: %w", err)
	}
	opts := *sess.Options
	opts.Secure = opts.Secure || secureCookie(r)
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
		case keyLogin:
			v.Login, ok = val.(string)
		case keyFirstname:
			v.Firstname, ok = val.(string)
		case keyLastname:
			v.Lastname, ok = val.(string)
		case keyRemember:
			v.Remember, ok = val.(bool)
		case keySaved:
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
	values[keyLogin], values[keyFirstname], values[keyLastname] = v.Login, v.Firstname, v.Lastname
	values[keyRemember], values[keySaved] = v.Remember, v.Saved
}

// stale reports whether the session row should be rewritten to extend it.
func stale(sess *sessions.Session) bool {
	saved, _ := sess.Values[keySaved].(int64)
	return time.Since(time.Unix(saved, 0)) > refreshAfter
}

// randomToken is n random bytes, base64url-encoded.
func randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// SessionIDFromCookie returns the session id inside a signed cookie value;
// tests use it to look at the stored row.
func (s *Server) SessionIDFromCookie(value string) (string, error) {
	var id string
	err := securecookie.DecodeMulti(sessionCookie, value, &id, s.sessions.codecs...)
	return id, err
}
