// This file holds the Service and the interfaces it is built from.

package service

import (
	"context"
	"io"
	"log/slog"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/live/fence"
)

// Storage is what the use cases write, and read when a read decides a
// write: Cassandra (store.Store), never a cache.
type Storage interface {
	Messages
	ConfirmPost(ctx context.Context, r chat.Room, m chat.Message) error
	Mentionable(ctx context.Context, in chat.Place, contents ...string) (chat.Conversation, error)
	RecordDMMessage(ctx context.Context, d chat.DM, m chat.Message) error
	RecordMentions(ctx context.Context, conv chat.Conversation, m chat.Message) error
	UpdateMentions(ctx context.Context, conv chat.Conversation, before, after chat.Message) error
	ForgetMessage(ctx context.Context, in chat.Place, m chat.Message) error

	CreateRoom(ctx context.Context, creator chat.UserRef, f chat.NewRoom) (chat.RoomFor, error)
	JoinRoom(ctx context.Context, user chat.UserRef, room string) (chat.RoomFor, error)
	LeaveRoom(ctx context.Context, user chat.UserRef, room string) error
	DeleteRoomFenced(ctx context.Context, login, name string, fence func(ctx context.Context, room string) error) (chat.RoomWithAll, error)
	ForgetRoom(ctx context.Context, login, room string) (bool, error)
	AddMember(ctx context.Context, actor string, room string, who chat.UserRef) (chat.RoomFor, error)
	MakeAdmin(ctx context.Context, actor, room, who string) (chat.Room, error)
	RemoveMember(ctx context.Context, actor, room, who string) (chat.RoomFor, error)
	SetRoomKind(ctx context.Context, actor, room, kind string) (chat.Room, error)
	SetBanner(ctx context.Context, actor, room, banner string) (chat.Room, error)
	JoinByInvite(ctx context.Context, user chat.UserRef, token string) (chat.RoomFor, error)
	CreateInvite(ctx context.Context, actor chat.UserRef, room string, f chat.NewInvite) (string, chat.Invite, error)
	RevokeInvite(ctx context.Context, actor, room, id string) error

	UserRefs(ctx context.Context, logins []string) ([]chat.UserRef, error)
	UpdateProfile(ctx context.Context, login, email, bio string) error
	ChangePassword(ctx context.Context, login, old, password, confirm string) error
	SetAvatar(ctx context.Context, user chat.UserRef, body io.Reader, limit int64) (chat.Avatar, error)
	RemoveAvatar(ctx context.Context, login string) error
	EndOtherSessions(ctx context.Context, login, keep string) ([]string, error)

	Reads
	CatchUp
	Levels
	Onboarding
	Searches
	Files
}

// Messages are a conversation's messages and their changes as stored:
// drafts given ids in order, saves, one message's read, edits, deletes,
// reactions, and how far each reader has read. store.Store keeps them in
// Cassandra, storagetest.Memory in memory; storagetest.Run holds both to
// the same contract.
type Messages interface {
	// DraftMessage checks content and gives the message its id, in the
	// order of the calls, without storing it: chat.ErrNotParticipant
	// unless author is in in, a chat.ValidationError for a content
	// chat.CheckContent refuses.
	DraftMessage(in chat.Place, author chat.UserRef, content string) (chat.Message, error)
	// DraftSystemMessage is a message of the server about someone.
	DraftSystemMessage(in chat.Place, about chat.UserRef, text string) chat.Message
	// SaveMessage stores a drafted message (in a room, it then checks
	// the room and the author are still there); SaveFencedMessage
	// stores it with no check, for a caller whose fence holds.
	SaveMessage(ctx context.Context, in chat.Place, m chat.Message) error
	SaveFencedMessage(ctx context.Context, in chat.Place, m chat.Message) error
	// NewChangeID is the id of a change made now, in the order of the
	// messages' ids.
	NewChangeID() chat.ID
	// Message is the message id of in; chat.ErrNotFound if there is
	// none, or it is older than in.
	Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error)
	// EditMessage replaces m's content as the change id change and
	// returns m as edited; a chat.ValidationError for a content
	// chat.CheckContent refuses (an attachment's may be empty).
	EditMessage(ctx context.Context, in chat.Place, m chat.Message, content string, change chat.ID) (chat.Message, error)
	// DeleteMessage deletes m and its reactions as the change change.
	DeleteMessage(ctx context.Context, in chat.Place, m chat.Message, change chat.ID) error
	// React adds (add) or takes back who's reaction emoji to the message
	// id: a chat.ValidationError for a reaction chat.CheckReaction
	// refuses or a new one beyond chat.MaxReactions, chat.ErrNotFound
	// when adding to an id that names no message.
	React(ctx context.Context, in chat.Place, id chat.ID, who chat.UserRef, emoji string, add bool, change chat.ID) (chat.Change, error)
	// MarkRead moves login's marker in conversation up to upTo; an
	// older upTo than the marker changes nothing.
	MarkRead(ctx context.Context, login, conversation string, upTo chat.ID) error
}

// Reads are the reads the caches decorate (package service/cache): a
// room's header, a person's standing in it, its participants, a person's
// row, a DM. store.Store reads them from Cassandra; the cache serves them
// from memory and drops an entry on every instance when the use case
// that changed its row invalidates it through the bus.
type Reads interface {
	// Room is the header of the room named name (any case), with no one's
	// standing; ErrNotFound if there is none.
	Room(ctx context.Context, name string) (chat.Room, error)
	// RoomFor is the room named name with login's standing;
	// ErrNotFound if there is none.
	RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error)
	// Standing is login's standing in r (the incarnation read).
	Standing(ctx context.Context, r chat.Room, login string) (chat.Standing, error)
	// RoomMembers are r's participants by login after after, at most n.
	RoomMembers(ctx context.Context, r chat.Room, after string, n int) ([]chat.UserRef, error)
	// User is login's row; ErrNotFound if there is none.
	User(ctx context.Context, login string) (chat.User, error)
	// DM is the DM at address; ErrNotFound if it is malformed.
	DM(ctx context.Context, address string) (chat.DM, error)
	// RoomsNamed are the rooms of names (their keys); a name with no room
	// is missing from the map.
	RoomsNamed(ctx context.Context, names []string) (map[string]chat.Room, error)
}

