// This file owns the site row (schema/018_site_admins.cql): its
// administrators and settings, every change of it an LWT, and the audit
// log of administrative actions.

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	siteRowKey = "site"
	selectSite = `SELECT admins, version, established, created_at, signup_policy, signup_domains, room_creation,
		default_rooms, default_rooms_set FROM site WHERE id = ?`
	// A site is claimed once created_at is set: the row may exist before
	// with settings only (default rooms chosen from the command line).
	claimSite = `UPDATE site SET admins = ?, version = ?, created_at = ? WHERE id = ? IF created_at = null`
	// establishSite marks a site that had people before it had a row: no
	// sign-up claims it.
	establishSite = `UPDATE site SET established = true, created_at = ? WHERE id = ? IF created_at = null`
	updateAdmins  = `UPDATE site SET admins = ?, version = ? WHERE id = ? IF version = ?`
	updateSite    = `UPDATE site SET signup_policy = ?, signup_domains = ?, room_creation = ?, version = ? WHERE id = ? IF version = ?`

	insertAudit = `INSERT INTO admin_audit (year, id, actor, action, target, detail) VALUES (?, ?, ?, ?, ?, ?)`
	selectAudit = `SELECT id, actor, action, target, detail FROM admin_audit WHERE year = ? AND id < ? LIMIT ?`

	// siteRetries bounds the LWT rounds of one change of the site row
	// that others keep changing under it.
	siteRetries = 30
)

// Site is the site's row: its administrators and settings. A site with
// no row yet is a zero Site (Claimed false), not an error.
func (s *Store) Site(ctx context.Context) (chat.Site, error) {
	return s.site(ctx, false)
}

func (s *Store) site(ctx context.Context, serial bool) (chat.Site, error) {
	var (
		q   *gocql.Query
		err error
	)
	if serial {
		q, err = s.serialRead(ctx, selectSite, siteRowKey)
	} else {
		q, err = s.query(ctx, selectSite, siteRowKey)
	}
	if err != nil {
		return chat.Site{}, err
	}
	var (
		site                 chat.Site
		established          bool
		created, defaultsSet time.Time
	)
	err = q.Scan(&site.Admins, (*gocql.UUID)(&site.Version), &established, &created,
		&site.SignupPolicy, &site.SignupDomains, &site.RoomCreation, &site.DefaultRooms, &defaultsSet)
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.Site{}, nil
	}
	if err != nil {
		return chat.Site{}, s.fail("read site", err)
	}
	site.Claimed, site.CreatedAt, site.DefaultRoomsSet = !created.IsZero(), created, !defaultsSet.IsZero()
	slices.Sort(site.Admins)
	return site, nil
}

// ClaimSite makes login the site's first administrator if the site is
// not claimed yet ("IF created_at = null": of racing first sign-ups, one
// wins), and reports whether it did.
func (s *Store) ClaimSite(ctx context.Context, login string) (bool, error) {
	login = chat.NameKey(login)
	version := gocql.TimeUUID()
	return s.lwt(ctx, "claim site", claimSite,
		[]any{[]string{login}, version, s.Now().UTC(), siteRowKey}, nil,
		func(ctx context.Context) (bool, error) {
			site, err := s.site(ctx, true)
			return site.Version == chat.ID(version), err
		})
}

// EstablishSite gives the site a row with no administrator if it has
// none: a site that had people before administrators existed, where no
// sign-up becomes one by itself.
func (s *Store) EstablishSite(ctx context.Context) error {
	_, err := s.lwt(ctx, "establish site", establishSite, []any{s.Now().UTC(), siteRowKey}, nil,
		func(ctx context.Context) (bool, error) { return true, nil })
	return err
}

