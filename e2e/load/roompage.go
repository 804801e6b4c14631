package main

// roompage: the latency of a room page as a person sees it, one request
// after another: a page of 50 messages, with a sidebar of 12 rooms and 3
// DMs, everything read (issue 13's "room page p50/p99"). Its figure is
// mostly waiting on Cassandra: the statements the page runs, and whether
// they run one after another or at once.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"
)

func runRoomPage(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("roompage", flag.ExitOnError)
	var c common
	c.register(fs)
	n := fs.Int("n", 1000, "room pages to load, one after another")
	rooms := fs.Int("rooms", 12, "rooms of the reader (the page's room is one of them)")
	dms := fs.Int("dms", 3, "DMs of the reader")
	_ = fs.Parse(args)
	if *n > 100_000 || *rooms > 500 || *dms > 100 {
		return fmt.Errorf("keep -n <= 100000, -rooms <= 500, -dms <= 100")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s", t.Where, t.URL)
	id := runID()
	tr := newTransport(8)
	users, err := signUpMany(ctx, t.URL, "rp"+id+"u", 1+*dms, tr)
	if err != nil {
		return err
	}
	reader := users[0]
	var room string
	for i := 0; i < *rooms; i++ {
		room = fmt.Sprintf("rpage%s%d", id, i)
		if err := setupRoom(ctx, room, users[:1]); err != nil {
			return err
		}
	}
	for i := 0; i < 50; i++ {
		if code, _, err := reader.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("message %d of the page", i)}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("post %d: %d %v", i, code, err)
		}
	}
	for _, partner := range users[1:] {
		logins := []string{reader.login, partner.login}
		sort.Strings(logins)
		path := "/dm/" + logins[0] + "+" + logins[1] + "/messages"
		if code, _, err := partner.post(ctx, path, url.Values{"content": {"hello"}}, true); err != nil || code != http.StatusOK {
			return fmt.Errorf("dm: %d %v", code, err)
		}
		if code, _, err := reader.get(ctx, "/dm/"+logins[0]+"+"+logins[1]); err != nil || code != http.StatusOK {
			return fmt.Errorf("read dm: %d %v", code, err)
		}
	}
	var lat durations
	failed := 0
	for i := 0; i < *n && ctx.Err() == nil; i++ {
		t0 := time.Now()
		code, _, err := reader.get(ctx, "/rooms/"+room)
		if err != nil || code != http.StatusOK {
			failed++
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	fmt.Printf("room page (50 messages; %d rooms, %d DMs in the sidebar), sequential: %s (failed %d)\n", *rooms, *dms, lat.summary(), failed)
	return nil
}
