// This file owns the site's settings: one row, read whole (issue 39: the
// rooms every new person joins).

package store

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"
)

// siteKey is the one site's row of site_settings.
const siteKey = "site"

const (
	selectDefaultRooms = `SELECT default_rooms, default_rooms_set FROM site_settings WHERE site = ?`
	updateDefaultRooms = `UPDATE site_settings SET default_rooms = ?, default_rooms_set = ? WHERE site = ?`
	deleteDefaultRooms = `DELETE default_rooms, default_rooms_set FROM site_settings WHERE site = ?`
)

// DefaultRooms are the room keys every new person joins, and whether an
// administrator ever set them (a site that never did has none stored).
func (s *Store) DefaultRooms(ctx context.Context) ([]string, bool, error) {
	q, err := s.query(ctx, selectDefaultRooms, siteKey)
	if err != nil {
		return nil, false, err
	}
	var (
		rooms []string
		set   time.Time
	)
	if err := q.Scan(&rooms, &set); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, s.fail("read default rooms", err)
	}
	return rooms, !set.IsZero(), nil
}

// SetDefaultRooms replaces the rooms every new person joins with rooms
// (keys, as the caller validated them); an empty list means none.
func (s *Store) SetDefaultRooms(ctx context.Context, rooms []string) error {
	if rooms == nil {
		rooms = []string{}
	}
	return s.exec(ctx, "set default rooms", updateDefaultRooms, rooms, s.Now().UTC(), siteKey)
}

// ForgetDefaultRooms puts the site back to never having chosen its
// default rooms (#general, see service.DefaultRooms).
func (s *Store) ForgetDefaultRooms(ctx context.Context) error {
	return s.exec(ctx, "forget default rooms", deleteDefaultRooms, siteKey)
}
