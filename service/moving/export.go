// This file owns the export: a site, or one room, written as JSON lines
// while it is read, a page of messages at a time, so its memory stays
// flat whatever the size; the files go to a tar beside the lines.

package moving

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// Source is what an export reads (store.Store).
type Source interface {
	Site(ctx context.Context) (chat.Site, error)
	EachUser(ctx context.Context, each func(u chat.User, hash string) error) error
	Markers(ctx context.Context, login string) (map[string]chat.ID, error)
	EachRoom(ctx context.Context, each func(r chat.Room, members []chat.Member) error) error
	RoomWithMembers(ctx context.Context, name string) (chat.Room, []chat.Member, error)
	EachConversation(ctx context.Context, each func(id string) error) error
	Buckets(ctx context.Context, conversation string) ([]int, error)
	EachMessage(ctx context.Context, conv chat.Conversation, bucket, n int, each func([]chat.Message) error) error
	// OpenFile is the file id and its bytes; chat.ErrNotFound if it is
	// gone.
	OpenFile(ctx context.Context, id chat.ID) (chat.StoredFile, io.ReadCloser, error)
}

// ExportOptions say what an export holds.
type ExportOptions struct {
	// Room, if set, exports that room alone (with its members' accounts).
	Room string
	// Full adds people's password hashes: a backup to restore a site
	// from, never an export to hand over.
	Full bool
	// Files receives the files, each a tar entry "files/<id>"; nil: the
	// messages still name their files, whose bytes are not exported.
	Files io.Writer
	// Progress, if set, is told the counts now and then.
	Progress func(Counts)
}

// pageSize is how many messages an export reads at once.
const pageSize = 500

// Export writes the site (or opts.Room) to w as JSON lines and returns
// what it wrote.
func Export(ctx context.Context, src Source, w io.Writer, opts ExportOptions) (Counts, error) {
	e := &exporter{src: src, out: bufio.NewWriterSize(w, 64<<10), opts: opts, last: time.Now()}
	if opts.Files != nil {
		e.tar = tar.NewWriter(opts.Files)
	}
	err := e.run(ctx)
	if err == nil && e.tar != nil {
		err = e.tar.Close()
	}
	if ferr := e.out.Flush(); err == nil {
		err = ferr
	}
	return e.n, err
}

type exporter struct {
	src  Source
	out  *bufio.Writer
	tar  *tar.Writer
	opts ExportOptions
	n    Counts
	last time.Time
	// only, for a room's export, is its members: the people exported.
	only map[string]bool
}

func (e *exporter) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = e.out.Write(b)
	if e.opts.Progress != nil && time.Since(e.last) > time.Second {
		e.last = time.Now()
		e.opts.Progress(e.n)
	}
	return err
}

func (e *exporter) run(ctx context.Context) error {
	h := Header{Kind: KindHeader, Format: Format, Version: Version, Scope: "site", Full: e.opts.Full}
	var (
		room    chat.Room
		members []chat.Member
	)
	if e.opts.Room != "" {
		var err error
		if room, members, err = e.src.RoomWithMembers(ctx, e.opts.Room); err != nil {
			return fmt.Errorf("export room %q: %w", e.opts.Room, err)
		}
		h.Scope, h.Room = "room", room.Name
		e.only = map[string]bool{}
		for _, m := range members {
			e.only[m.Login] = true
		}
	}
	if err := e.line(h); err != nil {
		return err
	}
	if e.only == nil {
		site, err := e.src.Site(ctx)
		if err != nil {
			return err
		}
		admins := slices.Clone(site.Admins)
		slices.Sort(admins)
		if err := e.line(Site{Kind: KindSite, Admins: admins, SignupPolicy: site.SignupPolicy,
			SignupDomains: site.SignupDomains, RoomCreation: site.RoomCreation}); err != nil {
			return err
		}
	}
	if err := e.people(ctx); err != nil {
		return err
	}
	if e.only != nil {
		if err := e.room(room, members); err != nil {
			return err
		}
		if err := e.messages(ctx, room.Conversation()); err != nil {
			return err
		}
		return e.line(End{Kind: KindEnd, Counts: e.n})
	}
	if err := e.src.EachRoom(ctx, func(r chat.Room, members []chat.Member) error { return e.room(r, members) }); err != nil {
		return err
	}
	if err := e.src.EachConversation(ctx, func(id string) error {
		if !chat.IsDM(id) {
			return nil
		}
		e.n.DMs++
		return e.line(DM{Kind: KindDM, ID: id, Members: strings.Split(strings.TrimPrefix(id, chat.DMPrefix), "+")})
	}); err != nil {
		return err
	}
	rooms := map[string]chat.Room{}
	if err := e.src.EachRoom(ctx, func(r chat.Room, _ []chat.Member) error {
		rooms[r.Name] = chat.Room{Name: r.Name, CreatedAt: r.CreatedAt}
		return nil
	}); err != nil {
		return err
	}
	if err := e.src.EachConversation(ctx, func(id string) error {
		conv := chat.Conversation{ID: id, Since: chat.DMEpoch}
		if !chat.IsDM(id) {
			r, ok := rooms[id]
			if !ok {
				return nil // a deleted room's buckets, not yet cleaned up
			}
			conv = r.Conversation()
		}
		return e.messages(ctx, conv)
	}); err != nil {
		return err
	}
	return e.line(End{Kind: KindEnd, Counts: e.n})
}

