package chat_test

import (
	"testing"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// A room's header with one person's standing answers about that person
// alone: whether they take part, may see it, and moderate it.
func TestRoomFor(t *testing.T) {
	ada := chat.UserRef{Login: "ada", Firstname: "Ada"}
	open := chat.Room{Name: "lobby", CreatorLogin: "cy", Kind: chat.KindOpen, Admins: []string{"ada", "bob"}, CreatedAt: time.Unix(100, 0)}
	closed := open
	closed.Kind = chat.KindClosed
	for name, tc := range map[string]struct {
		r                        chat.RoomFor
		member, visible, isAdmin bool
	}{
		"OpenOutsider":      {open.For(chat.StandingOf("eve", nil)), false, true, false},
		"ClosedOutsider":    {closed.For(chat.StandingOf("eve", nil)), false, false, false},
		"ClosedMember":      {closed.For(chat.StandingOf("ada", &ada)), true, true, true},
		"AdminWhoLeft":      {closed.For(chat.StandingOf("bob", nil)), false, false, false},
		"CreatorWhoIsThere": {open.For(chat.StandingOf("cy", &chat.UserRef{Login: "cy"})), true, true, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.r.IsMember(); got != tc.member {
				t.Errorf("IsMember = %v, want %v", got, tc.member)
			}
			if got := tc.r.Visible(); got != tc.visible {
				t.Errorf("Visible = %v, want %v", got, tc.visible)
			}
			if got := tc.r.IsAdmin(); got != tc.isAdmin {
				t.Errorf("IsAdmin = %v, want %v", got, tc.isAdmin)
			}
			conv := tc.r.Conversation()
			if conv.ID != "lobby" || !conv.Since.Equal(open.CreatedAt) || conv.Has(tc.r.Login()) != tc.member || len(conv.Members) > 1 {
				t.Errorf("Conversation = %+v", conv)
			}
		})
	}
}

// A room read with every participant knows anyone's standing; a header
// knows no one's; each is a room to RoomOf.
func TestRoomWithAllAndRoomOf(t *testing.T) {
	ada := chat.UserRef{Login: "ada"}
	all := chat.RoomWithAll{Room: chat.Room{Name: "lobby", CreatorLogin: "ada"}, Participants: map[string]chat.UserRef{"ada": ada}}
	if !all.Has("ada") || all.Has("bob") || !all.For("ada").IsAdmin() || all.For("bob").IsMember() {
		t.Errorf("RoomWithAll: %+v", all)
	}
	if got := all.For("ada").Standing; got != (chat.Standing{Login: "ada", Member: true, Ref: ada}) {
		t.Errorf("For(ada) = %+v", got)
	}
	if n := len(all.Room.Conversation().Members); n != 0 {
		t.Errorf("a header's conversation has %d members", n)
	}
	for _, p := range []chat.Place{all, all.Room, all.For("ada")} {
		if r, ok := chat.RoomOf(p); !ok || r.Name != "lobby" {
			t.Errorf("RoomOf(%T) = %v, %v", p, r.Name, ok)
		}
	}
	if _, ok := chat.RoomOf(chat.DM{Address: "ada+bob"}); ok {
		t.Error("a DM is a room")
	}
}
