// This file owns unread state and mentions over HTTP: the sidebar's
// counts on every page (and GET /sidebar, which app.js swaps in when the
// live stream says something changed), moving a read marker, the list of
// one's mentions, and the members the composer suggests after "@".

package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/views"
)

const (
	// MaxMentionSuggestions is how many members the composer suggests after "@".
	MaxMentionSuggestions = 8
	// markAheadSlack is how far in the future (clock skew between
	// instances) a marker may point; further is a bad id, refused with
	// 400 so that no one can hide their own future messages from
	// themselves by accident or on purpose.
	markAheadSlack = time.Minute
)

// sidebar is what the layout's sidebar shows: the person's rooms and DMs
// with their unread and mention counts, and the markers they came from
// (a room page takes its own marker from them).
type sidebar struct {
	rooms    []string
	titles   map[string]string
	dms      []views.SidebarDM
	unread   map[string]int
	mentions map[string]int
	markers  chat.Markers
	// read says the markers were read (a failure leaves them empty).
	read bool
	// entries is the whole DM list as read, or dmErr why it was not:
	// GET /dm shows it without reading it again.
	entries []chat.DMEntry
	dmErr   error
}

// readSidebar reads login's sidebar. The rooms come from the user cache,
// the rest from the sidebar cache (service/cache's Sidebars): nothing is
// read while nothing it shows changed; else its statements do not depend
// on how many rooms and DMs there are: two reads at once (the person's
// own partition, with every marker and the DM list with each DM's last
// message, which is its head; the rooms' heads), then only the unread
// conversations are counted, concurrently, and the mentions are read only
// if one is unread (store.CountUnread). open is the conversation the page
// shows and marks read: it shows nothing unread. A failure only logs: the
// sidebar is not worth an error page.
func (s *Server) readSidebar(ctx context.Context, login, open string) sidebar {
	var sb sidebar
	// The sidebar knows its rooms by name only; a deleted room's messages
	// go with it, so the marker alone bounds a count.
	if u, err := s.user(ctx, login); err == nil {
		sb.rooms, sb.titles = u.ChatRooms, u.RoomTitles
	} else {
		s.log.Warn("sidebar: read my rooms", "login", login, "err", err)
	}
	read := s.rows.Sidebar
	if fresh, _ := ctx.Value(freshSidebar{}).(bool); fresh {
		read = s.rows.FreshSidebar
	}
	st, err := read(ctx, login, sb.rooms, open)
	if err != nil {
		s.log.Warn("sidebar: read unread state", "login", login, "err", err)
	}
	sb.markers, sb.entries, sb.dmErr, sb.read = st.Markers, st.DMs, st.DMErr, st.Read
	for _, e := range st.DMs {
		cv := dmConversation(e.DM, login)
		sb.dms = append(sb.dms, views.SidebarDM{ID: cv.ID, URL: cv.URL, Title: cv.Title})
	}
	if !st.Counted {
		return sb
	}
	sb.unread, sb.mentions = st.Unread, st.Mentions
	// Unread state covers every DM of the list; the sidebar keeps the
	// newest and the unread ones.
	sb.dms = recentOrUnread(sb.dms, sb.unread)
	return sb
}

// freshSidebar, true in a request's context, has its sidebar read from
// storage whatever is kept (see cache.Sidebars.Fresh).
type freshSidebar struct{}

// fill puts the sidebar into page.
func (sb sidebar) fill(page *views.Page) {
	page.MyRooms, page.RoomTitles, page.DMs = sb.rooms, sb.titles, sb.dms
	page.Unread, page.Mentions = sb.unread, sb.mentions
	page.Levels = sb.markers.Level
	for conv, l := range sb.markers.Level {
		if l == chat.LevelNothing {
			if page.Quiet == nil {
				page.Quiet = map[string]bool{}
			}
			page.Quiet[conv] = true
		}
	}
	if page.Unread == nil {
		page.Unread = map[string]int{} // read (or failed): fillPage does not read again
	}
}

// showSidebar answers GET /sidebar: the rooms and DMs with their badges,
// for app.js to swap in. A browser that opens the URL itself is sent home,
// where the same sidebar is.
func (s *Server) showSidebar(c echo.Context) error {
	if !IsHTMX(c) {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	// Asked for because a stream said something changed, maybe a stream
	// of another instance: this one may not have heard of it yet, so its
	// kept sidebar state is read again (and kept).
	r := c.Request()
	c.SetRequest(r.WithContext(context.WithValue(r.Context(), freshSidebar{}, true)))
	page := s.fillPage(c, views.Page{})
	return s.RenderRaw(c, http.StatusOK, views.Sidebar(page))
}

// markRoomRead answers POST /rooms/:room/read and /dm/:logins/read: the
// reader has seen the conversation up to the message id in the field "id".
func (s *Server) markRoomRead(c echo.Context) error {
	id, err := markID(c)
	if err != nil {
		return err
	}
	cv, err := s.ConversationOf(c)
	if err != nil {
		return err
	}
	return s.markRead(c, cv.Place.Conversation(), id, cv.URL+"#latest")
}

// markID is the message id a mark-read request names: a timeuuid, not
// further in the future than clocks may disagree.
func markID(c echo.Context) (chat.ID, error) {
	id, err := chat.ParseMessageID(c.FormValue("id"))
	if err != nil || id.Time().After(time.Now().Add(markAheadSlack)) {
		return chat.ID{}, echo.NewHTTPError(http.StatusBadRequest, "This is not the id of a message.")
	}
	return id, nil
}

// markRead moves the viewer's marker in conv up to id; back answers a
// browser without JavaScript. An older id than the stored marker changes
// nothing (the store writes it with the id's own time), so two tabs never
// move it backwards.
func (s *Server) markRead(c echo.Context, conv chat.Conversation, id chat.ID, back string) error {
	if err := s.app.MarkRead(c.Request().Context(), MustUser(c).Login, conv, id); err != nil {
		return err
	}
	if IsHTMX(c) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, back)
}

