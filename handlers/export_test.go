package handlers

import "context"

// EndStreams lets the tests call endStreams, the contract that handlers
// which revoke sessions (a password change) use.
func (s *Server) EndStreams(ctx context.Context, end StreamEnd) { s.endStreams(ctx, end) }

// Frame is the stream bytes the hub encoded for ev.
func Frame(ev *RoomEvent) []byte { return ev.frame }

// FlushSearchIndex waits until every message posted so far is indexed.
func (s *Server) FlushSearchIndex() { s.indexer.flush() }
