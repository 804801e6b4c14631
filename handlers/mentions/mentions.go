package mentions

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/views"
	"github.com/labstack/echo/v4"
)

// mentionsPerPage is how many mentions GET /mentions shows at a time.
const mentionsPerPage = 50

// Mentions are what the mentions page reads (store.Store): a person's
// mentions, and the rooms they are in with the person's standing there.
type Mentions interface {
	Mentions(ctx context.Context, login string, before chat.ID, n int) ([]chat.Mention, error)
	RoomsNamed(ctx context.Context, names []string) (map[string]chat.Room, error)
	Standing(ctx context.Context, r chat.Room, login string) (chat.Standing, error)
}

// Pages renders a page in the layout (handlers.Server).
type Pages interface {
	Render(c echo.Context, status int, page views.Page, body templ.Component) error
}

// routes are the mentions' routes.
type routes struct {
	pages Pages
	db    Mentions
}

// Register lists the mentions page.
func Register(r handlers.Routes, pages Pages, db Mentions) {
	s := routes{pages, db}
	r.Auth.GET("/mentions", s.listMentions)
}

// listMentions answers GET /mentions: the messages that mention the
// viewer, newest first, a page at a time (?before= the oldest shown).
func (s routes) listMentions(c echo.Context) error {
	var before chat.ID
	if b := c.QueryParam("before"); b != "" {
		var err error
		if before, err = chat.ParseMessageID(b); err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "The link to older mentions is malformed.")
		}
	}
	me := handlers.MustUser(c)
	found, err := s.db.Mentions(c.Request().Context(), me.Login, before, mentionsPerPage+1)
	if err != nil {
		return err
	}
	if found, err = s.visibleMentions(c.Request().Context(), me.Login, found); err != nil {
		return err
	}
	v := views.MentionList{}
	if len(found) > mentionsPerPage {
		found = found[:mentionsPerPage]
		v.Older = "/mentions?before=" + url.QueryEscape(found[len(found)-1].MessageID.String())
	}
	for _, m := range found {
		place, link := mentionPlace(m, me.Login)
		v.Items = append(v.Items, views.MentionItem{Mention: m, Place: place, Link: link})
	}
	return s.pages.Render(c, http.StatusOK, views.Page{Title: "Mentions"}, views.MentionsView(v))
}

// visibleMentions drops the mentions in closed rooms that login is not
// (any more) a member of: their rooms are not there for them; and those
// of deleted rooms, whether or not a room has the name again (a mention
// older than the room of the name is of one deleted before it). The
// rooms are read in one query.
func (s routes) visibleMentions(ctx context.Context, login string, found []chat.Mention) ([]chat.Mention, error) {
	var rooms []string
	for _, m := range found {
		if !strings.HasPrefix(m.Conversation, "dm:") && !slices.Contains(rooms, m.Conversation) {
			rooms = append(rooms, m.Conversation)
		}
	}
	named, err := s.db.RoomsNamed(ctx, rooms)
	if err != nil {
		return nil, err
	}
	// A closed room's mentions are its members' only: their standing is
	// read for the closed rooms alone (one row each).
	visible := map[string]bool{}
	for name, r := range named {
		if !r.Closed() {
			visible[name] = true
		} else if st, err := s.db.Standing(ctx, r, login); err != nil {
			return nil, err
		} else {
			visible[name] = st.Member
		}
	}
	return slices.DeleteFunc(found, func(m chat.Mention) bool {
		if strings.HasPrefix(m.Conversation, "dm:") {
			return false
		}
		r, ok := named[m.Conversation]
		return !ok || !visible[m.Conversation] || m.MessageID.Time().Before(r.CreatedAt)
	}), nil
}

// mentionPlace names a mention's conversation for login, and links to it
// opened around the message.
func mentionPlace(m chat.Mention, login string) (place, link string) {
	link = handlers.MessageLink(m.Conversation, m.MessageID)
	if address, ok := strings.CutPrefix(m.Conversation, "dm:"); ok {
		var others []string
		for _, l := range strings.Split(address, "+") {
			if l != login {
				others = append(others, "@"+l)
			}
		}
		return strings.Join(others, ", "), link
	}
	return "#" + m.Conversation, link
}
