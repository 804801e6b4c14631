// A post holds a Pass for its room from before its check of the room to
// the end of its writes. A fence, after the change's LWT, drops the room
// from the caches of every instance and then drains each instance's gate
// for the room: it waits until every pass that entered before the drop has
// left. So a post either checked the room after the drop (and read the
// change from Cassandra), or had stored its message before the fence
// returned, which is before the change is acknowledged (and before a
// deleted room's clean-up, which then deletes the message with the room).
//
// Across instances a fence waits for an acknowledgement from every
// instance heard lately, at most FenceTimeout. An instance that does not
// answer in time has not heard the fence, and then its passes know it:
// a pass is held only if, when it leaves, this instance has heard from
// every other instance something that instance sent less than LeaseFor
// before (live/natshub). Since an instance's messages arrive in the order
// they were sent, a pass that leaves with a fence not yet heard left less
// than LeaseFor after the fence was sent, well inside the time its sender
// waits. A pass that is not held is checked again by its post with a read
// after its write (the store's SaveMessage), which holds whatever the
// caches knew.

package fence

import (
	"hash/fnv"
	"sync"
	"time"
)

const (
	// gateShards is how many locks the rooms share: a fence waits for
	// the passes of the rooms that share its lock too, for as long as
	// their writes take.
	gateShards = 256
	// FenceTimeout bounds how long a fence waits for the other instances.
	FenceTimeout = 3 * time.Second
	// LeaseFor is how recent what an instance has heard from each other
	// instance must be for its passes to be held (see the file comment).
	LeaseFor = time.Second
)

// Gate holds this instance's posts in flight, per room (see Pass).
type Gate struct {
	shards [gateShards]sync.RWMutex
}

func (g *Gate) lock(room string) *sync.RWMutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(room))
	return &g.shards[h.Sum32()%gateShards]
}

// Enter lets a post in; it leaves with the function returned.
func (g *Gate) Enter(room string) (leave func()) {
	l := g.lock(room)
	l.RLock()
	return l.RUnlock
}

// Drain returns once every post that entered room's gate before it was
// called has left. Posts that enter while it waits wait for it: a drain
// takes as long as the longest write in flight.
func (g *Gate) Drain(room string) {
	l := g.lock(room)
	l.Lock()
	l.Unlock() //nolint:staticcheck // an empty critical section: the drain is the wait
}

// Pass is a post's hold on its room's gate.
type Pass struct {
	leave func()
	held  func() bool
	once  sync.Once
	ok    bool
}

// NewPass is a pass that leaves with leave and is held if held says so
// when it leaves (a transport's own check of what it heard).
func NewPass(leave func(), held func() bool) *Pass { return &Pass{leave: leave, held: held} }

// Leave ends the pass, and says whether every fence of the room sent
// before this moment found it (then the post needs no read to know its
// check held); false means the post must check again with a read.
func (p *Pass) Leave() bool {
	p.once.Do(func() {
		p.ok = p.held == nil || p.held()
		p.leave()
	})
	return p.ok
}
