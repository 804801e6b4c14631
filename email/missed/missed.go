package missed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
)

// Store is what the notifier reads and writes (store.Store).
type Store interface {
	ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error)
	Room(ctx context.Context, name string) (chat.Room, error)
	MembersOf(ctx context.Context, r chat.Room, logins []string) (map[string]chat.UserRef, error)
	DM(ctx context.Context, address string) (chat.DM, error)
	User(ctx context.Context, login string) (chat.User, error)
	Message(ctx context.Context, in chat.Place, id chat.ID) (chat.Message, error)
	MarkerAndLevel(ctx context.Context, login, conversation string) (chat.ID, chat.Level, error)

	AddPendingEmail(ctx context.Context, due time.Time, login, conversation string, messages []chat.ID, attempts int) error
	EmailDues(ctx context.Context, day string, after, upTo time.Time) ([]time.Time, error)
	PendingEmails(ctx context.Context, due time.Time) ([]chat.PendingEmail, error)
	ClaimPendingEmail(ctx context.Context, p chat.PendingEmail, owner string, leaseUntil time.Time) (bool, error)
	FinishPendingEmail(ctx context.Context, p chat.PendingEmail, owner, state string) (bool, error)
}

// Presence says who had a live connection lately, on any instance
// (live/presence.Tracker).
type Presence interface {
	SeenWithin(login string, d time.Duration) bool
}

// Sender sends one mail (email.Sender).
type Sender interface {
	Send(ctx context.Context, m email.Mail) (string, error)
	Domain() string
}

// Config sets up a Notifier.
type Config struct {
	// Delay is how long a message waits (default 2 minutes); it is also
	// the window whose messages of a conversation make one email.
	Delay time.Duration
	// HideText leaves message text out of every email.
	HideText bool
	// SiteURL starts every link.
	SiteURL string
	// Owner names this instance in claims.
	Owner string
	// UnsubscribeKey signs the unsubscribe links.
	UnsubscribeKey []byte
	// Lease is how long a claim holds before another instance may take
	// the row (default 2 minutes; more than a send takes).
	Lease time.Duration
	// Tick is how often due rows are looked for (default Delay/4, between
	// 100 ms and 5 s).
	Tick time.Duration
	// MaxBackoff bounds the wait between two tries (default an hour);
	// GiveUp is how long after its oldest message an email is tried
	// (default a day).
	MaxBackoff, GiveUp time.Duration
	// Lookback is how far back a starting instance looks for rows left
	// by one that stopped (default GiveUp).
	Lookback time.Duration
	Now      func() time.Time
	// Ready, when not nil, holds the scans back until it is closed (the
	// database connected): before that every scan would fail and say so.
	Ready <-chan struct{}
}

// Posted is a stored message, as the notifier needs it.
type Posted struct {
	Conversation string
	// Members are a DM's members, or the room members it mentions.
	Members   map[string]chat.UserRef
	Author    string
	ID        chat.ID
	Mentioned []string
}

// Notifier records missed messages and sends their emails.
type Notifier struct {
	db       Store
	presence Presence
	sender   Sender
	cfg      Config
	count    func(result string)
	log      *slog.Logger
	queue    chan Posted
	pending  sync.WaitGroup

	mu      sync.Mutex
	open    map[time.Time]bool // due times listed, not finished
	scanned time.Time          // due times up to this are in open or finished
	// While the SMTP server is down (a send failed for a reason of the
	// server's, email.ServerDown), nothing is claimed or sent until
	// downUntil, when one email tries again; downWait doubles with each
	// try that fails, up to maxProbeWait. The rows wait where they are:
	// no claim, no read of their messages, no move per row.
	downUntil time.Time
	downWait  time.Duration
	probing   bool // the one try is under way
}

// maxProbeWait bounds the wait between two tries of a server that is
// down: an email arrives at most this long after the server returns.
const maxProbeWait = time.Minute

const queueSize = 10_000

