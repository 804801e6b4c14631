// This file owns the import of a KillrChat export: its lines read one at
// a time and written back with their ids, times and (in a full backup)
// password hashes, into an empty keyspace or another cluster. Every write
// is idempotent, so an import stopped halfway is completed by running it
// again.

package moving

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
)

// maxLine bounds one line of an export: a message holds at most
// chat.MaxContent characters, a room's line its members (about 100 bytes
// each); a longer line is refused rather than held.
const maxLine = 64 << 20

// RestoreOptions say where an export's files are and who hears progress.
type RestoreOptions struct {
	// Files is the export's tar, nil if there is none (messages keep
	// naming their files, which then answer 404).
	Files io.Reader
	// Progress, if set, is told the counts now and then.
	Progress func(Counts)
}

// Restore imports the export read from r into t and returns what it
// wrote. An export cut short (no end line) is refused at its end, after
// what it holds is written.
func Restore(ctx context.Context, t Target, r io.Reader, opts RestoreOptions) (Counts, error) {
	rs := &restorer{t: t, opts: opts, rooms: map[string]chat.RoomWithAll{}, last: time.Now()}
	err := rs.run(ctx, r)
	if err == nil && opts.Files != nil {
		err = rs.files(ctx, opts.Files)
	}
	return rs.n, err
}

type restorer struct {
	t     Target
	opts  RestoreOptions
	n     Counts
	rooms map[string]chat.RoomWithAll
	conv  *conversationWriter
	last  time.Time
	ended bool
	// pendingAdmins are the site's administrators, made so as their
	// accounts are restored.
	pendingAdmins []string
}

func (rs *restorer) run(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rs.line(ctx, lineNo, sc.Bytes()); err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		if rs.opts.Progress != nil && time.Since(rs.last) > time.Second {
			rs.last = time.Now()
			rs.opts.Progress(rs.n)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d is longer than %d bytes: this is not an export", lineNo+1, maxLine)
		}
		return err
	}
	if err := rs.endConversation(ctx); err != nil {
		return err
	}
	if lineNo == 0 {
		return errors.New("the export is empty")
	}
	if !rs.ended {
		return errors.New("the export has no end line: it was cut short; what it held is imported")
	}
	return nil
}

func (rs *restorer) line(ctx context.Context, no int, b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if no == 1 {
		var h Header
		if err := json.Unmarshal(b, &h); err != nil || h.Kind != KindHeader || h.Format != Format {
			return fmt.Errorf("this is not a KillrChat export (its first line is not a %q header)", Format)
		}
		if h.Version > Version {
			return fmt.Errorf("the export's format version %d is newer than this program's (%d): use a newer killrchat", h.Version, Version)
		}
		return nil
	}
	if rs.ended {
		return errors.New("a line after the end line")
	}
	switch k.Kind {
	case KindSite:
		var s Site
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return rs.site(ctx, s)
	case KindPerson:
		var p Person
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		return rs.person(ctx, p)
	case KindRoom:
		var r Room
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		return rs.room(ctx, r)
	case KindDM:
		rs.n.DMs++
		return nil // its messages name it
	case KindMessage:
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		return rs.message(ctx, m)
	case KindEnd:
		rs.ended = true
		return nil
	}
	return fmt.Errorf("unknown kind of line %q", k.Kind)
}

// site restores the settings now and the administrators once their
// accounts are there: at the end of the people (see person).
func (rs *restorer) site(ctx context.Context, s Site) error {
	if s.SignupPolicy != "" {
		if _, err := rs.t.SaveSettings(ctx, s.SignupPolicy, s.SignupDomains, s.RoomCreation); err != nil {
			return err
		}
	}
	rs.pendingAdmins = append(rs.pendingAdmins, s.Admins...)
	return nil
}

