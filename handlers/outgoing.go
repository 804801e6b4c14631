// This file wires bots' outgoing webhooks (push/outgoing) to the
// server: posts hand their message to it, its replies are posts of the
// bot, and a changed endpoint anywhere drops every instance's cache.

package handlers

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/live"
	"github.com/killrchat/killrchat/push/outgoing"
	"github.com/killrchat/killrchat/service"
)

// setUpOutgoing starts the sender of outgoing webhooks.
func (s *Server) setUpOutgoing() {
	cfg := s.cfg.Outgoing
	if cfg.BaseURL == "" {
		cfg.BaseURL = strings.TrimSuffix(s.cfg.SiteURL, "/")
	}
	cfg.Ready = s.db.Connected()
	s.outgoing = outgoing.New(s.db, cfg, s.botReply, s.log, s.closing)
	s.hub.WatchInvalidations(func(inv live.Invalidation) {
		if len(inv.Accounts) > 0 {
			s.outgoing.Forget()
		}
	})
	s.hub.Watch(func(live.StreamEnd) {}, s.outgoing.Forget)
}

// botReply posts a bot's reply to a delivery, as the bot, through the
// post use case.
func (s *Server) botReply(ctx context.Context, bot, conversation, text string) error {
	u, err := s.db.User(ctx, bot)
	if err != nil {
		return err
	}
	if !u.IsBot() {
		return errors.New("outgoing: the reply's author is no bot")
	}
	cv, err := s.ConversationByID(ctx, u.Login, conversation)
	if err != nil {
		return err
	}
	var pass = s.app.EnterRoom(conversation)
	defer pass.Leave()
	if cv.Room == nil {
		pass = nil
	}
	_, _, err = s.app.PostText(ctx, service.TextPost{In: cv.Place, Author: u.Ref(), Content: text, Pass: pass})
	return err
}

// CheckBotEndpoint says why an outgoing webhook's address is refused,
// or nil: an absolute http(s) URL whose host the guard lets through
// (it is checked again at each delivery, after DNS).
func (s *Server) CheckBotEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return errors.New("Write an absolute http or https address, such as https://bot.example.com/hook.")
	}
	if !s.outgoing.AllowedHost(u.Hostname()) {
		return errors.New("This address is not on the internet: loopback, private, link-local and metadata addresses are refused.")
	}
	return nil
}

// outgoingPosted hands posts to the sender (service.Outgoing).
type outgoingPosted struct{ s *Server }

func (o outgoingPosted) Posted(ctx context.Context, in chat.Place, conv chat.Conversation, m chat.Message, html []byte) {
	p := outgoing.Post{In: in, Conversation: conv, Message: m, HTML: html, Title: conv.ID, Path: RoomURL(conv.ID)}
	if d, ok := in.(chat.DM); ok {
		p.Title, p.Path = d.Address, DMURL(d.Address)
	}
	o.s.outgoing.Posted(ctx, p)
}
