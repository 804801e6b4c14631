package handlers

import (
	"context"
	"time"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
	"github.com/killrchat/killrchat/web"
)

// avatarsReload is how often an instance loads the whole set of pictures
// again, which bounds what a lost invalidation leaves stale.
const avatarsReload = 5 * time.Minute

// watchAvatars keeps s.avatars: loaded at start (retried until Cassandra
// answers) and every avatarsReload, again after the broker comes back,
// and changed in between by the hub's invalidations.
func (s *Server) watchAvatars() {
	s.avatars = web.NewAvatars()
	reload := make(chan struct{}, 1)
	poke := func() {
		select {
		case reload <- struct{}{}:
		default:
		}
	}
	s.hub.Watch(func(live.StreamEnd) {}, poke)
	s.hub.WatchInvalidations(func(inv live.Invalidation) { s.avatars.Apply(inv.Avatars) })
	go func() {
		wait := time.Duration(0)
		for {
			select {
			case <-s.closing:
				return
			case <-reload:
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			all, err := s.db.LoadAvatars(ctx)
			cancel()
			if err != nil {
				s.log.Warn("avatars: load; retrying", "err", err)
				wait = 5 * time.Second
				continue
			}
			s.avatars.Replace(all)
			wait = avatarsReload
		}
	}()
}

// ViewContext is ctx for rendering: avatars show their pictures.
func (s *Server) ViewContext(ctx context.Context) context.Context {
	return views.WithAvatars(ctx, s.avatars.Version)
}

// AvatarChanged tells every instance (this one at once) that login's
// picture is now version ("" for none).
func (s *Server) AvatarChanged(ctx context.Context, login, version string) {
	change := map[string]string{login: version}
	s.avatars.Apply(change)
	s.Invalidate(ctx, live.Invalidation{Avatars: change, Users: []string{login}})
}

// AvatarVersion is login's picture's version, or "".
func (s *Server) AvatarVersion(login string) string { return s.avatars.Version(login) }
