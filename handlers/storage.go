// This file holds what the HTTP core asks of storage: the composition
// root gives it the Cassandra adapter (store.Store), which the core knows
// only by these interfaces.

package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email/missed"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/push"
	"github.com/killrchat/killrchat/push/outgoing"
	"github.com/killrchat/killrchat/service"
	"github.com/killrchat/killrchat/web/metrics"
	"github.com/killrchat/killrchat/web/session"
)

// Store is the storage of the core (store.Store): what the use cases,
// the caches, the session store, the live engine and Web Push are built
// on, and the core's own reads.
type Store interface {
	service.Storage
	service.Accounts
	session.Sessions
	live.Source
	metrics.ChunkCounter
	push.Storage
	service.EmailStore
	missed.Store
	service.BotStorage
	service.HookStorage
	outgoing.Queue

	// Connected is closed once the database first answers; Health says
	// whether it answers now (and what is degraded).
	Connected() <-chan struct{}
	Health(ctx context.Context) (degraded string, err error)

	RoomFor(ctx context.Context, name, login string) (chat.RoomFor, error)
	Rooms(ctx context.Context, state []byte, n int) (chat.RoomPage, error)
	RoomNamesWithPrefix(ctx context.Context, prefix, after string, n int) ([]string, bool, error)
	RoomMembersFrom(ctx context.Context, r chat.Room, prefix string, n int) ([]chat.UserRef, error)
	Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error)
	MessagesBefore(ctx context.Context, in chat.Place, before chat.ID, n int) ([]chat.Message, bool, error)
	// Version is the version of a conversation's newest page
	// (store.Version).
	Version(ctx context.Context, conversation string) (chat.PageVersion, error)
	AddReactions(ctx context.Context, in chat.Place, msgs []chat.Message) error
	DMList(ctx context.Context, login string) ([]chat.DMEntry, error)
	Heads(ctx context.Context, conversations []string) (map[string]chat.ID, error)
	PersonalState(ctx context.Context, login string) (chat.Markers, []chat.DMEntry, error)
	MarkerAndLevel(ctx context.Context, login, conversation string) (chat.ID, chat.Level, error)
	CountUnread(ctx context.Context, login string, markers chat.Markers, heads map[string]chat.ID, conversations map[string]time.Time, open string) (chat.UnreadState, error)
	ClosedAccounts(ctx context.Context) (map[string]string, error)
	LoadAvatars(ctx context.Context) (map[string]string, error)
	BotLogins(ctx context.Context) (map[string]bool, error)
}

// Indexer is the search indexer (store.Indexer): the use cases queue
// messages to it; Flush waits until what was queued is indexed.
type Indexer interface {
	service.Indexer
	Flush()
}

// NewIndexer starts the search indexer over the store (store.NewIndexer):
// at most perSecond messages a second (0: the store's default; negative:
// unpaced), none if off; its workers stop once closing is closed (at
// Shutdown).
type NewIndexer func(log *slog.Logger, perSecond float64, off bool, closing <-chan struct{}) Indexer