// firstUnread is the first of msgs that the reader had not read: newer than
// marker, neither their own nor a system message; zero if none, or if they
// never read the conversation (everything would be "new").
func firstUnread(msgs []chat.Message, marker chat.ID, login string) chat.ID {
	if marker == (chat.ID{}) {
		return chat.ID{}
	}
	for _, m := range msgs {
		if m.ID.After(marker) && !m.System && m.Author.Login != login {
			return m.ID
		}
	}
	return chat.ID{}
}

// aroundPage is how many messages a page opened on one message shows on
// each side of it.
const aroundPage = messagesPerPage / 2

// around fills v with the messages of in around the message ?at= names, a
// page centred on it and the message highlighted: the list of mentions
// links there. A page that does not reach the newest message links to it
// instead of following the live stream. A malformed id is a 400.
func (s *Server) around(c echo.Context, in chat.Place, base string, v *views.RoomView) error {
	at, err := chat.ParseMessageID(c.QueryParam("at"))
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The link to this message is malformed.")
	}
	ctx := c.Request().Context()
	before, moreBefore, err := s.db.MessagesBefore(ctx, in, at, aroundPage)
	if err != nil {
		return err
	}
	from := chat.ID{}
	if len(before) > 0 {
		from = before[len(before)-1].ID
	}
	rest, moreAfter, err := s.db.MessagesAfter(ctx, in, from, aroundPage+1)
	if err != nil {
		return err
	}
	if err := s.db.AddReactions(ctx, in, rest); err != nil {
		return err
	}
	v.Messages = append(before, rest...)
	v.Older = olderLink(base, v.Messages, moreBefore)
	if len(rest) > 0 && rest[0].ID == at {
		v.Highlight = at
	}
	if moreAfter {
		v.Newer = base + "#latest"
	} else if len(v.Messages) > 0 {
		v.After = v.Messages[len(v.Messages)-1].ID.String()
	} else {
		v.After = chat.MinIDAt(time.Now().Add(-time.Minute)).String()
	}
	return nil
}

// InConversation makes every message rendered for this request link the
// mentions of the members of place (see views.WithMembers), among them
// every one that msgs mention: the page, its fragments, a replay (which
// looks up the members each replayed message mentions, see Mentioning).
func (s *Server) InConversation(c echo.Context, place chat.Place, msgs ...chat.Message) {
	r := c.Request()
	c.SetRequest(r.WithContext(s.Mentioning(r.Context(), place, msgs...)))
}

// placeKey holds, in a context, the place whose messages it renders.
type placeKey struct{}

// Mentioning is ctx for rendering messages of place: with the members of
// place that msgs mention (one read of their rows in a room, none in a
// DM, see store.Mentionable), added to those ctx has for place. A failed read is
// logged: the mentions show as text.
func (s *Server) Mentioning(ctx context.Context, place chat.Place, msgs ...chat.Message) context.Context {
	contents := make([]string, 0, len(msgs))
	for _, m := range msgs {
		contents = append(contents, m.Content)
	}
	conv, err := s.db.Mentionable(ctx, place, contents...)
	if err != nil {
		s.log.Warn("mentioned members", "conversation", conv.ID, "err", err)
	}
	members := conv.Members
	if had, ok := ctx.Value(placeKey{}).(chat.Place); ok && had.Conversation().ID == conv.ID {
		members = views.AddMembers(ctx, members) // those looked up before, for this place
	}
	return context.WithValue(views.WithMembers(ctx, members), placeKey{}, place)
}

// MentioningEach is ctx for rendering m in the place ctx renders for (if
// any): the members m mentions looked up, for a message rendered alone
// (a replay, an edit).
func (s *Server) MentioningEach(ctx context.Context, m chat.Message) context.Context {
	if place, ok := ctx.Value(placeKey{}).(chat.Place); ok {
		return s.Mentioning(ctx, place, m)
	}
	return ctx
}

// recordMentions records m under every member it mentions. Only a message
// that mentions someone costs a statement, so a plain post runs what it
// ran before; a failure is logged, not returned: the message is stored.
func (s *Server) recordMentions(ctx context.Context, conv chat.Conversation, m chat.Message) {
	// conv holds the members m mentions (see store.Mentionable).
	if m.System || len(chat.Mentioned(m.Content, conv.Members)) == 0 {
		return
	}
	if err := s.db.RecordMentions(ctx, conv, m); err != nil {
		s.log.Warn("record mentions", "conversation", conv.ID, "err", err)
	}
}

// WatchOthers starts the watch of login's conversations other than the
// open one: their rooms (one read of users.chat_rooms when the stream
// opens) and, through their own key, their DMs. A failed read watches the
// DMs only: the sidebar still refreshes on a page load.
func (s *Server) WatchOthers(ctx context.Context, login, open string) *live.ConversationWatch {
	var rooms []string
	if u, err := s.user(ctx, login); err == nil {
		for _, r := range u.ChatRooms {
			if r != open {
				rooms = append(rooms, r)
			}
		}
	} else {
		s.log.Warn("sse: read my rooms to watch", "login", login, "err", err)
	}
	return s.hub.WatchConversations(rooms, login)
}