// New starts a notifier until closing closes. count hears each email's
// result: sent, refused, failed (given up), retried, dropped (nothing
// left to send), lost (the queue was full).
func New(db Store, presence Presence, sender Sender, cfg Config, count func(string), log *slog.Logger, closing <-chan struct{}) *Notifier {
	if cfg.Delay <= 0 {
		cfg.Delay = 2 * time.Minute
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Tick <= 0 {
		cfg.Tick = min(max(cfg.Delay/4, 100*time.Millisecond), 5*time.Second)
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Hour
	}
	if cfg.GiveUp <= 0 {
		cfg.GiveUp = 24 * time.Hour
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = cfg.GiveUp
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if count == nil {
		count = func(string) {}
	}
	n := &Notifier{db: db, presence: presence, sender: sender, cfg: cfg, count: count, log: log,
		queue: make(chan Posted, queueSize), open: map[time.Time]bool{}, scanned: cfg.Now().Add(-cfg.Lookback)}
	go n.record(closing)
	go n.scan(closing)
	return n
}

// Posted hands a stored message to the notifier, never waiting: a full
// queue loses it (counted).
func (n *Notifier) Posted(p Posted) {
	n.pending.Add(1)
	select {
	case n.queue <- p:
	default:
		n.pending.Done()
		n.count("lost")
	}
}

// Flush waits until every message handed so far is recorded (tests).
func (n *Notifier) Flush() { n.pending.Wait() }

// DueOf is when a message posted at t is mailed: the end of its window
// plus the delay.
func (n *Notifier) DueOf(t time.Time) time.Time {
	d := n.cfg.Delay
	return t.Truncate(d).Add(d).Add(d).UTC().Truncate(time.Millisecond)
}

// dueFrom is the due time of a message posted at t, recorded now: DueOf,
// or, if that is too close for the row not to be sent before the write
// lands (a recording late behind a backlog), the end of a later window.
func (n *Notifier) dueFrom(t time.Time) time.Time {
	return n.laterThan(n.DueOf(t))
}

// laterThan is due, or, if due is not comfortably ahead of now (half a
// delay, so that no scan has it yet when the write lands), the first
// window's end after that: rows written there join those of the window.
func (n *Notifier) laterThan(due time.Time) time.Time {
	d := n.cfg.Delay
	earliest := n.cfg.Now().Add(d / 2)
	if due.After(earliest) {
		return due
	}
	return earliest.Truncate(d).Add(d).UTC().Truncate(time.Millisecond)
}

func (n *Notifier) record(closing <-chan struct{}) {
	for {
		select {
		case <-closing:
			return
		case p := <-n.queue:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := n.recordOne(ctx, p); err != nil {
				n.log.Warn("email: record a missed message", "conversation", p.Conversation, "err", err)
			}
			cancel()
			n.pending.Done()
		}
	}
}

// recordOne writes a pending row for each person the message may be
// mailed to.
func (n *Notifier) recordOne(ctx context.Context, p Posted) error {
	levels, err := n.db.ConversationLevels(ctx, p.Conversation)
	if err != nil {
		return err
	}
	dm := chat.IsDM(p.Conversation)
	candidates := map[string]bool{}
	for login := range p.Members {
		if dm || slices.Contains(p.Mentioned, login) {
			candidates[login] = true
		}
	}
	if !dm {
		// Those at "everything" are looked up among the room's members,
		// by their rows, as Web Push does.
		var want []string
		for login, level := range levels {
			if level == chat.LevelEverything && !candidates[login] {
				want = append(want, login)
			}
		}
		if len(want) > 0 {
			r, err := n.db.Room(ctx, p.Conversation)
			if err != nil {
				return err
			}
			found, err := n.db.MembersOf(ctx, r, want)
			if err != nil {
				return err
			}
			for login := range found {
				candidates[login] = false // wanted by the level, not a mention
			}
		}
	}
	posted := p.ID.Time()
	for login, direct := range candidates {
		if login == p.Author {
			continue
		}
		level, ok := levels[login]
		if !ok {
			level = chat.DefaultLevel(p.Conversation)
		}
		if level == chat.LevelNothing {
			continue
		}
		// Connected now, or since the post: it does not qualify.
		if n.presence != nil && n.presence.SeenWithin(login, n.cfg.Now().Sub(posted)) {
			continue
		}
		u, err := n.db.User(ctx, login)
		if err != nil {
			if errors.Is(err, chat.ErrNotFound) {
				continue
			}
			return err
		}
		if !wants(u, direct) {
			continue
		}
		due := n.dueFrom(posted)
		if err := n.db.AddPendingEmail(ctx, due, u.Login, p.Conversation, []chat.ID{p.ID}, 0); err != nil {
			return err
		}
		// Recorded late (a backlog, a slow write), its due time may be
		// behind this instance's scan already: it is looked at here.
		n.mu.Lock()
		n.open[due] = true
		n.mu.Unlock()
	}
	return nil
}

// wants says whether u's settings ask for a message: direct is a
// mention of them or a DM; else it reached them by the level
// "everything".
func wants(u chat.User, direct bool) bool {
	if !u.Active() || !u.EmailVerified() {
		return false
	}
	switch u.Mail.NotifyOr() {
	case chat.EmailOff:
		return false
	case chat.EmailMentions:
		return direct
	}
	return true
}

// scan looks for due rows every tick.
func (n *Notifier) scan(closing <-chan struct{}) {
	if n.cfg.Ready != nil {
		select {
		case <-closing:
			return
		case <-n.cfg.Ready:
		}
	}
	tick := time.NewTicker(n.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-closing:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := n.scanOnce(ctx, closing); err != nil {
			n.log.Warn("email: scan the pending emails", "err", err)
		}
		cancel()
	}
}

// scanOnce lists the due times that came since the last scan and
// handles every due time not finished.
func (n *Notifier) scanOnce(ctx context.Context, closing <-chan struct{}) error {
	now := n.cfg.Now().UTC().Truncate(time.Millisecond)
	n.mu.Lock()
	from := n.scanned
	n.mu.Unlock()
	for day := from.UTC().Truncate(24 * time.Hour); !day.After(now); day = day.Add(24 * time.Hour) {
		dues, err := n.db.EmailDues(ctx, day.Format("20060102"), from, now)
		if err != nil {
			return err
		}
		n.mu.Lock()
		for _, d := range dues {
			n.open[d] = true
		}
		n.mu.Unlock()
	}
	n.mu.Lock()
	n.scanned = now
	var open []time.Time
	for d := range n.open {
		if !d.After(now) {
			open = append(open, d)
		}
	}
	n.mu.Unlock()
	sort.Slice(open, func(i, j int) bool { return open[i].Before(open[j]) })
	for _, due := range open {
		select {
		case <-closing:
			return nil
		default:
		}
		if n.serverDown() {
			return nil // the rows wait for the next try
		}
		done, err := n.handleDue(ctx, due, now)
		if err != nil {
			return err
		}
		if done {
			n.mu.Lock()
			delete(n.open, due)
			n.mu.Unlock()
		}
	}
	return nil
}

// workers are the emails of one due time sent at once.
const workers = 4

// handleDue claims and sends the rows of due; true once every row is in
// a final state.
func (n *Notifier) handleDue(ctx context.Context, due, now time.Time) (bool, error) {
	rows, err := n.db.PendingEmails(ctx, due)
	if err != nil {
		return false, err
	}
	var (
		mu   sync.Mutex
		done = true
		wg   sync.WaitGroup
		work = make(chan chat.PendingEmail)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				ok, probe := n.mayTry()
				finished := ok && n.claimAndSend(ctx, p, now)
				if probe {
					n.endProbe()
				}
				if !finished {
					mu.Lock()
					done = false
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range rows {
		if p.State != "" {
			continue
		}
		if p.Owner != "" && now.Before(p.LeaseUntil) {
			done = false // another instance (or this one) is on it
			continue
		}
		work <- p
	}
	close(work)
	wg.Wait()
	return done, nil
}

// claimAndSend claims p and, if this instance got it, handles it; false
// if it is not finished.
func (n *Notifier) claimAndSend(ctx context.Context, p chat.PendingEmail, now time.Time) bool {
	ok, err := n.db.ClaimPendingEmail(ctx, p, n.cfg.Owner, now.Add(n.cfg.Lease))
	if err != nil {
		n.log.Warn("email: claim", "login", p.Login, "err", err)
		return false
	}
	if !ok {
		return false // another instance has it; read again next tick
	}
	state := n.handle(ctx, p)
	if state == "" {
		return false
	}
	if _, err := n.db.FinishPendingEmail(ctx, p, n.cfg.Owner, state); err != nil {
		n.log.Warn("email: finish", "login", p.Login, "state", state, "err", err)
		return false
	}
	return true
}

// handle builds and sends p's email as things stand now, and returns
// its final state.
func (n *Notifier) handle(ctx context.Context, p chat.PendingEmail) string {
	if n.cfg.Now().Sub(oldest(p)) > n.cfg.GiveUp {
		n.count("failed")
		n.log.Warn("email: given up", "login", p.Login, "attempts", p.Attempts)
		return chat.EmailRefused
	}
	m, ok, err := n.compose(ctx, p)
	if err != nil {
		n.log.Warn("email: compose", "login", p.Login, "conversation", p.Conversation, "err", err)
		return n.retry(ctx, p)
	}
	if !ok {
		n.count("dropped")
		return chat.EmailDropped
	}
	sctx, cancel := context.WithTimeout(ctx, min(n.cfg.Lease/2, time.Minute))
	answer, err := n.sender.Send(sctx, m)
	cancel()
	switch {
	case err == nil:
		n.serverUp()
		n.count("sent")
		n.log.Info("email: missed messages sent", "login", p.Login, "answer", answer)
		return chat.EmailSent
	case email.Permanent(err) || errors.Is(err, email.ErrHeader):
		if email.Answered(err) {
			n.serverUp()
		}
		n.count("refused")
		n.log.Warn("email: refused", "login", p.Login, "err", err)
		return chat.EmailRefused
	case email.ServerDown(err):
		if wait, first := n.serverFailed(); first {
			n.log.Warn("email: the SMTP server is down; sending waits", "next try in", wait, "err", err)
		}
		// Not this email's failure: it waits one delay, its own count
		// of attempts (and back-off) as it was.
		return n.moveOn(ctx, p, p.Attempts, n.cfg.Delay)
	default: // the server answered: this mail waits, not the others
		n.serverUp()
		n.log.Warn("email: not sent, will retry", "login", p.Login, "attempts", p.Attempts+1, "err", err)
	}
	return n.retry(ctx, p)
}

// serverDown says whether sending waits for the SMTP server.
func (n *Notifier) serverDown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.probing || n.cfg.Now().Before(n.downUntil)
}

// mayTry says whether an email may be sent now: yes while the server is
// up; while it is down, one, once the wait is over: the try (probe), which
// endProbe ends.
func (n *Notifier) mayTry() (ok, probe bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.downWait == 0:
		return true, false
	case n.probing || n.cfg.Now().Before(n.downUntil):
		return false, false
	}
	n.probing = true
	return true, true
}

// endProbe ends a try that told nothing of the server (not claimed,
// nothing left to send, not composed): another may go at once.
func (n *Notifier) endProbe() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.probing = false
}

// serverFailed notes a send that failed for the server's reason: the
// next try waits, twice as long as the last one; first says it was up.
func (n *Notifier) serverFailed() (wait time.Duration, first bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	first = n.downWait == 0
	switch {
	case first:
		n.downWait = min(n.cfg.Delay, maxProbeWait)
	case n.cfg.Now().After(n.downUntil): // a try after the wait failed
		n.downWait = min(2*n.downWait, maxProbeWait)
	}
	n.downUntil = n.cfg.Now().Add(n.downWait)
	n.probing = false
	return n.downWait, first
}

// serverUp notes an answer of the server: sending goes on.
func (n *Notifier) serverUp() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.downWait != 0 {
		n.log.Info("email: the SMTP server answers again")
	}
	n.downWait, n.downUntil, n.probing = 0, time.Time{}, false
}

