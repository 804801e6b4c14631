package handlers

import (
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/web"
)

// watchAvatars keeps s.avatars (web.Avatars.Keep): loaded once Cassandra
// answers, every few minutes and after the broker comes back, and changed
// in between by the hub's invalidations.
func (s *Server) watchAvatars() {
	s.avatars = web.NewAvatars()
	reload := make(chan struct{}, 1)
	s.hub.Watch(func(live.StreamEnd) {}, func() {
		select {
		case reload <- struct{}{}:
		default:
		}
	})
	s.hub.WatchInvalidations(func(inv live.Invalidation) { s.avatars.Apply(inv.Avatars) })
	go func() {
		// Loaded once Cassandra answers, not retried against a store
		// that is not connected yet.
		select {
		case <-s.db.Connected():
		case <-s.closing:
			return
		}
		s.avatars.Keep(s.db.LoadAvatars, reload, s.closing, s.log)
	}()
}

// AvatarVersion is login's picture's version, or "".
func (s *Server) AvatarVersion(login string) string { return s.avatars.Version(login) }