// Bus is the live hub: events to every instance's pages, cache
// invalidations, fences and ends of streams (live.Hub).
type Bus interface {
	Publish(ctx context.Context, ev live.Event) error
	Invalidate(ctx context.Context, inv live.Invalidation) error
	Fence(ctx context.Context, room string, inv live.Invalidation) error
	EndStreams(ctx context.Context, end live.StreamEnd) error
	Enter(room string) *fence.Pass
}

// Sequencer gives a conversation's messages their ids in order and
// publishes each once those drafted before it are settled (live.Engine).
type Sequencer interface {
	Reserve(conversation string, draft func() (chat.Message, error)) (*live.Slot, error)
	Finish(sl *live.Slot, ok bool)
}

// Renderer makes the HTML of live events, with the components pages use.
type Renderer interface {
	// Message is m as the live streams show it, its mentions of conv's
	// members marked.
	Message(ctx context.Context, conv chat.Conversation, m chat.Message) ([]byte, error)
	// Event is ev's HTML when it carries none and its kind needs some (a
	// message, a participant list); nil for the others.
	Event(ctx context.Context, ev live.Event) ([]byte, error)
	// Edited is the new body of m, edited, its mentions of conv's
	// members marked; Deleted is the data of m's delete event;
	// Reaction is the data of ch's event.
	Edited(ctx context.Context, conv chat.Conversation, m chat.Message) ([]byte, error)
	Deleted(m chat.Message) []byte
	Reaction(ch chat.Change) ([]byte, error)
}

// Indexer queues a message for the search index, off the post's path;
// Reindex queues a change of one (old and updated, nil for none).
type Indexer interface {
	Index(conv chat.Conversation, m chat.Message)
	Reindex(conv chat.Conversation, old, updated *chat.Message)
}

// Pusher hands a posted message to Web Push, which finds who is away and
// wants it.
type Pusher interface {
	Posted(in chat.Place, conv chat.Conversation, m chat.Message)
}

// PictureVersions are the versions of people's pictures an instance
// keeps (web.Avatars).
type PictureVersions interface {
	Apply(changes map[string]string)
}

// Outgoing queues a posted message for the outgoing webhooks of the
// bots it goes to (push/outgoing), durably, before it returns.
type Outgoing interface {
	Posted(ctx context.Context, in chat.Place, conv chat.Conversation, m chat.Message, html []byte)
}

// Deps are what a Service is built from. Push and the counters may be
// nil.
type Deps struct {
	Storage Storage
	// Accounts are the site's and the accounts' storage (nil: the
	// administrative use cases are not available).
	Accounts Accounts
	// Bots are the bots' storage (nil: no bots).
	Bots BotStorage
	// Hooks are the incoming webhooks' storage (nil: no hooks).
	Hooks HookStorage
	// Rows are the cached reads (package service/cache) of what is
	// shown, not decided: Storage if nil.
	Rows Reads
	// Pictures are this instance's versions of people's pictures (nil:
	// none kept): a change applies at once here, on the others when the
	// bus brings it.
	Pictures PictureVersions
	// Rooms lists a person's rooms for search (nil: search is not
	// available).
	Rooms     RoomLister
	Bus       Bus
	Sequencer Sequencer
	Renderer  Renderer
	Indexer   Indexer
	Push      Pusher
	// Outgoing may be nil: no bot gets deliveries.
	Outgoing Outgoing
	// Mail sends the site's mail (nil: email is off); Email is email's
	// storage; SiteURL starts the links mails carry.
	Mail    Mailer
	Email   EmailStore
	SiteURL string
	// EmailHideText leaves message text out of every email.
	EmailHideText bool
	Log           *slog.Logger
	// ShownParticipants is how many participants a room's header lists:
	// a change of them publishes that many.
	ShownParticipants int
	// SessionDigest turns a session id into the form streams know it by
	// (an ended stream names its session so).
	SessionDigest func(id string) string
	// CountRoomPost counts a room post by how its check held ("fenced":
	// no read; "read": read after its write); CountFenceTimeout a fence
	// some instance did not answer in time.
	CountRoomPost     func(how string)
	CountFenceTimeout func()
	// CountSearchStatements observes the statements one search sent;
	// FileStored hears of each upload's file stored, of size bytes,
	// before its message is posted.
	CountSearchStatements func(n int)
	FileStored            func(ctx context.Context, size int64)
}

// Service runs the use cases.
type Service struct {
	Deps
	recent *recentPosts
}

// New returns the use cases over d.
func New(d Deps) *Service {
	if d.CountRoomPost == nil {
		d.CountRoomPost = func(string) {}
	}
	if d.CountFenceTimeout == nil {
		d.CountFenceTimeout = func() {}
	}
	if d.FileStored == nil {
		d.FileStored = func(context.Context, int64) {}
	}
	if d.CountSearchStatements == nil {
		d.CountSearchStatements = func(int) {}
	}
	if d.Rows == nil {
		d.Rows = d.Storage
	}
	if d.SessionDigest == nil {
		d.SessionDigest = func(id string) string { return id }
	}
	return &Service{Deps: d, recent: newRecentPosts(recentPostsMax, recentPostTTL, timeNow)}
}
