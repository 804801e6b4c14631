package main

// bigroom: what a room's size costs (issue 21, "rooms of 10,000 members").
// Two rooms in one run, a small one (-small members) and a big one
// (-members): in each, people join and leave through HTTP, a member posts
// right after a join dropped the room from the caches (cold) and again at
// once (warm), and loads the room page. It prints p50 and p99 of each, the
// big room's figure over the small one's, the big room's member rows, and
// the partition sizes nodetool tablestats gives for rooms after a flush.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store/inspect"
	"github.com/killrchat/killrchat/store/storetest"
)

// fillBatch is how many participants one setup LWT adds.
const fillBatch = 200

func runBigRoom(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bigroom", flag.ExitOnError)
	var c common
	c.register(fs)
	members := fs.Int("members", 10_000, "members of the big room")
	small := fs.Int("small", 10, "members of the small room")
	n := fs.Int("n", 200, "samples of each operation in each room")
	joiners := fs.Int("joiners", 20, "people who take turns joining and leaving")
	_ = fs.Parse(args)
	if *members < 2 || *members > 200_000 || *small < 2 || *small > *members || *n < 1 || *n > 100_000 || *joiners < 1 || *joiners > 1000 {
		return fmt.Errorf("keep 2 <= -small <= -members <= 200000, 1 <= -n <= 100000, 1 <= -joiners <= 1000")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Keyspace == "" {
		return errors.New("bigroom fills the rooms in Cassandra: give -keyspace with -url")
	}
	logf("app %s at %s", t.Where, t.URL)
	sess, err := inspect.Open(storetest.Hosts(), inspect.Options{Keyspace: t.Keyspace, Timeout: 20 * time.Second, Default: true})
	if err != nil {
		return err
	}
	defer sess.Close()

	id := runID()
	users, err := signUpMany(ctx, t.URL, "br"+id+"u", 1+*joiners, newTransport(8))
	if err != nil {
		return err
	}
	type result struct {
		room                               string
		size                               int
		join, leave, cold, warm, page, all durations
	}
	var results []result
	for _, size := range []int{*small, *members} {
		room := fmt.Sprintf("br%s%d", id, size)
		if err := setupRoom(ctx, room, users[:1]); err != nil {
			return err
		}
		t0 := time.Now()
		if err := fillMembers(ctx, sess, room, size-1); err != nil {
			return err
		}
		logf("%s: %d members added in %v", room, size-1, time.Since(t0).Round(time.Millisecond))
		r := result{room: room, size: size}
		owner := users[0]
		timed := func(into *durations, what string, do func() (int, string, error), want int) error {
			t0 := time.Now()
			code, body, err := do()
			if err != nil || code != want {
				return fmt.Errorf("%s in %s: %d %v %.200s", what, room, code, err, body)
			}
			*into = append(*into, time.Since(t0))
			return nil
		}
		for i := 0; i < *n && ctx.Err() == nil; i++ {
			j := users[1+i%*joiners]
			post := func() (int, string, error) {
				return owner.post(ctx, "/rooms/"+room+"/messages", url.Values{"content": {fmt.Sprintf("message %d", i)}}, false)
			}
			for _, step := range []struct {
				into *durations
				what string
				do   func() (int, string, error)
				want int
			}{
				{&r.join, "join", func() (int, string, error) { return j.post(ctx, "/rooms/"+room+"/join", nil, false) }, http.StatusSeeOther},
				{&r.cold, "post (cold)", post, http.StatusSeeOther},
				{&r.warm, "post (warm)", post, http.StatusSeeOther},
				{&r.page, "room page", func() (int, string, error) { return owner.get(ctx, "/rooms/"+room) }, http.StatusOK},
				{&r.leave, "leave", func() (int, string, error) { return j.post(ctx, "/rooms/"+room+"/leave", nil, false) }, http.StatusSeeOther},
			} {
				if err := timed(step.into, step.what, step.do, step.want); err != nil {
					return err
				}
			}
		}
		results = append(results, r)
	}
	if len(results) != 2 {
		return ctx.Err()
	}
	fmt.Printf("%-12s %28s %28s %8s\n", "operation", fmt.Sprintf("%d members p50/p99", results[0].size),
		fmt.Sprintf("%d members p50/p99", results[1].size), "p50 ×")
	row := func(name string, a, b durations) {
		sa, sb := a.sorted(), b.sorted()
		fmt.Printf("%-12s %28s %28s %8.2f\n", name, ms(sa.pct(.5))+" / "+ms(sa.pct(.99)), ms(sb.pct(.5))+" / "+ms(sb.pct(.99)),
			float64(sb.pct(.5))/float64(sa.pct(.5)))
	}
	s, b := results[0], results[1]
	row("join", s.join, b.join)
	row("leave", s.leave, b.leave)
	row("post cold", s.cold, b.cold)
	row("post warm", s.warm, b.warm)
	row("room page", s.page, b.page)

	rows, bytes, err := memberRows(ctx, sess, b.room)
	if err != nil {
		return err
	}
	fmt.Printf("the big room's partition: %d member rows, %d bytes of member values serialised (each row its own cell)\n", rows, bytes)
	// Cassandra's own figure, from the flushed SSTables.
	if out, err := exec.CommandContext(ctx, "scripts/cassandra.sh", "nodetool", "flush", t.Keyspace, "rooms").CombinedOutput(); err != nil {
		fmt.Printf("nodetool flush: %v: %s\n", err, out)
		return nil
	}
	out, err := exec.CommandContext(ctx, "scripts/cassandra.sh", "nodetool", "tablestats", t.Keyspace+".rooms").CombinedOutput()
	if err != nil {
		fmt.Printf("nodetool tablestats: %v: %s\n", err, out)
		return nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "partition maximum bytes") || strings.Contains(line, "partition mean bytes") {
			fmt.Println("rooms (nodetool tablestats):", strings.TrimSpace(line))
		}
	}
	return nil
}

// memberRows counts the member rows of room and the bytes of their values.
func memberRows(ctx context.Context, sess *inspect.DB, room string) (rows, bytes int, err error) {
	all, err := sess.MemberRows(ctx, room)
	for _, r := range all {
		rows++
		bytes += len(r.Login) + cellBytes(r.Member)
	}
	return rows, bytes, err
}

// fillMembers adds n made-up participants to room, fillBatch at a time,
// each batch one LWT (every write to a room's partition is one).
func fillMembers(ctx context.Context, sess *inspect.DB, room string, n int) error {
	return sess.FillMembers(ctx, room, n, fillBatch, func(i int) chat.UserRef {
		return chat.UserRef{Login: fmt.Sprintf("%sm%05d", room, i), Firstname: "Member", Lastname: fmt.Sprintf("Number %d", i)}
	})
}

// cellBytes is the size of a member's user_ref as the native protocol
// serialises it: three text fields with an int length each.
func cellBytes(u chat.UserRef) int {
	return 3*4 + len(u.Login) + len(u.Firstname) + len(u.Lastname)
}