func (rs *restorer) person(ctx context.Context, p Person) error {
	if !chat.ValidName(p.Login) || chat.NameKey(p.Login) != p.Login {
		return fmt.Errorf("a person's login %q is not a login", p.Login)
	}
	u := chat.User{Login: p.Login, DisplayLogin: p.DisplayLogin, Firstname: p.Firstname, Lastname: p.Lastname,
		Email: p.Email, Bio: p.Bio, CreatedAt: p.CreatedAt, Status: p.Status, Kind: p.AccountKind}
	if u.Kind != chat.KindPerson && u.Kind != chat.KindBot {
		return fmt.Errorf("%s's account kind %q is not one this program knows", p.Login, u.Kind)
	}
	if _, err := rs.t.RestoreUser(ctx, u, p.PasswordHash); err != nil {
		return err
	}
	for conv, id := range p.Read {
		if err := rs.t.MarkRead(ctx, p.Login, conv, id); err != nil {
			return err
		}
	}
	rs.n.People++
	return rs.admins(ctx, p.Login)
}

// admins makes login an administrator if the site's line named them.
func (rs *restorer) admins(ctx context.Context, login string) error {
	for _, a := range rs.pendingAdmins {
		if a == login {
			_, err := rs.t.SetAdmin(ctx, login, true)
			return err
		}
	}
	return nil
}

func (rs *restorer) room(ctx context.Context, l Room) error {
	r := chat.Room{Name: l.Name, DisplayName: l.DisplayName, Banner: l.Banner, Creator: l.Creator.user(),
		CreatorLogin: l.Creator.Login, CreatedAt: l.CreatedAt, Kind: l.RoomKind, Admins: l.Admins}
	if r.Kind == "" {
		r.Kind = chat.KindOpen
	}
	members := make([]chat.Member, 0, len(l.Members))
	all := make(map[string]chat.UserRef, len(l.Members))
	for _, m := range l.Members {
		cm := chat.Member{UserRef: m.user()}
		if m.Joined != nil {
			cm.Joined = *m.Joined
		}
		members = append(members, cm)
		all[m.Login] = m.user()
	}
	if err := rs.t.RestoreRoom(ctx, r, members); err != nil {
		return err
	}
	rs.rooms[r.Name] = chat.RoomWithAll{Room: r, Participants: all}
	rs.n.Rooms++
	return nil
}

func (rs *restorer) message(ctx context.Context, l Message) error {
	if rs.conv == nil || rs.conv.in.Conversation().ID != l.Conversation {
		if err := rs.endConversation(ctx); err != nil {
			return err
		}
		in, err := rs.place(l.Conversation)
		if err != nil {
			return err
		}
		rs.conv = &conversationWriter{t: rs.t, in: in}
	}
	m := l.message()
	rs.n.Messages++
	rs.n.Reactions += len(m.Reactions)
	if m.Attachment != nil {
		rs.n.Files++
	}
	return rs.conv.add(ctx, m)
}

// place is the room or DM a message line names.
func (rs *restorer) place(id string) (chat.Place, error) {
	if !chat.IsDM(id) {
		r, ok := rs.rooms[id]
		if !ok {
			return nil, fmt.Errorf("a message of %q, which no room line before it names", id)
		}
		return r, nil
	}
	logins := strings.Split(strings.TrimPrefix(id, chat.DMPrefix), "+")
	address, err := chat.DMAddress(logins)
	if err != nil || chat.DMPrefix+address != id {
		return nil, fmt.Errorf("a message of %q, which is not a DM's id", id)
	}
	d := chat.DM{Address: address}
	for _, l := range logins {
		u, err := rs.t.User(context.Background(), l)
		if err != nil {
			return nil, fmt.Errorf("DM %q names %q: %w", id, l, err)
		}
		d.Members = append(d.Members, u.Ref())
	}
	return d, nil
}

func (rs *restorer) endConversation(ctx context.Context) error {
	if rs.conv == nil {
		return nil
	}
	err := rs.conv.flush(ctx)
	rs.conv = nil
	return err
}

// files restores the tar's files, one entry at a time.
func (rs *restorer) files(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the files' tar: %w", err)
		}
		meta, ok := h.PAXRecords[metaRecord]
		if !ok || h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, "files/") {
			return fmt.Errorf("the files' tar holds %q, which is not a KillrChat file", h.Name)
		}
		var f chat.StoredFile
		if err := json.Unmarshal([]byte(meta), &f); err != nil || f.Size != h.Size || "files/"+f.ID.String() != h.Name {
			return fmt.Errorf("the files' tar: entry %q does not describe itself", h.Name)
		}
		if err := rs.t.RestoreFile(ctx, f, tr); err != nil {
			return err
		}
	}
}
