// This file owns the store's side of message ids: the generator each Store
// makes its ids with (chat.IDGenerator) and what live streams ask of it.

package store

import "github.com/killrchat/killrchat/chat"

// IDFloor returns a timestamp, in the 100 ns ticks of a timeuuid, that
// every message id this store makes from now on reaches or exceeds. Live
// streams use it to split what they replay from what they wait for.
func (s *Store) IDFloor() int64 { return s.ids.Floor(s.Now()) }

// MadeHere reports whether this process made the message id (ids from other
// instances carry another node part).
func (s *Store) MadeHere(id chat.ID) bool { return s.ids.MadeHere(id) }