func (e *exporter) people(ctx context.Context) error {
	return e.src.EachUser(ctx, func(u chat.User, hash string) error {
		if e.only != nil && !e.only[u.Login] {
			return nil
		}
		p := Person{Kind: KindPerson, Login: u.Login, DisplayLogin: u.DisplayLogin, Firstname: u.Firstname, Lastname: u.Lastname,
			Email: u.Email, Bio: u.Bio, CreatedAt: u.CreatedAt.UTC(), Status: u.Status, AccountKind: u.Kind}
		if e.opts.Full {
			p.PasswordHash = hash
		}
		read, err := e.src.Markers(ctx, u.Login)
		if err != nil {
			return err
		}
		for conv, id := range read {
			if e.only != nil && conv != e.opts.roomKey() || id.IsZero() {
				continue
			}
			if p.Read == nil {
				p.Read = map[string]chat.ID{}
			}
			p.Read[conv] = id
		}
		e.n.People++
		return e.line(p)
	})
}

func (o ExportOptions) roomKey() string { return chat.NameKey(o.Room) }

func (e *exporter) room(r chat.Room, members []chat.Member) error {
	l := Room{Kind: KindRoom, Name: r.Name, DisplayName: r.DisplayName, RoomKind: r.Kind, Banner: r.Banner,
		Creator: refOf(r.Creator), CreatedAt: r.CreatedAt.UTC(), Admins: r.Admins, Members: []Member{}}
	for _, m := range members {
		mm := Member{Ref: refOf(m.UserRef)}
		if !m.Joined.IsZero() {
			t := m.Joined.UTC()
			mm.Joined = &t
		}
		l.Members = append(l.Members, mm)
	}
	e.n.Rooms++
	return e.line(l)
}

func (e *exporter) messages(ctx context.Context, conv chat.Conversation) error {
	buckets, err := e.src.Buckets(ctx, conv.ID)
	if err != nil {
		return err
	}
	for _, b := range buckets {
		if err := e.src.EachMessage(ctx, conv, b, pageSize, func(page []chat.Message) error {
			for _, m := range page {
				if err := e.line(messageLine(conv.ID, m)); err != nil {
					return err
				}
				e.n.Messages++
				e.n.Reactions += len(m.Reactions)
				if m.Attachment != nil {
					if err := e.file(ctx, *m.Attachment); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// file writes a message's file, and its preview when it has its own, to
// the tar.
func (e *exporter) file(ctx context.Context, a chat.AttachmentRef) error {
	if e.tar == nil {
		return nil
	}
	ids := []chat.ID{a.ID}
	if a.HasPreview() && a.PreviewID != a.ID {
		ids = append(ids, a.PreviewID)
	}
	for _, id := range ids {
		f, body, err := e.src.OpenFile(ctx, id)
		if errors.Is(err, chat.ErrNotFound) {
			continue // deleted since its message was read
		}
		if err != nil {
			return err
		}
		err = writeFileEntry(e.tar, f, body)
		body.Close()
		if err != nil {
			return err
		}
	}
	e.n.Files++
	return nil
}

// metaRecord is the PAX record of a file's entry that holds what the
// store keeps of it besides its bytes (chat.StoredFile as JSON).
const metaRecord = "KILLRCHAT.file"

func writeFileEntry(tw *tar.Writer, f chat.StoredFile, body io.Reader) error {
	meta, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "files/" + f.ID.String(), Size: f.Size, Mode: 0o644,
		ModTime: f.ID.Time(), Format: tar.FormatPAX, PAXRecords: map[string]string{metaRecord: string(meta)}}); err != nil {
		return err
	}
	_, err = io.Copy(tw, body)
	return err
}
