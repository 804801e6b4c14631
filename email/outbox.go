package email

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Outbox sends single mails (verification links, reset links) off the
// request's path: a bounded queue and one worker, each mail tried up to
// outboxTries times with back-off while the server is down; past that it
// is dropped and logged (the person can ask again). A refusal is not
// retried.
type Outbox struct {
	sender  *Sender
	queue   chan Mail
	count   func(result string)
	log     *slog.Logger
	backoff time.Duration
	pending sync.WaitGroup
}

const (
	outboxQueue = 1000
	outboxTries = 6
)

// NewOutbox starts an outbox on sender until closing closes. count is told
// of each mail's result: sent, refused, failed, dropped, retried.
func NewOutbox(sender *Sender, count func(string), log *slog.Logger, closing <-chan struct{}) *Outbox {
	if count == nil {
		count = func(string) {}
	}
	o := &Outbox{sender: sender, queue: make(chan Mail, outboxQueue), count: count, log: log, backoff: 2 * time.Second}
	go o.work(closing)
	return o
}

// Mail queues a text mail, never waiting: false when the queue is full.
func (o *Outbox) Mail(to, subject, text string) bool {
	o.pending.Add(1)
	select {
	case o.queue <- Mail{To: to, Subject: subject, Text: text}:
		return true
	default:
		o.pending.Done()
		o.count("dropped")
		return false
	}
}

// Flush waits until every mail queued so far is handled (tests).
func (o *Outbox) Flush() { o.pending.Wait() }

func (o *Outbox) work(closing <-chan struct{}) {
	for {
		select {
		case <-closing:
			return
		case m := <-o.queue:
			o.deliver(m, closing)
			o.pending.Done()
		}
	}
}

func (o *Outbox) deliver(m Mail, closing <-chan struct{}) {
	wait := o.backoff
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		answer, err := o.sender.Send(ctx, m)
		cancel()
		switch {
		case err == nil:
			o.count("sent")
			o.log.Info("email: sent", "subject", m.Subject, "answer", answer)
			return
		case Permanent(err) || try == outboxTries:
			result := "failed"
			if Permanent(err) {
				result = "refused"
			}
			o.count(result)
			o.log.Warn("email: not sent", "subject", m.Subject, "result", result, "err", err)
			return
		}
		o.count("retried")
		select {
		case <-closing:
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}
