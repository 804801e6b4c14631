package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/fence"
)

// recordingBus is a Bus that keeps what it was handed.
type recordingBus struct {
	mu        sync.Mutex
	published []live.Event
	ended     []live.StreamEnd
	inv       []live.Invalidation
}

func (b *recordingBus) Publish(_ context.Context, ev live.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.published = append(b.published, ev)
	return nil
}

func (b *recordingBus) Invalidate(_ context.Context, inv live.Invalidation) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inv = append(b.inv, inv)
	return nil
}

func (b *recordingBus) Fence(context.Context, string, live.Invalidation) error { return nil }

func (b *recordingBus) EndStreams(_ context.Context, end live.StreamEnd) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = append(b.ended, end)
	return nil
}

func (b *recordingBus) Enter(string) *fence.Pass { return nil }

// htmlRenderer renders every event as its kind.
type htmlRenderer struct{}

func (htmlRenderer) Message(context.Context, chat.Conversation, chat.Message) ([]byte, error) {
	return []byte("message"), nil
}

func (htmlRenderer) Event(_ context.Context, ev live.Event) ([]byte, error) {
	if ev.Kind == live.KindRoomDeleted {
		return nil, nil
	}
	return []byte(ev.Kind), nil
}

func (htmlRenderer) Edited(_ context.Context, _ chat.Conversation, m chat.Message) ([]byte, error) {
	return []byte("edited " + m.Content), nil
}

func (htmlRenderer) Deleted(m chat.Message) []byte { return []byte("deleted " + m.ID.String()) }

func (htmlRenderer) Reaction(ch chat.Change) ([]byte, error) {
	return []byte("reaction " + ch.Emoji), nil
}

func newBusOnly(bus *recordingBus) *Service {
	return New(Deps{Bus: bus, Renderer: htmlRenderer{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SessionDigest: func(id string) string {
			if id == "" {
				return ""
			}
			return "digest-" + id
		}})
}

func TestEndStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  live.StreamEnd
		want []live.StreamEnd
	}{
		{"NoOne", live.StreamEnd{Sessions: []string{"a"}}, nil},
		{"NoSessions", live.StreamEnd{Login: "bob", Sessions: []string{}}, nil},
		{"Room", live.StreamEnd{Login: "bob", Room: "ops"}, []live.StreamEnd{{Login: "bob", Room: "ops"}}},
		{"SessionsDigested", live.StreamEnd{Login: "bob", Sessions: []string{"a", "b"}, Except: "c"},
			[]live.StreamEnd{{Login: "bob", Sessions: []string{"digest-a", "digest-b"}, Except: "digest-c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bus := &recordingBus{}
			newBusOnly(bus).EndStreams(context.Background(), tc.end)
			if len(bus.ended) != len(tc.want) {
				t.Fatalf("ended %+v, want %+v", bus.ended, tc.want)
			}
			for i, got := range bus.ended {
				w := tc.want[i]
				if got.Login != w.Login || got.Room != w.Room || got.Except != w.Except || !slices.Equal(got.Sessions, w.Sessions) {
					t.Errorf("ended %+v, want %+v", got, w)
				}
			}
		})
	}
}

func TestPublishRendersOnlyWhatHasNoHTML(t *testing.T) {
	t.Parallel()
	bus := &recordingBus{}
	s := newBusOnly(bus)
	ctx := context.Background()
	s.Publish(ctx, live.Event{Kind: live.KindParticipants, Conversation: "ops"})
	s.Publish(ctx, live.Event{Kind: live.KindMessage, Conversation: "ops", HTML: []byte("mine")})
	s.Publish(ctx, live.Event{Kind: live.KindRoomDeleted, Conversation: "ops"})
	var got []string
	for _, ev := range bus.published {
		got = append(got, string(ev.HTML))
	}
	if want := []string{live.KindParticipants, "mine", ""}; !slices.Equal(got, want) {
		t.Errorf("published HTML %q, want %q", got, want)
	}
}

func TestPostOnce(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	rp := newRecentPosts(2, time.Minute, func() time.Time { return now })
	ctx := context.Background()
	saves := 0
	save := func(context.Context) (chat.Message, error) {
		saves++
		return chat.Message{Content: "m" + string(rune('0'+saves))}, nil
	}
	k := postKey{author: "ann", room: "ops", clientID: "x"}

	t.Run("RepeatGetsTheFirst", func(t *testing.T) {
		first, _ := rp.post(ctx, k, save)
		again, _ := rp.post(ctx, k, save)
		if saves != 1 || again.Content != first.Content {
			t.Errorf("%d saves, repeat %q, first %q", saves, again.Content, first.Content)
		}
	})
	t.Run("NoClientIDIsNeverRemembered", func(t *testing.T) {
		before := saves
		rp.post(ctx, postKey{author: "ann", room: "ops"}, save)
		rp.post(ctx, postKey{author: "ann", room: "ops"}, save)
		if saves != before+2 {
			t.Errorf("%d saves, want 2", saves-before)
		}
	})
	t.Run("AFailureIsForgotten", func(t *testing.T) {
		fk := postKey{author: "ann", room: "ops", clientID: "y"}
		if _, err := rp.post(ctx, fk, func(context.Context) (chat.Message, error) { return chat.Message{}, errors.New("down") }); err == nil {
			t.Fatal("the failure was not returned")
		}
		before := saves
		if _, err := rp.post(ctx, fk, save); err != nil || saves != before+1 {
			t.Errorf("retry: err %v, %d saves", err, saves-before)
		}
	})
	t.Run("ExpiresAfterTheTTL", func(t *testing.T) {
		now = now.Add(2 * time.Minute)
		before := saves
		rp.post(ctx, k, save)
		if saves != before+1 {
			t.Errorf("an expired key was not posted again")
		}
	})
}
