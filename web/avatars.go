package web

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// AvatarsReload is how often Keep loads the whole set again, which bounds
// what a lost invalidation leaves stale.
const AvatarsReload = 5 * time.Minute

// Avatars says who has an avatar picture, and its version, by login: the
// whole set, held by every instance (a small entry per person with a
// picture), so that pages draw a picture or the initials with no
// statement. It is loaded whole at start and every few minutes, and kept
// current between loads by the hub's invalidations, which carry each
// change to every instance.
type Avatars struct {
	mu     sync.RWMutex
	byUser map[string]string
}

// NewAvatars is an empty set: everyone shows initials until it is loaded.
func NewAvatars() *Avatars { return &Avatars{byUser: map[string]string{}} }

// Version is login's picture's version, or "" for none.
func (a *Avatars) Version(login string) string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byUser[login]
}

// Apply takes changes: a login with its new version, or "" once its
// picture is gone.
func (a *Avatars) Apply(changes map[string]string) {
	if len(changes) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for login, v := range changes {
		if v == "" {
			delete(a.byUser, login)
		} else {
			a.byUser[login] = v
		}
	}
}

// Replace takes a whole new set, as loaded.
func (a *Avatars) Replace(all map[string]string) {
	a.mu.Lock()
	a.byUser = all
	a.mu.Unlock()
}

// Keep loads the set with load at once (retried every 5 s until it
// answers), then every AvatarsReload and whenever reload says so (the
// broker came back), until closing closes.
func (a *Avatars) Keep(load func(context.Context) (map[string]string, error), reload <-chan struct{}, closing <-chan struct{}, log *slog.Logger) {
	wait := time.Duration(0)
	for {
		select {
		case <-closing:
			return
		case <-reload:
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		all, err := load(ctx)
		cancel()
		if err != nil {
			log.Warn("avatars: load; retrying", "err", err)
			wait = 5 * time.Second
			continue
		}
		a.Replace(all)
		wait = AvatarsReload
	}
}
