package handlers

import (
	"context"

	"github.com/killrchat/killrchat/live"
)

// EndStreams lets the tests call endStreams, the contract that handlers
// which revoke sessions (a password change) use.
func (s *Server) EndStreams(ctx context.Context, end live.StreamEnd) { s.endStreams(ctx, end) }
