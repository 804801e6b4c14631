package push

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"golang.org/x/time/rate"

	"github.com/killrchat/killrchat/chat"
)

// Defaults (see Config).
const (
	// Away is how long a person must have had no live connection on any
	// instance before their messages are pushed.
	Away           = 60 * time.Second
	defaultWorkers = 4
	// defaultRate is Config.Rate's default: pushes a second per instance.
	// At about 310 µs of CPU each (e2e/load post -push-subs), 300 a second
	// take about a tenth of a core from posts.
	defaultRate  = 300
	defaultQueue = 10_000
	// TTL is how long a push service keeps a push for a browser that is off.
	TTL = 24 * time.Hour
	// vapidLife is how long a VAPID token is valid (the push services'
	// limit is 24 h).
	vapidLife = 12 * time.Hour
	retries   = 3
)

// Config sets up a Sender.
type Config struct {
	// PublicKey and PrivateKey are the VAPID key pair (base64url); empty:
	// the pair stored in Cassandra, made by the first instance.
	PublicKey, PrivateKey string
	// Subject is the VAPID contact (a mailto: or https: URL).
	Subject string
	// AllowHTTPLoopback also accepts http://127.0.0.1:<port>/ endpoints,
	// and lets pushes connect to 127.0.0.1 (tests run their own push
	// service); no other address that is not public is ever allowed.
	AllowHTTPLoopback bool
	Workers, Queue    int
	// Backoff is the first wait before a retry (default 1 s), doubled each time.
	Backoff time.Duration
	// Rate bounds the pushes this instance sends a second (0: 300;
	// negative: no bound), and so the CPU they take from posts: a message
	// to a big room at "everything" is a push per person.
	Rate float64
}

// Presence says who was online lately (live/presence.Tracker).
type Presence interface {
	SeenWithin(login string, d time.Duration) bool
}

// Message is a stored message, as push needs it.
type Message struct {
	Conversation string // the conversation's id (a room's name key, or a DM's address)
	// Members are the conversation's members by login: a DM's all, a
	// room's those the message mentions (see store.Mentionable); shared,
	// never changed.
	Members    map[string]chat.UserRef
	Author     string
	AuthorName string
	Title      string // "#general", "a direct message" (of three or more), or "" for a DM of two
	Path       string // the conversation's page
	ID         string
	Text       string   // plain text
	Mentioned  []string // logins it mentions
}

// Payload is what a push carries, as JSON; the service worker shows it.
type Payload struct {
	Title        string `json:"title"`
	Body         string `json:"body"`
	URL          string `json:"url"`
	Tag          string `json:"tag"`
	From         string `json:"from"`
	Conversation string `json:"conversation"`
}

// Storage is what pushes read and clean up (store.Store): the VAPID pair,
// a room's header and members, the conversation's levels, subscriptions.
type Storage interface {
	VAPIDKeys(ctx context.Context, generate func() (public, private string, err error)) (string, string, error)
	Room(ctx context.Context, name string) (chat.Room, error)
	MembersOf(ctx context.Context, r chat.Room, logins []string) (map[string]chat.UserRef, error)
	ConversationLevels(ctx context.Context, conversation string) (map[string]chat.Level, error)
	PushSubscriptionsOf(ctx context.Context, logins []string) (map[string][]chat.PushSubscription, error)
	DeletePushSubscription(ctx context.Context, login, endpoint string) error
}

// Sender queues and sends pushes.
type Sender struct {
	db       Storage
	cfg      Config
	http     *http.Client
	presence Presence
	count    func(result string)
	log      *slog.Logger
	queue    chan Message
	pace     *rate.Limiter // nil: unpaced
	pub      string
	priv     string
	wg       sync.WaitGroup
	pending  sync.WaitGroup
	// reads are the reads of levels under way and asked for, by
	// conversation (see levels).
	readsMu sync.Mutex
	reads   map[string]*levelsSlot
}

// New makes a Sender, with the configured VAPID pair or the one in
// Cassandra (made by the first instance that needs one), and starts its
// workers until closing closes. count is told of each push's result:
// sent, failed, dropped, gone (a subscription removed), retried.
func New(ctx context.Context, db Storage, cfg Config, presence Presence, count func(string), log *slog.Logger, closing <-chan struct{}) (*Sender, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = defaultWorkers
	}
	if cfg.Queue <= 0 {
		cfg.Queue = defaultQueue
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Subject == "" {
		cfg.Subject = "mailto:admin@killrchat.invalid"
	}
	if count == nil {
		count = func(string) {}
	}
	s := &Sender{db: db, cfg: cfg, presence: presence, count: count, log: log, queue: make(chan Message, cfg.Queue)}
	s.http = s.client()
	if cfg.Rate == 0 {
		cfg.Rate = defaultRate
	}
	if cfg.Rate > 0 {
		s.pace = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate/10)))
	}
	if cfg.PublicKey != "" || cfg.PrivateKey != "" {
		if cfg.PublicKey == "" || cfg.PrivateKey == "" {
			return nil, errors.New("push: give both VAPID keys, or neither")
		}
		s.pub, s.priv = cfg.PublicKey, cfg.PrivateKey
	} else {
		var err error
		s.pub, s.priv, err = db.VAPIDKeys(ctx, func() (string, string, error) {
			priv, pub, err := webpush.GenerateVAPIDKeys()
			return pub, priv, err
		})
		if err != nil {
			return nil, err
		}
	}
	for range cfg.Workers {
		s.wg.Add(1)
		go s.work(closing)
	}
	return s, nil
}

