// This file owns how imported messages are written: a conversation's
// messages a batch at a time, with what a live post writes beside them
// (the head, the DM lists, the mentions, the search index), so that an
// imported conversation reads as one whose messages were posted live.

package moving

import (
	"context"
	"io"

	"github.com/killrchat/killrchat/chat"
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

// batchSize is how many messages of a conversation go at once.
const batchSize = 200

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

// flush writes the batch: the messages and the head first, then the
// mentions, the DM lists and the index, each of which a re-run writes
// again (every write is idempotent), so a kill between them leaves
// nothing that the next run does not complete.
func (w *conversationWriter) flush(ctx context.Context) error {
	if len(w.batch) == 0 {
		return nil
	}
	msgs := w.batch
	w.batch = w.batch[:0:0]
	if err := w.t.RestoreMessages(ctx, w.in, msgs); err != nil {
		return err
	}
	last := msgs[0]
	for _, m := range msgs {
		if m.ID.After(last.ID) {
			last = m
		}
		if m.System || len(chat.MentionCandidates([]string{m.Content})) == 0 {
			continue
		}
		conv, err := w.t.Mentionable(ctx, w.in, m.Content)
		if err != nil {
			return err
		}
		if len(chat.Mentioned(m.Content, conv.Members)) > 0 {
			if err := w.t.RecordMentions(ctx, conv, m); err != nil {
				return err
			}
		}
	}
	if d, ok := w.in.(chat.DM); ok {
		// Written USING TIMESTAMP of the message: the newest stays.
		if err := w.t.RestoreDMEntry(ctx, d, last); err != nil {
			return err
		}
	}
	var index []chat.Message
	for _, m := range msgs {
		if !m.System {
			index = append(index, m)
		}
	}
	if len(index) > 0 {
		if err := w.t.IndexMessages(ctx, index); err != nil {
			return err
		}
	}
	if last.ID.After(w.newest) {
		w.newest = last.ID
	}
	return nil
}
