package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
)

// TestIndexerCatchesUp: messages the indexer's queue could not take are
// found once it has caught up on their day bucket, which it reads again
// whole.
func TestIndexerCatchesUp(t *testing.T) {
	ada := newUser(t, unique("ada")).Ref()
	room, err := db.CreateRoom(context.Background(), ada, chat.NewRoom{Name: unique("behind")})
	if err != nil {
		t.Fatal(err)
	}
	ix := store.NewBehindIndexer(db.Store)
	word := unique("narwhal")
	for i := range 30 {
		m, err := db.PostMessage(context.Background(), room, ada, fmt.Sprintf("%s %d", word, i))
		if err != nil {
			t.Fatal(err)
		}
		ix.Index(room.Conversation(), m)
	}
	if ix.Behind() != 1 {
		t.Fatalf("%d buckets behind, want 1", ix.Behind())
	}
	q, _ := chat.ParseSearch(word)
	search := func() int {
		found, more, _, err := db.Search(context.Background(), []chat.Conversation{room.Conversation()}, q, chat.ID{}, 50)
		if err != nil || more {
			t.Fatal(err, more)
		}
		return len(found)
	}
	if n := search(); n != 0 {
		t.Fatalf("%d found before catching up", n)
	}
	ix.CatchUp()
	if n := search(); n != 30 || ix.Behind() != 0 {
		t.Errorf("after catching up: %d found, %d behind", n, ix.Behind())
	}
}
