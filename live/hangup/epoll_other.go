//go:build !linux

package hangup

// peerWatch has no epoll here: every stream is polled (see Watcher).
type peerWatch struct{}

func newPeerWatch() *peerWatch                  { return nil }
func (*peerWatch) add(Conn, uint64) (int, bool) { return 0, false }
func (*peerWatch) remove(int)                   {}
func (h *Watcher) waitWatched()                 {}
