package handlers

import (
	"context"
	"time"
)

// FlushSearchIndex waits until every message posted so far is indexed.
func (s *Server) FlushSearchIndex() { s.indexer.Flush() }

// OnFileStored calls f with the request's context each time an upload's
// file is stored, before its message is posted.
func (s *Server) OnFileStored(f func(context.Context)) { s.fileStored = f }

// SetUploadGrace sets how long an upload runs before the minimum rate
// applies (10 s in production).
func (s *Server) SetUploadGrace(d time.Duration) { s.uploadGrace = d }
