// This file owns avatar pictures: an upload is stored like an attachment
// (sniffed, bounded, chunked), decoded within the decode budget, cropped
// to its centre square and kept as two squares, chat.AvatarLarge and
// chat.AvatarSmall pixels, each an attachment of the conversation
// "avatar:<login>"; the upload itself is then deleted. Who has a picture
// is one row per person in the avatars table, spread over avatarShards
// partitions so that an instance can load every row (LoadAvatars).

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"io"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
	"golang.org/x/image/draw"
)

const (
	// avatarShards is how many partitions the avatars table spreads over.
	avatarShards = 16

	insertAvatar  = `INSERT INTO avatars (shard, login, large_id, small_id) VALUES (?, ?, ?, ?)`
	selectAvatar  = `SELECT large_id, small_id FROM avatars WHERE shard = ? AND login = ?`
	deleteAvatar  = `DELETE FROM avatars WHERE shard = ? AND login = ?`
	selectAvatars = `SELECT login, small_id FROM avatars WHERE shard = ?`
)

func avatarConversation(login string) string { return "avatar:" + chat.NameKey(login) }

func avatarShard(login string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(chat.NameKey(login)))
	return int(h.Sum32() % avatarShards)
}

// AvatarImage says whether contentType may be an avatar: PNG, JPEG or WebP.
func AvatarImage(contentType string) bool {
	switch contentType {
	case "image/png", "image/jpeg", "image/webp":
		return true
	}
	return false
}

// SetAvatar makes the picture read from body (at most limit bytes) user's
// avatar, and deletes the one it replaces. It returns chat.ErrTooLarge past
// limit and a chat.ValidationError for a file that is not a PNG, JPEG or WebP
// image (sniffed, not named) or is too large to decode.
func (s *Store) SetAvatar(ctx context.Context, user chat.UserRef, body io.Reader, limit int64) (chat.Avatar, error) {
	conv := avatarConversation(user.Login)
	up, err := s.storeChunks(ctx, conv, user, "avatar-upload", body, limit)
	if err != nil {
		return chat.Avatar{}, err
	}
	// The upload is only read here: it goes whatever happens.
	defer s.discardUpload(ctx, up.Attachment, up.Chunks)
	if !AvatarImage(up.ContentType) || up.Width <= 0 {
		return chat.Avatar{}, chat.ValidationError{"picture": "Choose a PNG, JPEG or WebP picture."}
	}
	var large, small []byte
	err = s.decodeImage(ctx, up, func(src image.Image) (err error) {
		b := src.Bounds()
		side := min(b.Dx(), b.Dy())
		square := image.Rect(0, 0, side, side).Add(b.Min).Add(image.Pt((b.Dx()-side)/2, (b.Dy()-side)/2))
		if large, err = scaleEncode(src, square, chat.AvatarLarge, chat.AvatarLarge, draw.CatmullRom); err != nil {
			return err
		}
		small, err = scaleEncode(src, square, chat.AvatarSmall, chat.AvatarSmall, draw.CatmullRom)
		return err
	})
	if errors.Is(err, errNoPreview) {
		return chat.Avatar{}, chat.ValidationError{"picture": "This picture is too large to read; choose a smaller one."}
	}
	if err != nil {
		var ve chat.ValidationError
		if errors.As(err, &ve) || errors.Is(err, chat.ErrUnavailable) || ctx.Err() != nil {
			return chat.Avatar{}, err
		}
		return chat.Avatar{}, chat.ValidationError{"picture": "This picture could not be read."}
	}
	var av chat.Avatar
	for _, p := range []struct {
		data []byte
		id   *chat.ID
		name string
	}{{large, &av.Large, "avatar-large"}, {small, &av.Small, "avatar-small"}} {
		a, err := s.storeChunks(ctx, conv, user, p.name, bytes.NewReader(p.data), int64(len(p.data)))
		if err != nil {
			return chat.Avatar{}, err
		}
		if err := s.finishAttachment(ctx, a.Attachment); err != nil {
			return chat.Avatar{}, err
		}
		*p.id = a.ID
	}
	old, oldErr := s.Avatar(ctx, user.Login)
	if err := s.exec(ctx, "set avatar", insertAvatar, avatarShard(user.Login), chat.NameKey(user.Login), gocql.UUID(av.Large), gocql.UUID(av.Small)); err != nil {
		return chat.Avatar{}, err
	}
	if oldErr == nil {
		s.dropAvatarFiles(ctx, old)
	}
	return av, nil
}

// RemoveAvatar takes login's picture away (the initials show again).
func (s *Store) RemoveAvatar(ctx context.Context, login string) error {
	old, err := s.Avatar(ctx, login)
	if errors.Is(err, chat.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.exec(ctx, "remove avatar", deleteAvatar, avatarShard(login), chat.NameKey(login)); err != nil {
		return err
	}
	s.dropAvatarFiles(ctx, old)
	return nil
}

// dropAvatarFiles deletes a replaced picture's squares; what it cannot
// delete stays listed under the person's avatar conversation.
func (s *Store) dropAvatarFiles(ctx context.Context, av chat.Avatar) {
	for _, id := range []chat.ID{av.Large, av.Small} {
		a, err := s.Attachment(ctx, id)
		if err == nil {
			err = s.deleteAttachment(ctx, a.Conversation, a.ID, a.Chunks)
		}
		if err != nil && !errors.Is(err, chat.ErrNotFound) {
			s.log.Warn("store: old avatar left", "attachment", id, "err", err)
		}
	}
}

// Avatar returns login's picture, or chat.ErrNotFound.
func (s *Store) Avatar(ctx context.Context, login string) (chat.Avatar, error) {
	q, err := s.query(ctx, selectAvatar, avatarShard(login), chat.NameKey(login))
	if err != nil {
		return chat.Avatar{}, err
	}
	var av chat.Avatar
	err = q.Scan((*gocql.UUID)(&av.Large), (*gocql.UUID)(&av.Small))
	if errors.Is(err, gocql.ErrNotFound) {
		return chat.Avatar{}, fmt.Errorf("store: avatar of %q: %w", login, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Avatar{}, s.fail("read avatar", err)
	}
	return av, nil
}

// LoadAvatars returns every picture's version by login: avatarShards reads.
func (s *Store) LoadAvatars(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for shard := range avatarShards {
		q, err := s.query(ctx, selectAvatars, shard)
		if err != nil {
			return nil, err
		}
		iter := q.PageSize(1000).Iter()
		var (
			login string
			small chat.ID
		)
		for iter.Scan(&login, (*gocql.UUID)(&small)) {
			out[login] = small.String()
		}
		if err := iter.Close(); err != nil {
			return nil, s.fail("load avatars", err)
		}
	}
	return out, nil
}
