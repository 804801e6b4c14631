package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

func TestRoomNamesWithPrefix(t *testing.T) {
	ctx := context.Background()
	ada := newUser(t, unique("ada"))
	stem := unique("Qz")
	var made []string
	for _, name := range []string{stem + "Alpha", stem + "alpine", stem + "Beta"} {
		r, err := db.CreateRoom(ctx, ada.Ref(), chat.NewRoom{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, r.Name)
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{strings.ToUpper(stem) + "ALP", made[:2]},
		{stem + "b", made[2:]},
		{stem, made},
		{stem + "x", nil},
		{"", nil},
		{"-bad", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			got, more, err := db.RoomNamesWithPrefix(ctx, tt.prefix, "", 10)
			if err != nil || more || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %q, %v, %v; want %q", got, more, err, tt.want)
			}
		})
	}
	t.Run("Pages", func(t *testing.T) {
		first, more, err := db.RoomNamesWithPrefix(ctx, stem, "", 2)
		if err != nil || !more || strings.Join(first, ",") != strings.Join(made[:2], ",") {
			t.Fatalf("first page %q %v %v", first, more, err)
		}
		rest, more, err := db.RoomNamesWithPrefix(ctx, stem, first[1], 2)
		if err != nil || more || strings.Join(rest, ",") != made[2] {
			t.Errorf("second page %q %v %v", rest, more, err)
		}
	})
	t.Run("DeletedRoomLeaves", func(t *testing.T) {
		if _, err := db.DeleteRoom(ctx, ada.Login, made[2]); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := db.RoomNamesWithPrefix(ctx, stem+"b", "", 10); len(got) != 0 {
			t.Errorf("deleted room still listed: %q", got)
		}
	})
}