// SetAdmin makes login an administrator of the site (admin true) or no
// longer one, by an LWT on the site row's version, retried while others
// change it. It returns the site after the change; chat.ErrLastAdmin if
// login is the only administrator and admin is false: the site never
// has none.
func (s *Store) SetAdmin(ctx context.Context, login string, admin bool) (chat.Site, error) {
	login = chat.NameKey(login)
	for range siteRetries {
		site, err := s.site(ctx, true)
		if err != nil {
			return chat.Site{}, err
		}
		if !site.Claimed {
			if !admin {
				return site, nil
			}
			ok, err := s.ClaimSite(ctx, login)
			if err != nil || ok {
				if ok {
					site, err = s.site(ctx, true)
				}
				return site, err
			}
			continue
		}
		if site.IsAdmin(login) == admin {
			return site, nil
		}
		admins := slices.DeleteFunc(slices.Clone(site.Admins), func(a string) bool { return a == login })
		if admin {
			admins = append(admins, login)
		} else if len(admins) == 0 {
			return site, fmt.Errorf("store: demote %q: %w", login, chat.ErrLastAdmin)
		}
		applied, err := s.changeSite(ctx, "set admins", updateAdmins, site.Version, admins)
		if err != nil {
			return chat.Site{}, err
		}
		if applied {
			return s.site(ctx, true)
		}
	}
	return chat.Site{}, fmt.Errorf("store: set admin %q: %w", login, chat.ErrConflict)
}

// SaveSettings sets the site's sign-up policy, its domains and who
// creates rooms, by an LWT on the row's version. chat.ErrNotFound if
// the site has no row (no administrator has ever been made).
func (s *Store) SaveSettings(ctx context.Context, policy string, domains []string, rooms string) (chat.Site, error) {
	for range siteRetries {
		site, err := s.site(ctx, true)
		if err != nil {
			return chat.Site{}, err
		}
		if !site.Claimed {
			return site, fmt.Errorf("store: save settings: no site row: %w", chat.ErrNotFound)
		}
		applied, err := s.changeSite(ctx, "save settings", updateSite, site.Version, policy, domains, rooms)
		if err != nil {
			return chat.Site{}, err
		}
		if applied {
			return s.site(ctx, true)
		}
	}
	return chat.Site{}, fmt.Errorf("store: save settings: %w", chat.ErrConflict)
}

// changeSite runs stmt (whose last binds are version, id, and the
// condition's version) with a new version, IF the row's is still read.
func (s *Store) changeSite(ctx context.Context, op, stmt string, read chat.ID, values ...any) (bool, error) {
	version := gocql.TimeUUID()
	values = append(values, version, siteRowKey, guardValue(read))
	return s.lwt(ctx, op, stmt, values, nil,
		func(ctx context.Context) (bool, error) {
			site, err := s.site(ctx, true)
			return site.Version == chat.ID(version), err
		})
}

// Audit records an administrative action: actor did action to target.
func (s *Store) Audit(ctx context.Context, actor, action, target, detail string) error {
	id := gocql.TimeUUID()
	return s.exec(ctx, "audit "+action, insertAudit, id.Time().UTC().Year(), id, actor, action, target, detail)
}

// AuditLog is up to n entries of the audit log before the entry before
// (zero: the newest), newest first, walking back a year at a time to
// since's year.
func (s *Store) AuditLog(ctx context.Context, before chat.ID, since time.Time, n int) ([]chat.AuditEntry, error) {
	if before.IsZero() {
		before = chat.MaxIDAt(s.Now().Add(time.Minute))
	}
	var out []chat.AuditEntry
	for year := before.Time().UTC().Year(); year >= since.UTC().Year() && len(out) < n; year-- {
		q, err := s.query(ctx, selectAudit, year, gocql.UUID(before), n-len(out))
		if err != nil {
			return nil, err
		}
		iter := q.Iter()
		var e chat.AuditEntry
		for iter.Scan((*gocql.UUID)(&e.ID), &e.Actor, &e.Action, &e.Target, &e.Detail) {
			out = append(out, e)
			e = chat.AuditEntry{}
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("read audit log", err)
		}
		before = chat.MaxIDAt(time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Microsecond))
	}
	return out, nil
}