// PublicKey is the VAPID public key (base64url), for the browser's
// subscription.
func (s *Sender) PublicKey() string { return s.pub }

// CheckSubscription says what is wrong with sub (parsed by
// chat.ParsePushSubscription), if anything: its endpoint must be https
// on a host that is neither an address that is not public nor a local
// name (or, when allowed, http or https on 127.0.0.1). A push is refused
// again when its connection would reach such an address.
func (s *Sender) CheckSubscription(sub chat.PushSubscription) error {
	if _, err := chat.ParsePushSubscription(sub.Endpoint, sub.P256dh, sub.Auth); err != nil {
		return err
	}
	u, err := url.Parse(sub.Endpoint)
	if err != nil {
		return errors.New("The push endpoint is not a URL.")
	}
	loopback := s.cfg.AllowHTTPLoopback && u.Hostname() == allowedLoopback.String()
	if u.Scheme != "https" && !loopback {
		return errors.New("A push endpoint must be https.")
	}
	return s.checkHost(u.Hostname())
}

// Posted hands a stored message to the queue, never waiting: a full
// queue drops it (counted).
func (s *Sender) Posted(m Message) {
	s.pending.Add(1)
	select {
	case s.queue <- m:
	default:
		s.pending.Done()
		s.count("dropped")
	}
}

// Flush waits until every message queued so far is handled (tests).
func (s *Sender) Flush() { s.pending.Wait() }

func (s *Sender) work(closing <-chan struct{}) {
	defer s.wg.Done()
	for {
		select {
		case <-closing:
			return
		case m := <-s.queue:
			s.deliverQueued(m)
		}
	}
}

// drainMax is the most queued messages a worker takes at once.
const drainMax = 64

// deliverQueued delivers m and the messages queued behind it (up to
// drainMax), reading each conversation's levels once for those of its
// messages: a busy room's posts cost one read of its levels per turn of
// a worker, not one each. The read comes after every one of them was
// queued, as each one's own read would.
func (s *Sender) deliverQueued(m Message) {
	ms := []Message{m}
	for len(ms) < drainMax {
		select {
		case more := <-s.queue:
			ms = append(ms, more)
			continue
		default:
		}
		break
	}
	levels := map[string]map[string]chat.Level{}
	for _, m := range ms {
		lv, ok := levels[m.Conversation]
		if !ok {
			lv = s.levels(m.Conversation)
			levels[m.Conversation] = lv
		}
		if lv != nil {
			s.deliver(m, lv)
		} else {
			s.count("failed")
		}
		s.pending.Done()
	}
}

// levels reads conversation's levels, or nil (logged) if the read fails.
// Workers share reads: one that asks while a read of the conversation is
// under way waits for the next one, sent once that one is answered with
// every worker that asked meanwhile (never the read under way, which may
// have been sent before the messages it asks for were queued).
func (s *Sender) levels(conversation string) map[string]chat.Level {
	s.readsMu.Lock()
	if s.reads == nil {
		s.reads = map[string]*levelsSlot{}
	}
	sl := s.reads[conversation]
	if sl == nil {
		sl = &levelsSlot{}
		s.reads[conversation] = sl
	}
	if sl.running {
		r := sl.next
		if r == nil {
			r = &levelsRead{done: make(chan struct{})}
			sl.next = r
		}
		s.readsMu.Unlock()
		<-r.done
		return r.levels
	}
	sl.running = true
	s.readsMu.Unlock()
	r := &levelsRead{done: make(chan struct{})}
	s.readLevels(conversation, sl, r)
	return r.levels
}

// levelsSlot is the reads of one conversation's levels: whether one is
// under way, and the next one's waiters.
type levelsSlot struct {
	running bool
	next    *levelsRead
}

// levelsRead is one read of a conversation's levels, shared by the
// workers that wait for it.
type levelsRead struct {
	done   chan struct{}
	levels map[string]chat.Level // nil: the read failed
}

// readLevels makes read r of conversation's levels, then starts the next
// one if workers wait for it.
func (s *Sender) readLevels(conversation string, sl *levelsSlot, r *levelsRead) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	levels, err := s.db.ConversationLevels(ctx, conversation)
	cancel()
	if err != nil {
		s.log.Warn("push: levels", "conversation", conversation, "err", err)
		levels = nil
	}
	r.levels = levels
	close(r.done)
	s.readsMu.Lock()
	next := sl.next
	sl.next = nil
	if next == nil {
		sl.running = false
		if s.reads[conversation] == sl {
			delete(s.reads, conversation)
		}
	}
	s.readsMu.Unlock()
	if next != nil {
		go s.readLevels(conversation, sl, next)
	}
}

