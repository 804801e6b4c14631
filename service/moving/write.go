// This file owns how imported messages are written: a conversation's
// messages a batch at a time, with what a live post writes beside them
// (the head, the DM lists, the mentions, the search index), so that an
// imported conversation reads as one whose messages were posted live.

package moving

import (
	"context"
	"io"

	"github.com/killrchat/killrchat/chat"
	"golang.org/x/sync/errgroup"
)

// Target is what an import writes (store.Store).
type Target interface {
	RestoreUser(ctx context.Context, u chat.User, hash string) (bool, error)
	User(ctx context.Context, login string) (chat.User, error)
	SetAdmin(ctx context.Context, login string, admin bool) (chat.Site, error)
	SaveSettings(ctx context.Context, policy string, domains []string, rooms string) (chat.Site, error)
	RestoreRoom(ctx context.Context, r chat.Room, members []chat.Member) error
	RestoreMessages(ctx context.Context, in chat.Place, msgs []chat.Message) error
	RestoreFile(ctx context.Context, f chat.StoredFile, body io.Reader) error
	Mentionable(ctx context.Context, in chat.Place, contents ...string) (chat.Conversation, error)
	RecordMentions(ctx context.Context, conv chat.Conversation, m chat.Message) error
	RestoreDMEntry(ctx context.Context, d chat.DM, m chat.Message) error
	IndexMessages(ctx context.Context, msgs []chat.Message) error
	MarkRead(ctx context.Context, login, conversation string, upTo chat.ID) error
}

const (
	// batchSize is how many messages of a conversation go at once.
	batchSize = 200
	// mentionWrites bounds the messages whose mentions are written at
	// once.
	mentionWrites = 8
)

// conversationWriter writes one conversation's messages in batches.
type conversationWriter struct {
	t     Target
	in    chat.Place
	batch []chat.Message
	// newest is the newest message written, zero for none.
	newest chat.ID
}

func (w *conversationWriter) add(ctx context.Context, m chat.Message) error {
	w.batch = append(w.batch, m)
	if len(w.batch) >= batchSize {
		return w.flush(ctx)
	}
	return nil
}

// flush writes the batch: the messages with the head, the mentions and
// the index at once (none reads what another writes), then the DM lists.
// Each is written again by a re-run (every write is idempotent), so a
// kill between them leaves nothing that the next run does not complete.
func (w *conversationWriter) flush(ctx context.Context) error {
	if len(w.batch) == 0 {
		return nil
	}
	msgs := w.batch
	w.batch = w.batch[:0:0]
	last := msgs[0]
	var index []chat.Message
	for _, m := range msgs {
		if m.ID.After(last.ID) {
			last = m
		}
		if !m.System {
			index = append(index, m)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.t.RestoreMessages(gctx, w.in, msgs) })
	g.Go(func() error { return w.mentions(gctx, index) })
	if len(index) > 0 {
		g.Go(func() error { return w.t.IndexMessages(gctx, index) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if d, ok := w.in.(chat.DM); ok {
		// Written USING TIMESTAMP of the message: the newest stays.
		if err := w.t.RestoreDMEntry(ctx, d, last); err != nil {
			return err
		}
	}
	if last.ID.After(w.newest) {
		w.newest = last.ID
	}
	return nil
}

// mentions records the mentions of msgs (no system lines), a few
// messages at a time.
func (w *conversationWriter) mentions(ctx context.Context, msgs []chat.Message) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(mentionWrites)
	for _, m := range msgs {
		if len(chat.MentionCandidates([]string{m.Content})) == 0 {
			continue
		}
		g.Go(func() error {
			conv, err := w.t.Mentionable(gctx, w.in, m.Content)
			if err != nil {
				return err
			}
			if len(chat.Mentioned(m.Content, conv.Members)) == 0 {
				return nil
			}
			return w.t.RecordMentions(gctx, conv, m)
		})
	}
	return g.Wait()
}
