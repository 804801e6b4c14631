package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// indexRows is every message_terms row of convs, as sorted strings.
func indexRows(t *testing.T, convs ...string) []string {
	t.Helper()
	sess, err := db.Session()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, conv := range convs {
		iter := sess.Query(`SELECT term, month, message_id FROM message_terms WHERE conversation = ? ALLOW FILTERING`, conv).PageSize(5000).Iter()
		var term string
		var month int
		var id chat.ID
		for iter.Scan(&term, &month, (*gocql.UUID)(&id)) {
			out = append(out, fmt.Sprintf("%s|%s|%d|%s", conv, term, month, id))
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// TestIndexBackfill: 10,000 messages stored without the index, over 40
// days in two rooms and a DM, are indexed by the backfill; a second run
// leaves the same index; the same job run again resumes past them.
func TestIndexBackfill(t *testing.T) {
	ctx := context.Background()
	ada, bob := newUser(t, unique("ada")), newUser(t, unique("bob"))
	st, err := db.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	clock := time.Date(2025, 2, 10, 8, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	one, err := st.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("old")})
	if err != nil {
		t.Fatal(err)
	}
	two, err := st.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: unique("older")})
	if err != nil {
		t.Fatal(err)
	}
	dm := chat.DM{Address: ada.Login + "+" + bob.Login, Members: []chat.UserRef{ada.Ref(), bob.Ref()}}
	places := []chat.Place{one, two, dm}
	words := []string{"deploy", "runbook", "coffee", "release", "incident", "lunch", "review"}
	const total = 10_000
	expected := 0
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range total {
		mu.Lock()
		clock = clock.Add(40 * 24 * time.Hour / total)
		mu.Unlock()
		in := places[i%3]
		text := fmt.Sprintf("%s %s number%d", words[i%7], words[(i/7)%7], i%50)
		m, err := st.DraftMessage(in, ada.Ref(), text)
		if err != nil {
			t.Fatal(err)
		}
		expected += len(chat.Terms(text)) + 1 // and its author
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := st.SaveMessage(ctx, in, m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := st.RecordDMMessage(ctx, dm, chat.Message{ID: chat.ID(gocql.TimeUUID()), Author: ada.Ref(), Content: "last"}); err != nil {
		t.Fatal(err)
	}
	convs := []string{one.Name, two.Name, dm.Conversation().ID}
	if rows := indexRows(t, convs...); len(rows) != 0 {
		t.Fatalf("%d index rows before the backfill", len(rows))
	}

	job := unique("job")
	var progress []store.BackfillStats
	stats, err := st.IndexBackfill(ctx, store.Backfill{Job: job, Progress: func(s store.BackfillStats) { progress = append(progress, s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first run: %+v", stats)
	if stats.Messages < total || len(progress) == 0 || progress[len(progress)-1] != stats {
		t.Errorf("first run indexed %d messages (progress %d reports)", stats.Messages, len(progress))
	}
	first := indexRows(t, convs...)
	if len(first) != expected {
		t.Errorf("%d index rows, want %d", len(first), expected)
	}
	q, _ := chat.ParseSearch("deploy runbook number7")
	found, _, _, err := st.Search(ctx, []chat.Conversation{one.Conversation(), two.Conversation(), dm.Conversation()}, q, chat.ID{}, 20)
	if err != nil || len(found) == 0 {
		t.Errorf("search after the backfill: %d found, %v", len(found), err)
	}

	again, err := st.IndexBackfill(ctx, store.Backfill{Job: unique("job")})
	if err != nil {
		t.Fatal(err)
	}
	if second := indexRows(t, convs...); !slices.Equal(first, second) {
		t.Errorf("a second run changed the index: %d rows, then %d", len(first), len(second))
	}
	resumed, err := st.IndexBackfill(ctx, store.Backfill{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Messages >= total {
		t.Errorf("the same job again indexed %d messages (a new job %d)", resumed.Messages, again.Messages)
	}
}