// everyoneWanting is m's members (those it mentions), and the members of
// its room among those whose level is everything.
func (s *Sender) everyoneWanting(ctx context.Context, m Message, levels map[string]chat.Level) (map[string]chat.UserRef, error) {
	var want []string
	for login, level := range levels {
		if _, ok := m.Members[login]; !ok && level == chat.LevelEverything {
			want = append(want, login)
		}
	}
	if len(want) == 0 {
		return m.Members, nil
	}
	r, err := s.db.Room(ctx, m.Conversation)
	if err != nil {
		return nil, err
	}
	found, err := s.db.MembersOf(ctx, r, want)
	if err != nil {
		return nil, err
	}
	for login, p := range m.Members {
		found[login] = p
	}
	return found, nil
}

// deliver finds who, by the conversation's levels, gets m and sends to
// each of their browsers.
func (s *Sender) deliver(m Message, levels map[string]chat.Level) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := []rune(m.Text)
	if len(body) > 100 {
		body = append(body[:99], '…')
	}
	// A DM of two is titled with its author alone, as the page's own
	// notification is (issue 39: "Ada Lovelace in Ada Lovelace").
	title := m.AuthorName
	if m.Title != "" {
		title += " in " + m.Title
	}
	payload, err := json.Marshal(Payload{
		Title: title, Body: string(body),
		URL: m.Path + "?at=" + m.ID + "#msg-" + m.ID, Tag: m.ID,
		From: m.Author, Conversation: m.Path,
	})
	if err != nil {
		return
	}
	members := m.Members
	if !chat.IsDM(m.Conversation) {
		// A room's message carries the members it mentions, not all
		// (a room may have 10,000): those who want every message are
		// looked up among the members, by their rows.
		if members, err = s.everyoneWanting(ctx, m, levels); err != nil {
			s.log.Warn("push: members", "conversation", m.Conversation, "err", err)
			s.count("failed")
			return
		}
	}
	var away []string
	for login := range members {
		if login == m.Author {
			continue
		}
		level, ok := levels[login]
		if !ok {
			level = chat.DefaultLevel(m.Conversation)
		}
		switch {
		case level == chat.LevelNothing:
			continue
		case level == chat.LevelMentions && !slices.Contains(m.Mentioned, login):
			continue
		}
		if s.presence != nil && s.presence.SeenWithin(login, Away) {
			continue
		}
		away = append(away, login)
	}
	if len(away) == 0 {
		return
	}
	subs, err := s.db.PushSubscriptionsOf(ctx, away)
	if err != nil {
		s.log.Warn("push: subscriptions", "conversation", m.Conversation, "err", err)
		s.count("failed")
		return
	}
	for _, login := range away {
		for _, sub := range subs[login] {
			s.send(ctx, login, sub, payload)
		}
	}
}

// send pushes payload to one browser, retrying a 429 or 5xx with backoff;
// a 404 or 410 (the subscription is gone) deletes it.
func (s *Sender) send(ctx context.Context, login string, sub chat.PushSubscription, payload []byte) {
	if s.CheckSubscription(sub) != nil {
		s.count("failed")
		return
	}
	if s.pace != nil && s.pace.Wait(ctx) != nil {
		s.count("failed")
		return
	}
	wait := s.cfg.Backoff
	for attempt := 0; ; attempt++ {
		resp, err := webpush.SendNotificationWithContext(ctx, payload,
			&webpush.Subscription{Endpoint: sub.Endpoint, Keys: webpush.Keys{P256dh: sub.P256dh, Auth: sub.Auth}},
			&webpush.Options{HTTPClient: s.http, Subscriber: s.cfg.Subject, TTL: int(TTL / time.Second),
				Urgency: webpush.UrgencyHigh, VAPIDPublicKey: s.pub, VAPIDPrivateKey: s.priv,
				VapidExpiration: time.Now().Add(vapidLife)})
		status := 0
		if err == nil {
			status = resp.StatusCode
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		switch {
		case err == nil && status >= 200 && status < 300:
			s.count("sent")
			return
		case status == http.StatusNotFound || status == http.StatusGone:
			if err := s.db.DeletePushSubscription(ctx, login, sub.Endpoint); err != nil {
				s.log.Warn("push: delete a gone subscription", "login", login, "err", err)
			}
			s.count("gone")
			return
		case (err != nil || status == http.StatusTooManyRequests || status >= 500) && attempt < retries:
			s.count("retried")
			select {
			case <-ctx.Done():
				s.count("failed")
				return
			case <-time.After(wait):
			}
			wait *= 2
		default:
			s.log.Warn("push: not sent", "login", login, "status", status, "err", err)
			s.count("failed")
			return
		}
	}
}
