package handlers

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/store"
)

// EndStreams lets the tests call endStreams, the contract that handlers
// which revoke sessions (a password change) use.
func (s *Server) EndStreams(ctx context.Context, end live.StreamEnd) { s.endStreams(ctx, end) }

// FlushSearchIndex waits until every message posted so far is indexed.
func (s *Server) FlushSearchIndex() { s.indexer.flush() }

// Indexer is a search indexer with no queue and no workers: every message
// given to Index falls behind, and CatchUp indexes one bucket of those.
type Indexer struct{ ix *searchIndexer }

// NewIndexer returns an Indexer on db.
func NewIndexer(db *store.Store) Indexer {
	ix := &searchIndexer{db: db, log: slog.New(slog.NewTextHandler(io.Discard, nil)), jobs: make(chan indexJob),
		behind: map[behindKey]store.Conversation{}}
	ix.idle = sync.NewCond(&ix.mu)
	return Indexer{ix}
}

// Index queues m (it falls behind: the queue holds nothing).
func (i Indexer) Index(conv store.Conversation, m store.Message) { i.ix.index(conv, m) }

// CatchUp indexes one bucket that fell behind.
func (i Indexer) CatchUp() { i.ix.catchUp(make(chan struct{})) }

// Behind is how many buckets wait.
func (i Indexer) Behind() int { return i.ix.behindCount() }

// OnFileStored calls f with the request's context each time an upload's
// file is stored, before its message is posted.
func (s *Server) OnFileStored(f func(context.Context)) { s.fileStored = f }

// SetUploadGrace sets how long an upload runs before the minimum rate
// applies (10 s in production).
func (s *Server) SetUploadGrace(d time.Duration) { s.uploadGrace = d }