// oldest is the time of p's oldest message (its due time if earlier).
func oldest(p chat.PendingEmail) time.Time {
	t := p.Due
	for _, id := range p.Messages {
		if id.Time().Before(t) {
			t = id.Time()
		}
	}
	return t
}

// retry moves p to a later due time, doubling the wait each time, until
// a day after its oldest message.
func (n *Notifier) retry(ctx context.Context, p chat.PendingEmail) string {
	return n.moveOn(ctx, p, p.Attempts+1, min(n.cfg.Delay<<min(p.Attempts, 20), n.cfg.MaxBackoff))
}

// moveOn moves p wait later, with attempts, unless it is older than the
// give-up time.
func (n *Notifier) moveOn(ctx context.Context, p chat.PendingEmail, attempts int, wait time.Duration) string {
	if n.cfg.Now().Sub(oldest(p)) > n.cfg.GiveUp {
		n.count("failed")
		return chat.EmailRefused
	}
	next := p.Due.Add(wait)
	if now := n.cfg.Now(); next.Before(now) {
		next = now.Add(wait).Truncate(time.Millisecond)
	}
	next = n.laterThan(next)
	if err := n.db.AddPendingEmail(ctx, next, p.Login, p.Conversation, p.Messages, attempts); err != nil {
		n.log.Warn("email: move to a later time", "login", p.Login, "err", err)
		return "" // not finished: the lease runs out, and it is tried again
	}
	n.mu.Lock()
	n.open[next.UTC().Truncate(time.Millisecond)] = true
	n.mu.Unlock()
	n.count("retried")
	return chat.EmailMoved
}

// threadID is the id every email of one person's conversation refers
// to, so that mail clients thread them; it names neither.
func threadID(login, conversation string) string {
	h := sha256.Sum256([]byte(login + "\x00" + conversation))
	return hex.EncodeToString(h[:12])
}
