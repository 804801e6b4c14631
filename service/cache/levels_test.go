package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/service/cache"
)

// TestLevelsCache: a conversation's levels are read once and kept; a
// change of a level in it, the room's drop and a broker gap each make the
// next read go to storage, and nothing else does.
func TestLevelsCache(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	stored := map[string]map[string]chat.Level{"lobby": {"ada": chat.Level("none")}, "kitchen": {}}
	reads := map[string]int{}
	read := func(_ context.Context, conv string) (map[string]chat.Level, error) {
		mu.Lock()
		defer mu.Unlock()
		reads[conv]++
		out := map[string]chat.Level{}
		for k, v := range stored[conv] {
			out[k] = v
		}
		return out, nil
	}
	hub := live.NewLocalHub()
	defer hub.Close()
	lv := cache.NewLevels(read, hub, time.Hour, 100)
	get := func(conv string) map[string]chat.Level {
		t.Helper()
		m, err := lv.ConversationLevels(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := func(conv string, n int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if reads[conv] != n {
			t.Fatalf("%s read %d times from storage, want %d", conv, reads[conv], n)
		}
	}

	get("lobby")
	get("lobby")
	get("kitchen")
	want("lobby", 1)
	want("kitchen", 1)

	mu.Lock()
	stored["lobby"]["bob"] = chat.Level("mentions")
	mu.Unlock()
	_ = hub.Invalidate(ctx, live.Invalidation{Levels: []string{"lobby"}})
	if got := get("lobby"); got["bob"] != "mentions" || got["ada"] != "none" {
		t.Fatalf("after a level's change: %v", got)
	}
	want("lobby", 2)
	want("kitchen", 1)

	_ = hub.Invalidate(ctx, live.Invalidation{Users: []string{"ada"}})
	get("lobby")
	want("lobby", 2)

	_ = hub.Invalidate(ctx, live.Invalidation{Rooms: []string{"kitchen"}})
	get("kitchen")
	get("lobby")
	want("kitchen", 2)
	want("lobby", 2)

	hub.BrokerLost()
	hub.BrokerBack()
	get("kitchen")
	get("lobby")
	want("kitchen", 3)
	want("lobby", 3)
}

// TestLevelsCacheOff: a negative TTL reads storage every time.
func TestLevelsCacheOff(t *testing.T) {
	n := 0
	hub := live.NewLocalHub()
	defer hub.Close()
	lv := cache.NewLevels(func(context.Context, string) (map[string]chat.Level, error) { n++; return nil, nil }, hub, -1, 100)
	for range 3 {
		_, _ = lv.ConversationLevels(context.Background(), "lobby")
	}
	if n != 3 {
		t.Fatalf("%d reads, want 3", n)
	}
}
