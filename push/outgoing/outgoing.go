// This file owns the sender: which bots a post goes to, the queue's
// worker, one delivery's attempt, and the reply.

package outgoing

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/push"
)

// Defaults of Config.
const (
	DefaultTimeout = 7 * time.Second
	DefaultRetries = 3
	DefaultBackoff = time.Second
	// leaseFor is how long a claim holds a delivery: past it, another
	// instance takes it (its holder died).
	leaseFor = 30 * time.Second
	// claimTimeout bounds a claim of a delivery.
	claimTimeout = 10 * time.Second
	// poll is how often the worker reads the queue when not woken.
	poll = 500 * time.Millisecond
	// maxReply bounds the answer read for a reply.
	maxReply = 64 << 10
	// workers bounds the deliveries under way per instance.
	workers = 32
)

// Config configures outgoing webhooks.
type Config struct {
	// Allow are the address ranges deliveries may reach beyond public
	// ones (--bot-allow-addresses); none by default.
	Allow []netip.Prefix
	// BaseURL is the site's public address, for permalinks and the
	// address to post back to ("" makes them paths).
	BaseURL string
	// Timeout, Retries and Backoff: see the package comment (zero takes
	// the defaults); the n-th retry waits Backoff times 2^(n-1).
	Timeout time.Duration
	Retries int
	Backoff time.Duration
	// Off leaves the queue unread by this instance (it still enqueues).
	Off bool
	// Ready, when not nil, holds the worker back until it is closed (the
	// database connected): before that every read of the queue would
	// fail, and say so twice a poll.
	Ready <-chan struct{}
}

// Queue is the storage of deliveries and endpoints (store.Store).
type Queue interface {
	BotEndpoints(ctx context.Context) (map[string]chat.BotEndpoint, error)
	NewChangeID() chat.ID
	EnqueueDelivery(ctx context.Context, d chat.Delivery) error
	Deliveries(ctx context.Context, hour string, from chat.ID) ([]chat.Delivery, error)
	ClaimDelivery(ctx context.Context, d chat.Delivery, until time.Time) (chat.Delivery, bool, error)
	SettleDelivery(ctx context.Context, d chat.Delivery) (bool, error)
	ClaimReply(ctx context.Context, d chat.Delivery) (bool, error)
}

// Replier posts a bot's reply in a conversation (the post use case).
type Replier func(ctx context.Context, bot, conversation, text string) error

// Sender queues and delivers.
type Sender struct {
	cfg    Config
	q      Queue
	reply  Replier
	log    *slog.Logger
	client *http.Client
	guard  push.Guard
	wake   chan struct{}
	slots  chan struct{}

	mu        sync.Mutex
	endpoints map[string]chat.BotEndpoint
	readAt    time.Time
	floors    map[string]chat.ID // per hour, the oldest id not known done
	busy      map[chat.ID]bool
	wg        sync.WaitGroup
}

// New returns a sender; its worker runs until closing is closed, unless
// cfg.Off.
func New(q Queue, cfg Config, reply Replier, log *slog.Logger, closing <-chan struct{}) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retries <= 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	allow := slices.Clone(cfg.Allow)
	g := push.Guard{Allow: func(ip netip.Addr) bool {
		return slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(ip) })
	}}
	s := &Sender{cfg: cfg, q: q, reply: reply, log: log, guard: g, client: g.Client(cfg.Timeout),
		wake: make(chan struct{}, 1), slots: make(chan struct{}, workers), floors: map[string]chat.ID{}, busy: map[chat.ID]bool{}}
	if !cfg.Off {
		go s.work(closing)
	}
	return s
}

// Forget drops the cached endpoints (a bot's endpoint changed on some
// instance).
func (s *Sender) Forget() {
	s.mu.Lock()
	s.endpoints = nil
	s.mu.Unlock()
}

// endpointsTTL bounds how long the cached endpoints are trusted.
const endpointsTTL = 30 * time.Second

func (s *Sender) botEndpoints(ctx context.Context) (map[string]chat.BotEndpoint, error) {
	s.mu.Lock()
	if s.endpoints != nil && time.Since(s.readAt) < endpointsTTL {
		e := s.endpoints
		s.mu.Unlock()
		return e, nil
	}
	s.mu.Unlock()
	e, err := s.q.BotEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.endpoints, s.readAt = e, time.Now()
	s.mu.Unlock()
	return e, nil
}

// Post is a posted message as deliveries carry it.
type Post struct {
	In           chat.Place
	Conversation chat.Conversation
	Message      chat.Message
	HTML         []byte
	// Title names the conversation; Path is its page's path.
	Title, Path string
}

