package typing

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/live"
)

// typingEvery is the least time between two typing events of one person
// in one conversation (per instance; the page keeps the same pace).
const typingEvery = 3 * time.Second

// Core is what typing uses of the HTTP core (handlers.Server): the
// conversation a request names, and the hub that carries the event.
type Core interface {
	ConversationOf(c echo.Context) (handlers.Conversation, error)
	Publish(ctx context.Context, ev live.Event)
}

// routes are the typing routes.
type routes struct {
	core Core
	mu   sync.Mutex
	last map[[2]string]time.Time // (login, conversation) -> last event sent
}

// Register lists the typing routes.
func Register(r handlers.Routes, core Core) {
	s := &routes{core: core, last: map[[2]string]time.Time{}}
	r.Auth.POST("/rooms/:room/typing", s.typing)
	r.Auth.POST("/dm/:logins/typing", s.typing, handlers.CanonicalDM)
}

// typing publishes that the caller is typing in the conversation of the
// path, for its members only (anyone else gets 404), at most once per
// typingEvery: a repeat within it is answered and dropped.
func (s *routes) typing(c echo.Context) error {
	cv, err := s.core.ConversationOf(c)
	if err != nil {
		return err
	}
	me := handlers.MustUser(c)
	if !cv.Member(me.Login) {
		return chat.ErrNotFound
	}
	if !s.due(me.Login, cv.ID, time.Now()) {
		return c.NoContent(http.StatusNoContent)
	}
	name := me.Name()
	if name == "" {
		name = me.Login
	}
	data, err := json.Marshal(struct {
		Login string `json:"login"`
		Name  string `json:"name"`
	}{me.Login, name})
	if err != nil {
		return err
	}
	s.core.Publish(c.Request().Context(), live.Event{Kind: live.KindTyping, Conversation: cv.ID, HTML: data})
	return c.NoContent(http.StatusNoContent)
}

// due says whether login's typing in conv may be published at now, and
// if so notes it; entries older than typingEvery are dropped as it goes,
// so the map holds only the people typing now.
func (s *routes) due(login, conv string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{login, conv}
	if at, ok := s.last[k]; ok && now.Sub(at) < typingEvery {
		return false
	}
	if len(s.last) > 1000 {
		for k, at := range s.last {
			if now.Sub(at) >= typingEvery {
				delete(s.last, k)
			}
		}
	}
	s.last[k] = now
	return true
}
