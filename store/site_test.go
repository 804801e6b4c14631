package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// TestSiteIsOneRow (issue 33): the default rooms live in the site row
// beside its administrators. Settings written before anyone claimed the
// site leave it unclaimed (the first sign-up still becomes its
// administrator), and a choice made under schema 019 in site_settings is
// moved into the row once, never over a newer one.
func TestSiteIsOneRow(t *testing.T) {
	ctx := context.Background()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	exec := func(stmt string, args ...any) {
		t.Helper()
		if err := sess.Query(stmt, args...).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// An empty site: no row, nothing moved yet.
	exec(`DELETE FROM site WHERE id = 'site' IF EXISTS`)
	exec(`DELETE FROM data_moves WHERE name = '020_site_settings_into_site'`)
	t.Cleanup(func() { exec(`DELETE FROM site WHERE id = 'site' IF EXISTS`) })

	if err := db.SetDefaultRooms(ctx, []string{"lobby"}); err != nil {
		t.Fatal(err)
	}
	site, err := db.Site(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if site.Claimed || !site.DefaultRoomsSet || !slices.Equal(site.DefaultRooms, []string{"lobby"}) {
		t.Fatalf("the site after default rooms alone: %+v", site)
	}
	first := newUser(t, unique("claim"))
	if ok, err := db.ClaimSite(ctx, first.Login); err != nil || !ok {
		t.Fatalf("the first claim of a site with settings only: %v %v", ok, err)
	}
	if ok, err := db.ClaimSite(ctx, unique("late")); err != nil || ok {
		t.Fatalf("a second claim: %v %v", ok, err)
	}
	if err := db.ForgetDefaultRooms(ctx); err != nil {
		t.Fatal(err)
	}
	site, err = db.Site(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !site.Claimed || !site.IsAdmin(first.Login) || site.DefaultRoomsSet || len(site.DefaultRooms) != 0 {
		t.Fatalf("the site after a claim and forgetting its default rooms: %+v", site)
	}

	// A choice made under 019 moves in, once.
	set := time.Now().UTC().Truncate(time.Millisecond)
	exec(`INSERT INTO site_settings (site, default_rooms, default_rooms_set) VALUES ('site', ['general', 'news'], ?)`, set)
	if err := db.MergeSiteSettings(ctx); err != nil {
		t.Fatal(err)
	}
	rooms, chosen, err := db.DefaultRooms(ctx)
	if err != nil || !chosen || !slices.Equal(rooms, []string{"general", "news"}) {
		t.Fatalf("the default rooms moved from site_settings: %v %v %v", rooms, chosen, err)
	}
	if site, _ := db.Site(ctx); !site.IsAdmin(first.Login) {
		t.Fatalf("the move changed the administrators: %+v", site)
	}
	// Chosen again since: a second run of the move (another instance
	// that has not seen data_moves yet) leaves the new choice.
	if err := db.SetDefaultRooms(ctx, []string{"welcome"}); err != nil {
		t.Fatal(err)
	}
	exec(`DELETE FROM data_moves WHERE name = '020_site_settings_into_site'`)
	if err := db.MergeSiteSettings(ctx); err != nil {
		t.Fatal(err)
	}
	if rooms, _, _ := db.DefaultRooms(ctx); !slices.Equal(rooms, []string{"welcome"}) {
		t.Fatalf("the move overwrote a newer choice: %v", rooms)
	}
	// The site's admins stay guarded by its version: a demotion of the
	// last administrator is still refused after settings changed it.
	if _, err := db.SetAdmin(ctx, first.Login, false); err == nil {
		t.Fatal("the last administrator was demoted")
	} else if !errors.Is(err, chat.ErrLastAdmin) {
		t.Fatalf("demote the last administrator: %v", err)
	}
}