// payload is the JSON a bot gets.
type payload struct {
	Type         string          `json:"type"`
	Bot          string          `json:"bot"`
	Message      messagePayload  `json:"message"`
	Conversation conversationRef `json:"conversation"`
}

type messagePayload struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	HTML      string `json:"html"`
	Author    author `json:"author"`
	Time      string `json:"time"`
	Permalink string `json:"permalink"`
}

type author struct {
	Login string `json:"login"`
	Name  string `json:"name"`
}

type conversationRef struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Title string `json:"title"`
	// PostURL is the bot API's address of its messages, to post to.
	PostURL string `json:"post_url"`
}

// Targets are the bots with an endpoint that p goes to: in a room, those
// it mentions (conv holds the mentioned members); in a DM, its bots;
// never its author.
func Targets(p Post, endpoints map[string]chat.BotEndpoint) []string {
	m := p.Message
	if m.System {
		return nil
	}
	var out []string
	if _, isDM := p.In.(chat.DM); isDM {
		for login := range p.Conversation.Members {
			if _, ok := endpoints[login]; ok && login != m.Author.Login {
				out = append(out, login)
			}
		}
	} else {
		for _, login := range chat.Mentioned(m.Content, p.Conversation.Members) {
			if _, ok := endpoints[login]; ok && login != m.Author.Login {
				out = append(out, login)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Posted queues p for each bot it goes to, durably, before it returns;
// a failure is logged (the message is stored).
func (s *Sender) Posted(ctx context.Context, p Post) {
	if p.Message.System {
		return
	}
	endpoints, err := s.botEndpoints(ctx)
	if err != nil {
		s.log.Warn("outgoing: bot endpoints", "err", err)
		return
	}
	targets := Targets(p, endpoints)
	for _, bot := range targets {
		body, err := json.Marshal(s.payload(bot, p))
		if err != nil {
			s.log.Error("outgoing: payload", "err", err)
			continue
		}
		d := chat.Delivery{ID: s.q.NewChangeID(), Bot: bot, Conversation: p.Conversation.ID, Body: body, NextAt: time.Now()}
		if err := s.q.EnqueueDelivery(context.WithoutCancel(ctx), d); err != nil {
			s.log.Warn("outgoing: enqueue", "bot", bot, "err", err)
		}
	}
	if len(targets) > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *Sender) payload(bot string, p Post) payload {
	m, conv := p.Message, p.Conversation
	kind := "room"
	if _, isDM := p.In.(chat.DM); isDM {
		kind = "dm"
	}
	return payload{Type: "message", Bot: bot,
		Message: messagePayload{ID: m.ID.String(), Text: m.Content, HTML: string(p.HTML),
			Author: author{Login: m.Author.Login, Name: m.Author.Name()}, Time: m.Time().UTC().Format(time.RFC3339Nano),
			Permalink: s.cfg.BaseURL + p.Path + "#msg-" + m.ID.String()},
		Conversation: conversationRef{ID: conv.ID, Kind: kind, Title: p.Title,
			PostURL: s.cfg.BaseURL + "/api/v1/conversations/" + url.PathEscape(conv.ID) + "/messages"}}
}

// Sign is the signature of body at ts: "v0=" and the hex HMAC-SHA256 of
// "v0:<ts>:<body>" under secret.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + strconv.FormatInt(ts, 10) + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// work reads the queue when woken or every poll, until closing.
func (s *Sender) work(closing <-chan struct{}) {
	if s.cfg.Ready != nil {
		select {
		case <-closing:
			return
		case <-s.cfg.Ready:
		}
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-closing:
			s.wg.Wait()
			return
		case <-t.C:
		case <-s.wake:
		}
		s.round(closing)
	}
}

// round claims and starts each due delivery of the current and the
// previous hour.
func (s *Sender) round(closing <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	for _, hour := range []string{chat.DeliveryHour(now.Add(-time.Hour)), chat.DeliveryHour(now)} {
		s.mu.Lock()
		floor := s.floors[hour]
		s.mu.Unlock()
		ds, err := s.q.Deliveries(ctx, hour, floor)
		if err != nil {
			s.log.Warn("outgoing: read the queue", "hour", hour, "err", err)
			continue
		}
		allDone := true
		for _, d := range ds {
			if d.Done {
				if allDone {
					floor = d.ID
				}
				continue
			}
			allDone = false
			if d.NextAt.After(now) || d.LeaseUntil.After(now) || s.isBusy(d.ID) {
				continue
			}
			select {
			case <-closing:
				return
			case s.slots <- struct{}{}:
			}
			// The claim (an LWT) is made by the delivery's goroutine:
			// the due deliveries are claimed at once, not one after
			// another behind each other's Paxos rounds. Busy keeps the
			// next round of this instance off it meanwhile.
			s.setBusy(d.ID, true)
			s.wg.Add(1)
			go func() {
				defer func() { <-s.slots; s.setBusy(d.ID, false); s.wg.Done() }()
				ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
				d, ok, err := s.q.ClaimDelivery(ctx, d, now.Add(leaseFor))
				cancel()
				if err != nil || !ok {
					return
				}
				s.attempt(d)
			}()
		}
		s.mu.Lock()
		s.floors[hour] = floor
		s.mu.Unlock()
	}
}

func (s *Sender) isBusy(id chat.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy[id]
}

func (s *Sender) setBusy(id chat.ID, b bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b {
		s.busy[id] = true
	} else {
		delete(s.busy, id)
	}
}

// errRefused is an endpoint the guard refuses: no retry.
var errRefused = errors.New("outgoing: the endpoint's address is not allowed")

// attempt makes one delivery attempt of d, claimed, and settles it.
func (s *Sender) attempt(d chat.Delivery) {
	ctx := context.Background()
	retry, text, err := s.send(ctx, d)
	if err != nil {
		s.log.Info("outgoing: delivery failed", "bot", d.Bot, "delivery", d.ID, "attempt", d.Attempts+1, "retry", retry, "err", err)
	}
	d.Attempts++
	switch {
	case err == nil:
		d.Done = true
		if text != "" {
			s.replyOnce(ctx, d, text)
		}
	case retry && d.Attempts <= s.cfg.Retries:
		d.NextAt = time.Now().Add(s.cfg.Backoff << (d.Attempts - 1))
	default:
		d.Done = true
	}
	if _, err := s.q.SettleDelivery(ctx, d); err != nil {
		s.log.Warn("outgoing: settle delivery", "delivery", d.ID, "err", err)
	}
	if !d.Done {
		time.AfterFunc(time.Until(d.NextAt), func() {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		})
	}
}

// replyOnce posts text as d's bot's reply, if no attempt of d did.
func (s *Sender) replyOnce(ctx context.Context, d chat.Delivery, text string) {
	ok, err := s.q.ClaimReply(ctx, d)
	if err != nil || !ok {
		if err != nil {
			s.log.Warn("outgoing: claim reply", "delivery", d.ID, "err", err)
		}
		return
	}
	if err := s.reply(ctx, d.Bot, d.Conversation, text); err != nil {
		s.log.Warn("outgoing: post reply", "bot", d.Bot, "conversation", d.Conversation, "err", err)
	}
}

// send POSTs d to its bot's endpoint as it is now: whether a failure
// is worth a retry, and the reply's text of a 2xx.
func (s *Sender) send(ctx context.Context, d chat.Delivery) (retry bool, text string, err error) {
	s.Forget() // the endpoint as it is at delivery time
	endpoints, err := s.botEndpoints(ctx)
	if err != nil {
		return true, "", err
	}
	ep, ok := endpoints[d.Bot]
	if !ok {
		return false, "", errors.New("outgoing: the bot has no endpoint any more")
	}
	u, err := url.Parse(ep.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !s.guard.CheckHost(u.Hostname()) {
		return false, "", errRefused
	}
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(d.Body))
	if err != nil {
		return false, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "KillrChat-Webhooks/1")
	req.Header.Set("X-KillrChat-Request-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-KillrChat-Signature", Sign(ep.Secret, ts, d.Body))
	if d.Attempts > 0 {
		req.Header.Set("X-KillrChat-Retry-Num", strconv.Itoa(d.Attempts))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if strings.Contains(err.Error(), "not public") {
			return false, "", errRefused
		}
		return true, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	switch {
	case resp.StatusCode >= 500:
		return true, "", errors.New("outgoing: " + resp.Status)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return false, "", errors.New("outgoing: " + resp.Status)
	}
	return false, replyText(resp.Header.Get("Content-Type"), body), nil
}

// replyText is the text of a 2xx answer: a text/plain body, or the
// field text of a JSON one; "" for none.
func replyText(contentType string, body []byte) string {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	switch mediaType {
	case "text/plain":
		return strings.TrimSpace(string(body))
	case "application/json":
		var v struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(body, &v) == nil {
			return strings.TrimSpace(v.Text)
		}
	}
	return ""
}

// AllowedHost reports whether an endpoint's host may be reached, as far
// as it can be told before DNS (push.Guard.CheckHost).
func (s *Sender) AllowedHost(host string) bool { return s.guard.CheckHost(host) }
