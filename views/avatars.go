package views

import (
	"context"
	"net/url"
	"strconv"
)

type avatarsKey struct{}

// WithAvatars returns a context in which an avatar is the person's
// picture when version gives one ("" draws the initials).
func WithAvatars(ctx context.Context, version func(login string) string) context.Context {
	return context.WithValue(ctx, avatarsKey{}, version)
}

func avatarVersion(ctx context.Context, login string) string {
	v := ""
	if f, _ := ctx.Value(avatarsKey{}).(func(string) string); f != nil {
		v = f(login)
	}
	noteAnswer(ctx, askAvatar, login, v)
	return v
}

// AvatarURL is the address of login's picture of side px (48 or 128), at
// version: a new picture is a new address, so browsers may keep each.
func AvatarURL(login, version string, side int) string {
	return "/users/" + url.PathEscape(login) + "/avatar?s=" + strconv.Itoa(side) + "&v=" + url.QueryEscape(version)
}
