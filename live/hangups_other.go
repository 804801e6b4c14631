//go:build !linux

package live

// peerWatch has no epoll here: every stream is polled (see hangups).
type peerWatch struct{}

func newPeerWatch() *peerWatch                          { return nil }
func (*peerWatch) add(*eventWriter, uint64) (int, bool) { return 0, false }
func (*peerWatch) remove(int)                           {}
func (h *hangups) waitWatched()                         {}
