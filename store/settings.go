// This file owns the site's settings that live beside its administrators
// in the site row (store/site.go): the rooms every new person joins
// (issue 39). They were a table of their own, site_settings (schema 019),
// until schema 020 made the site one row; mergeSiteSettings moves a
// choice made then, once.

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	// Every write to the site row is an LWT (its admins are changed by
	// LWT: a plain write beside them is unsafe), on its version.
	updateDefaultRooms = `UPDATE site SET default_rooms = ?, default_rooms_set = ?, version = ? WHERE id = ? IF version = ?`

	// siteSettingsMove names the move of site_settings into site in
	// data_moves.
	siteSettingsMove   = "020_site_settings_into_site"
	selectOldSettings  = `SELECT default_rooms, default_rooms_set FROM site_settings WHERE site = ?`
	moveDefaultRooms   = `UPDATE site SET default_rooms = ?, default_rooms_set = ?, version = ? WHERE id = ? IF default_rooms_set = null`
	oldSiteSettingsRow = "site"
)

// DefaultRooms are the room keys every new person joins, and whether an
// administrator ever set them (a site that never did has none stored).
func (s *Store) DefaultRooms(ctx context.Context) ([]string, bool, error) {
	site, err := s.Site(ctx)
	if err != nil {
		return nil, false, err
	}
	return site.DefaultRooms, site.DefaultRoomsSet, nil
}

// SetDefaultRooms replaces the rooms every new person joins with rooms
// (keys, as the caller validated them); an empty list means none.
func (s *Store) SetDefaultRooms(ctx context.Context, rooms []string) error {
	if rooms == nil {
		rooms = []string{}
	}
	return s.changeDefaultRooms(ctx, "set default rooms", rooms, s.Now().UTC())
}

// ForgetDefaultRooms puts the site back to never having chosen its
// default rooms (#general, see service.DefaultRooms).
func (s *Store) ForgetDefaultRooms(ctx context.Context) error {
	return s.changeDefaultRooms(ctx, "forget default rooms", nil, nil)
}

// changeDefaultRooms writes the default rooms and when they were set, by
// an LWT on the row's version, retried while others change it.
func (s *Store) changeDefaultRooms(ctx context.Context, op string, rooms []string, set any) error {
	for range siteRetries {
		site, err := s.site(ctx, true)
		if err != nil {
			return err
		}
		applied, err := s.changeSite(ctx, op, updateDefaultRooms, site.Version, rooms, set)
		if err != nil || applied {
			return err
		}
	}
	return fmt.Errorf("store: %s: %w", op, chat.ErrConflict)
}

// mergeSiteSettings copies a choice of default rooms from site_settings
// into the site row, once (data_moves), unless the row has one already
// (made by this version since). It is idempotent.
func (s *Store) mergeSiteSettings(ctx context.Context, sess *gocql.Session) error {
	var done time.Time
	err := sess.Query(selectMove, siteSettingsMove).WithContext(ctx).Scan(&done)
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("store: merge site settings: %w", err)
	}
	var (
		rooms []string
		set   time.Time
	)
	err = sess.Query(selectOldSettings, oldSiteSettingsRow).WithContext(ctx).Scan(&rooms, &set)
	switch {
	case errors.Is(err, gocql.ErrNotFound) || (err == nil && set.IsZero()):
	case err != nil:
		return fmt.Errorf("store: merge site settings: %w", err)
	default:
		if rooms == nil {
			rooms = []string{}
		}
		if _, err := sess.Query(moveDefaultRooms, rooms, set, gocql.TimeUUID(), siteRowKey).WithContext(ctx).
			SerialConsistency(s.cfg.SerialConsistency).MapScanCAS(map[string]any{}); err != nil {
			return fmt.Errorf("store: merge site settings: %w", err)
		}
		s.log.Info("store: site settings merged into the site row", "default_rooms", rooms)
	}
	return sess.Query(insertMove, siteSettingsMove, time.Now()).WithContext(ctx).Exec()
}
