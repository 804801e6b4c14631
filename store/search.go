// This file owns the search index: writing a message's terms to
// message_terms (and its words to conversation_words, for prefixes), and
// answering a query over a person's conversations, newest first, by
// intersecting the terms' partitions month by month.

package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/killrchat/chat"
)

const (
	insertTerm = `INSERT INTO message_terms (conversation, term, month, message_id) VALUES (?, ?, ?, ?)`
	deleteTerm = `DELETE FROM message_terms WHERE conversation = ? AND term = ? AND month = ? AND message_id = ?`
	insertWord = `INSERT INTO conversation_words (conversation, month, word, term) VALUES (?, ?, ?, ?)`
	// Where a term occurs (schema 013): see placedCells.
	insertPlace  = `INSERT INTO term_places (term, month, conversation) VALUES (?, ?, ?)`
	selectPlaces = `SELECT conversation FROM term_places WHERE term = ? AND month = ? AND conversation IN ?`
	// Postings at or below (or strictly below) an id, above the floor.
	selectPostingsTo = `SELECT message_id FROM message_terms
		WHERE conversation = ? AND term = ? AND month = ? AND message_id <= ? AND message_id > ? LIMIT ?`
	selectPostingsBelow = `SELECT message_id FROM message_terms
		WHERE conversation = ? AND term = ? AND month = ? AND message_id < ? AND message_id > ? LIMIT ?`
	selectWordTerms = `SELECT term FROM conversation_words
		WHERE conversation = ? AND month = ? AND word >= ? AND word < ? LIMIT ?`
	selectMessagesByID = `SELECT message_id, author, content, system_message, attachment, edited FROM chat_room_messages
		WHERE room_name = ? AND time_bucket = ? AND message_id IN ?`
	selectBucketsAll = `SELECT time_bucket FROM messages_bucket WHERE room_name = ? AND time_bucket <= ? AND time_bucket >= ?`

	// indexWrites bounds one message's index statements in flight.
	indexWrites = 8
	// maxExpansions bounds the words one prefix stands for in a
	// conversation's month: each is a partition to read.
	maxExpansions = 20
	// searchReaders bounds the conversations read at once by one search.
	searchReaders = 16
	// firstPage and lastPage bound one read of a term's postings: small
	// after a jump (most of a page would be skipped), doubling while read
	// in sequence.
	firstPage, lastPage = 16, 1024
	// wordMemoSize bounds the words remembered as written (about 80 bytes
	// each); past it the memo starts again empty.
	wordMemoSize = 500_000
)

// indexEntries are the terms and words m is indexed under: its terms
// (chat.Terms of its text, and its author's term), from one pass of the
// tokeniser.
func indexEntries(m chat.Message) (terms []string, words []chat.Word) {
	forms, seen := map[string]bool{}, map[string]bool{}
	for _, sp := range chat.TermSpans(chat.IndexedText(m)) {
		for _, w := range sp.Words {
			if !forms[w.Form] {
				forms[w.Form] = true
				words = append(words, w)
			}
			if !seen[w.Term] {
				seen[w.Term] = true
				terms = append(terms, w.Term)
			}
		}
	}
	return append(terms, chat.FromTerm(m.Author.Login)), words
}

// IndexMessage writes m's terms and words to the search index: see
// IndexMessages.
func (s *Store) IndexMessage(ctx context.Context, m chat.Message) error {
	return s.IndexMessages(ctx, []chat.Message{m})
}

// IndexMessages writes the terms and words of msgs to the search index.
// It is idempotent: every row is keyed by its message, so writing it
// again (a retry, the backfill) changes nothing. System messages are not
// indexed.
//
// The rows are grouped by partition: the rows of one partition (a common
// term in several of the messages, a month's new words) are one mutation,
// and partitions of a row or two go several to an unlogged batch, at most
// batchPartitions of them, so Cassandra handles one request where it
// would handle a statement per row (on a busy machine, the index cost a
// post most of its Cassandra time when written row by row). The batches
// run a few at a time; the first error is returned, after the others are
// tried.
func (s *Store) IndexMessages(ctx context.Context, msgs []chat.Message) error {
	if _, err := s.placesFrom(ctx); err != nil {
		return err
	}
	type termKey struct {
		conv, term string
		month      int
	}
	type wordKey struct {
		conv  string
		month int
	}
	var termOrder []termKey
	terms := map[termKey][]chat.ID{}
	var wordOrder []wordKey
	words := map[wordKey][]chat.Word{}
	for _, m := range msgs {
		if m.System {
			continue
		}
		ts, ws := indexEntries(m)
		month := monthOf(m.Time())
		for _, t := range ts {
			k := termKey{m.Room, t, month}
			if _, ok := terms[k]; !ok {
				termOrder = append(termOrder, k)
			}
			terms[k] = append(terms[k], m.ID)
		}
		for _, w := range ws {
			if s.words.has(wordMemoKey(m.Room, month, w.Form)) {
				continue
			}
			k := wordKey{m.Room, month}
			if _, ok := words[k]; !ok {
				wordOrder = append(wordOrder, k)
			}
			words[k] = append(words[k], w)
		}
	}
	var parts []indexPartition
	type placeKey struct {
		term  string
		month int
	}
	var placeOrder []placeKey
	places := map[placeKey][]string{}
	for _, k := range termOrder {
		var rows [][]any
		for _, id := range terms[k] {
			rows = append(rows, []any{k.conv, k.term, k.month, gocql.UUID(id)})
		}
		parts = append(parts, indexPartition{stmt: insertTerm, rows: rows})
		if !s.words.has(placeMemoKey(k.conv, k.month, k.term)) {
			pk := placeKey{k.term, k.month}
			if _, ok := places[pk]; !ok {
				placeOrder = append(placeOrder, pk)
			}
			places[pk] = append(places[pk], k.conv)
		}
	}
	for _, k := range placeOrder {
		var rows [][]any
		for _, conv := range places[k] {
			rows = append(rows, []any{k.term, k.month, conv})
		}
		k := k
		parts = append(parts, indexPartition{stmt: insertPlace, rows: rows, done: func() {
			for _, conv := range places[k] {
				s.words.add(placeMemoKey(conv, k.month, k.term))
			}
		}})
	}
	for _, k := range wordOrder {
		var rows [][]any
		seen := map[string]bool{}
		for _, w := range words[k] {
			if !seen[w.Form] {
				seen[w.Form] = true
				rows = append(rows, []any{k.conv, k.month, w.Form, w.Term})
			}
		}
		k := k
		parts = append(parts, indexPartition{stmt: insertWord, rows: rows, done: func() {
			for _, r := range rows {
				s.words.add(wordMemoKey(k.conv, k.month, r[2].(string)))
			}
		}})
	}
	return s.writeBatches(ctx, "index messages", parts)
}

func wordMemoKey(conv string, month int, form string) string {
	return fmt.Sprintf("%s\x00%d\x00%s", conv, month, form)
}

// placeMemoKey is wordMemoKey's counterpart for term_places rows (terms
// and words are both folded text, so a prefix keeps them apart).
func placeMemoKey(conv string, month int, term string) string {
	return fmt.Sprintf("%s\x00%d\x00\x01%s", conv, month, term)
}

// UnindexMessage removes m, as it was indexed, from the index: the message
// lifecycle calls it with the old text before an edit (then IndexMessage
// with the new) and on a delete. Searches check every result against the
// stored message anyway, so until it runs a changed or deleted message is
// only read, never shown. Words stay in conversation_words: a prefix that
// finds a word no message has any more reads an empty partition.
func (s *Store) UnindexMessage(ctx context.Context, m chat.Message) error {
	terms, _ := indexEntries(m)
	month := monthOf(m.Time())
	var parts []indexPartition
	for _, t := range terms {
		parts = append(parts, indexPartition{stmt: deleteTerm, rows: [][]any{{m.Room, t, month, gocql.UUID(m.ID)}}})
	}
	return s.writeBatches(ctx, "unindex message in "+m.Room, parts)
}

const (
	// batchPartitions is the most partitions one index batch writes:
	// Cassandra warns past 10 (unlogged_batch_across_partitions_warn_threshold).
	batchPartitions = 10
	// batchRows bounds the rows of one batch.
	batchRows = 200
)

// indexPartition is the rows of one partition of the index to write with
// one statement, and what to remember once they are written.
type indexPartition struct {
	stmt string
	rows [][]any
	done func()
}

// writeBatches writes parts in unlogged batches (one statement when a
// batch would hold a single row), a partition's rows always in one batch,
// up to batchPartitions partitions and batchRows rows a batch, indexWrites
// batches at a time.
func (s *Store) writeBatches(ctx context.Context, op string, parts []indexPartition) error {
	var batches [][]indexPartition
	var cur []indexPartition
	rows := 0
	for _, p := range parts {
		if len(cur) > 0 && (len(cur) == batchPartitions || rows+len(p.rows) > batchRows) {
			batches = append(batches, cur)
			cur, rows = nil, 0
		}
		cur = append(cur, p)
		rows += len(p.rows)
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	sess, err := s.db()
	if err != nil {
		return err
	}
	return s.eachConcurrently(ctx, len(batches), indexWrites, func(ctx context.Context, i int) error {
		b := batches[i]
		var err error
		if len(b) == 1 && len(b[0].rows) == 1 {
			err = s.exec(ctx, op, b[0].stmt, b[0].rows[0]...)
		} else {
			batch := sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
			batch.SetConsistency(s.cfg.Consistency)
			for _, p := range b {
				for _, r := range p.rows {
					batch.Entries = append(batch.Entries, gocql.BatchEntry{Stmt: p.stmt, Args: r, Idempotent: true})
				}
			}
			if err = sess.ExecuteBatch(batch); err != nil {
				err = s.fail(op, err)
			}
		}
		if err != nil {
			return err
		}
		for _, p := range b {
			if p.done != nil {
				p.done()
			}
		}
		return nil
	})
}

// wordMemo remembers (conversation, word, month) rows already written by
// this process: a word is written once per conversation and month, not
// once per message. It only saves writes.
type wordMemo struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

func (w *wordMemo) has(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.seen[key]
	return ok
}

func (w *wordMemo) add(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil || len(w.seen) >= wordMemoSize {
		w.seen = make(map[string]struct{})
	}
	w.seen[key] = struct{}{}
}

// idBefore orders timeuuids as Cassandra orders message_id: by time, then
// by the rest of their bytes.
func idBefore(a, b chat.ID) bool {
	ta, tb := a.Timestamp(), b.Timestamp()
	if ta != tb {
		return ta < tb
	}
	for i := 8; i < 16; i++ {
		if x, y := int8(a[i]), int8(b[i]); x != y {
			return x < y
		}
	}
	return false
}

// bound is an upper limit on message ids: at or below id, or strictly
// below it.
type bound struct {
	id        chat.ID
	inclusive bool
}

func (b bound) admits(id chat.ID) bool {
	return idBefore(id, b.id) || (b.inclusive && id == b.id)
}

// postingIter walks one term's partition for one conversation and month,
// newest first; seek jumps down without reading what lies between.
type postingIter interface {
	// seek returns the newest id within b, or false if none is left.
	seek(ctx context.Context, b bound) (chat.ID, bool, error)
	// density is how many ids a tick of time the last read found: after
	// a first seek, it tells a rare term from a common one.
	density() float64
}

// postings reads a (conversation, term, month) partition a page at a time.
type postings struct {
	s                   *Store
	conv, term          string
	month               int
	floor               chat.ID
	buf                 []chat.ID // newest first; pos is the next to look at
	pos                 int
	exhausted           bool // nothing below buf's last id
	page, lastRead      int  // size of the next read, and of the last one
	statements, fetched *int
}

func (p *postings) seek(ctx context.Context, b bound) (chat.ID, bool, error) {
	for {
		for p.pos < len(p.buf) && !b.admits(p.buf[p.pos]) {
			p.pos++
		}
		if p.pos < len(p.buf) {
			return p.buf[p.pos], true, nil
		}
		// Seeks only go down, so once a read reached the partition's
		// floor, what the buffer held was all there was.
		if p.exhausted {
			return chat.ID{}, false, nil
		}
		p.page = firstPage
		if n := len(p.buf); n > 0 {
			// Reading on close below the last page (within the time it
			// spanned): the term is dense here, read twice as much. A jump
			// further down starts small again: most of a big page would be
			// skipped.
			last := p.buf[n-1].Timestamp()
			if last-b.id.Timestamp() <= p.buf[0].Timestamp()-last {
				p.page = min(p.lastRead*2, lastPage)
			}
		}
		if err := p.read(ctx, b); err != nil {
			return chat.ID{}, false, err
		}
	}
}

func (p *postings) density() float64 {
	n := len(p.buf)
	if n == 0 {
		return 0
	}
	low := p.buf[n-1]
	if p.exhausted {
		low = p.floor // nothing more down to the floor
	}
	return float64(n) / float64(max(p.buf[0].Timestamp()-low.Timestamp(), 1))
}

// read replaces the buffer with the newest page within b.
func (p *postings) read(ctx context.Context, b bound) error {
	stmt := selectPostingsBelow
	if b.inclusive {
		stmt = selectPostingsTo
	}
	q, err := p.s.query(ctx, stmt, p.conv, p.term, p.month, gocql.UUID(b.id), gocql.UUID(p.floor), p.page)
	if err != nil {
		return err
	}
	iter := q.PageSize(0).Iter()
	p.buf, p.pos = p.buf[:0], 0
	var id chat.ID
	for iter.Scan((*gocql.UUID)(&id)) {
		p.buf = append(p.buf, id)
	}
	if err := iter.Close(); err != nil {
		return p.s.fail("read postings of "+p.conv, err)
	}
	*p.statements++
	*p.fetched += len(p.buf)
	p.exhausted, p.lastRead = len(p.buf) < p.page, p.page
	return nil
}

// unionIter is the newest id of any of its parts: a prefix's words.
type unionIter []postingIter

func (u unionIter) seek(ctx context.Context, b bound) (chat.ID, bool, error) {
	var best chat.ID
	found := false
	for _, it := range u {
		id, ok, err := it.seek(ctx, b)
		if err != nil {
			return chat.ID{}, false, err
		}
		if ok && (!found || idBefore(best, id)) {
			best, found = id, true
		}
	}
	return best, found, nil
}

func (u unionIter) density() float64 {
	d := 0.0
	for _, it := range u {
		d += it.density()
	}
	return d
}

// andIter is the ids every part has: each part seeks to the newest id of
// the others in turn (a zig-zag join). On its first seek it reads the top
// of every part and puts the rarest first, whatever the query's order, so
// a rare term leads and a common one is read only around the rare one's
// ids; a part with nothing ends it at once.
type andIter struct {
	parts   []postingIter
	ordered bool
}

func (a *andIter) density() float64 { return a.parts[0].density() }

func (a *andIter) seek(ctx context.Context, b bound) (chat.ID, bool, error) {
	if !a.ordered {
		a.ordered = true
		for _, it := range a.parts {
			if _, ok, err := it.seek(ctx, b); err != nil || !ok {
				return chat.ID{}, false, err
			}
		}
		sort.SliceStable(a.parts, func(i, j int) bool { return a.parts[i].density() < a.parts[j].density() })
	}
	for {
		cand, ok, err := a.parts[0].seek(ctx, b)
		if err != nil || !ok {
			return chat.ID{}, false, err
		}
		agreed := true
		for _, it := range a.parts[1:] {
			id, ok, err := it.seek(ctx, bound{id: cand, inclusive: true})
			if err != nil || !ok {
				return chat.ID{}, false, err
			}
			if id != cand {
				b, agreed = bound{id: id, inclusive: true}, false
				break
			}
		}
		if agreed {
			return cand, true, nil
		}
	}
}

// Search returns up to n messages of convs that match q, newest first,
// older than the message id before (the newest if it is the zero UUID),
// and whether more exist. Only convs are searched: the caller passes the
// conversations the searcher is in now. Every result is checked against
// the message as stored (see Matches), so one changed or deleted since it
// was indexed is left out.
func (s *Store) Search(ctx context.Context, convs []chat.Conversation, q chat.SearchQuery, before chat.ID, n int) ([]chat.Message, bool, chat.SearchStats, error) {
	var st chat.SearchStats
	top := bound{id: chat.MaxIDAt(s.Now().Add(time.Hour)), inclusive: true}
	if before != (chat.ID{}) {
		top = bound{id: before}
	}
	months, err := s.searchMonths(ctx, convs, top.id, &st)
	if err != nil {
		return nil, false, st, err
	}
	// The newest month alone first: a common term fills the page there.
	// If it does not, every older month at once: a rare term is in few of
	// them, and reading them one after the other would only add waits.
	var out []chat.Message
	for take := 1; len(months) > 0; take = len(months) {
		cells, err := s.placedCells(ctx, months[:take], q, &st)
		if err != nil {
			return nil, false, st, err
		}
		months = months[take:]
		found, err := s.searchCells(ctx, cells, q, top, n+1-len(out), &st)
		if err != nil {
			return nil, false, st, err
		}
		out = append(out, found...)
		if len(out) > n {
			return out[:n], true, st, nil
		}
	}
	return out, false, st, nil
}

// placesBatch bounds the conversations named in one read of term_places.
const placesBatch = 100

// placedCells are the cells of months to read postings in: for a query
// with terms (or an author), only the conversations where every one of
// them occurs that month, by term_places (one slice of one partition per
// term and month, all at once), so a rare term reads postings only where
// it is; a month before the places are complete (placesFrom), or a
// query of prefixes only, keeps every conversation.
func (s *Store) placedCells(ctx context.Context, months []monthConvs, q chat.SearchQuery, st *chat.SearchStats) ([]cell, error) {
	terms := append([]string(nil), q.Terms...)
	if q.From != "" {
		terms = append(terms, chat.FromTerm(q.From))
	}
	from := 0
	if len(terms) > 0 {
		var err error
		if from, err = s.placesFrom(ctx); err != nil {
			return nil, err
		}
	}
	type read struct {
		month int
		term  string
		convs []string
	}
	var reads []read
	for _, mc := range months {
		if len(terms) == 0 || mc.month < from {
			continue
		}
		for _, t := range terms {
			for i := 0; i < len(mc.convs); i += placesBatch {
				var ids []string
				for _, c := range mc.convs[i:min(i+placesBatch, len(mc.convs))] {
					ids = append(ids, c.ID)
				}
				reads = append(reads, read{month: mc.month, term: t, convs: ids})
			}
		}
	}
	type hitKey struct {
		month int
		conv  string
	}
	hits := map[hitKey]int{} // the query's terms found there
	var mu sync.Mutex
	err := s.eachConcurrently(ctx, len(reads), searchReaders, func(ctx context.Context, i int) error {
		r := reads[i]
		q, err := s.query(ctx, selectPlaces, r.term, r.month, r.convs)
		if err != nil {
			return err
		}
		iter := q.PageSize(0).Iter()
		var conv string
		var found []string
		for iter.Scan(&conv) {
			found = append(found, conv)
		}
		if err := iter.Close(); err != nil {
			return s.fail("read places of a term", err)
		}
		mu.Lock()
		defer mu.Unlock()
		st.Statements++
		for _, c := range found {
			hits[hitKey{r.month, c}]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var cells []cell
	for _, mc := range months {
		for _, c := range mc.convs {
			if len(terms) > 0 && mc.month >= from && hits[hitKey{mc.month, c.ID}] < len(terms) {
				continue
			}
			cells = append(cells, cell{conv: c, month: mc.month})
		}
	}
	return cells, nil
}

// placesSetting caches search_settings' "places_from" for a minute.
type placesSetting struct {
	mu    sync.Mutex
	month int
	at    time.Time
}

const (
	selectPlacesFrom = `SELECT month FROM search_settings WHERE name = 'places_from'`
	insertPlacesFrom = `INSERT INTO search_settings (name, month) VALUES ('places_from', ?) IF NOT EXISTS`
	setPlacesFrom    = `UPDATE search_settings SET month = ? WHERE name = 'places_from'`
	anyPosting       = `SELECT conversation FROM message_terms LIMIT 1`
)

// placesFrom is the first month whose term_places are complete. The first
// instance to index or search settles it once, by an LWT, before it writes
// any posting: 0 if no posting exists yet (a new cluster), else the next
// month (postings written before this version have no places; a full
// index-backfill sets it to 0).
func (s *Store) placesFrom(ctx context.Context) (int, error) {
	s.places.mu.Lock()
	defer s.places.mu.Unlock()
	// The wall clock, not s.Now (a test's clock, which tests move while
	// messages are indexed): this is about when the setting was read.
	if !s.places.at.IsZero() && time.Since(s.places.at) < time.Minute {
		return s.places.month, nil
	}
	var month int
	q, err := s.query(ctx, selectPlacesFrom)
	if err != nil {
		return 0, err
	}
	err = q.Scan(&month)
	if errors.Is(err, gocql.ErrNotFound) {
		month = 0
		var some string
		q, err := s.query(ctx, anyPosting)
		if err != nil {
			return 0, err
		}
		switch err := q.Scan(&some); {
		case err == nil:
			month = monthOf(time.Now().AddDate(0, 1, 0))
		case !errors.Is(err, gocql.ErrNotFound):
			return 0, s.fail("look for postings", err)
		}
		// An LWT, never retried by the driver: an unknown outcome is
		// settled by reading at SERIAL what is stored.
		stored := -1
		prev := map[string]any{}
		applied, err := s.lwt(ctx, "settle places_from", insertPlacesFrom, []any{month}, prev, func(ctx context.Context) (bool, error) {
			q, err := s.serialRead(ctx, selectPlacesFrom)
			if err != nil {
				return false, err
			}
			if err := q.Scan(&stored); err != nil {
				return false, err
			}
			return stored == month, nil
		})
		if err != nil {
			return 0, err
		}
		switch {
		case !applied && stored >= 0:
			month = stored
		case !applied:
			month, _ = prev["month"].(int)
		}
	} else if err != nil {
		return 0, s.fail("read places_from", err)
	}
	s.places.month, s.places.at = month, time.Now()
	return month, nil
}

// PlacesComplete records that term_places cover every month (a full
// backfill wrote them).
func (s *Store) PlacesComplete(ctx context.Context) error {
	if err := s.exec(ctx, "set places_from", setPlacesFrom, 0); err != nil {
		return err
	}
	s.places.mu.Lock()
	s.places.month, s.places.at = 0, time.Now()
	s.places.mu.Unlock()
	return nil
}

// monthConvs is a month and the conversations that have messages in it.
type monthConvs struct {
	month int
	convs []chat.Conversation
}

// searchMonths lists, newest first, the months in which convs have
// messages up to the id top, from their day buckets: one read per
// conversation, a few at a time, unless this process read them lately
// (see monthsMemo).
func (s *Store) searchMonths(ctx context.Context, convs []chat.Conversation, top chat.ID, st *chat.SearchStats) ([]monthConvs, error) {
	byMonth := map[int][]chat.Conversation{}
	var mu sync.Mutex
	add := func(conv chat.Conversation, months []int) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range months {
			if m <= monthOf(top.Time()) {
				byMonth[m] = append(byMonth[m], conv)
			}
		}
	}
	var unknown []chat.Conversation
	for _, conv := range convs {
		if months, ok := s.months.get(conv, s.Now()); ok {
			add(conv, months)
		} else {
			unknown = append(unknown, conv)
		}
	}
	err := s.eachConcurrently(ctx, len(unknown), searchReaders, func(ctx context.Context, i int) error {
		conv := unknown[i]
		q, err := s.query(ctx, selectBucketsAll, conv.ID, chat.TimeBucket(s.Now().Add(time.Hour)), chat.TimeBucket(conv.Since))
		if err != nil {
			return err
		}
		iter := q.PageSize(1000).Iter()
		var months []int
		var bucket int
		for iter.Scan(&bucket) {
			if m := bucket / 100; len(months) == 0 || months[len(months)-1] != m {
				months = append(months, m)
			}
		}
		if err := iter.Close(); err != nil {
			return s.fail("list buckets of "+conv.ID, err)
		}
		s.months.put(conv, months, s.Now())
		add(conv, months)
		mu.Lock()
		defer mu.Unlock()
		st.Statements++
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]monthConvs, 0, len(byMonth))
	for m, cs := range byMonth {
		out = append(out, monthConvs{month: m, convs: cs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].month > out[j].month })
	return out, nil
}

const (
	// monthsTTL is how long a conversation's list of months is trusted:
	// a month gains its first message in a conversation at most once a
	// month, and this process forgets the list when it records that
	// message's bucket; another instance's first message of a month is
	// found once the list is older than this.
	monthsTTL = time.Minute
	// monthsMemoSize bounds the lists kept; past it the memo starts again.
	monthsMemoSize = 100_000
)

// monthsMemo remembers the months with messages of conversations this
// process searched lately, so a search does not list every
// conversation's day buckets again.
type monthsMemo struct {
	mu sync.Mutex
	m  map[string]monthsEntry
}

type monthsEntry struct {
	months []int // newest first
	at     time.Time
}

func monthsKey(conv chat.Conversation) string {
	return fmt.Sprintf("%s\x00%d", conv.ID, conv.Since.UnixMilli())
}

func (mm *monthsMemo) get(conv chat.Conversation, now time.Time) ([]int, bool) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	e, ok := mm.m[monthsKey(conv)]
	if !ok || now.Sub(e.at) > monthsTTL || now.Before(e.at) {
		return nil, false
	}
	return e.months, true
}

func (mm *monthsMemo) put(conv chat.Conversation, months []int, now time.Time) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.m == nil || len(mm.m) >= monthsMemoSize {
		mm.m = map[string]monthsEntry{}
	}
	mm.m[monthsKey(conv)] = monthsEntry{months: months, at: now}
}

// forget drops conv's list: it has a new day bucket.
func (mm *monthsMemo) forget(conv chat.Conversation) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	delete(mm.m, monthsKey(conv))
}

// cell is one conversation's month: where a term's postings are.
type cell struct {
	conv  chat.Conversation
	month int
}

// cellCursor is a cell's matches: its next one (head) and the iterator
// that finds those after it.
type cellCursor struct {
	cell
	it   postingIter
	head chat.ID
	ok   bool
	st   chat.SearchStats
}

// searchCells finds up to n matches of q in cells, newest first: every
// cell's newest match is found at once (searchReaders at a time), then
// they are merged, and each candidate checked against its stored message,
// a batch at a time.
func (s *Store) searchCells(ctx context.Context, cells []cell, q chat.SearchQuery, top bound, n int, st *chat.SearchStats) ([]chat.Message, error) {
	cursors := make([]*cellCursor, len(cells))
	err := s.eachConcurrently(ctx, len(cells), searchReaders, func(ctx context.Context, i int) error {
		c := &cellCursor{cell: cells[i]}
		cursors[i] = c
		it, err := s.matcher(ctx, c, q)
		if err != nil || it == nil {
			return err
		}
		c.it = it
		c.head, c.ok, err = it.seek(ctx, top)
		return err
	})
	for _, c := range cursors {
		st.Statements += c.st.Statements
		st.Postings += c.st.Postings
		c.st = chat.SearchStats{}
	}
	if err != nil {
		return nil, err
	}
	var out []chat.Message
	for len(out) < n {
		// The next batch of candidates, newest first across the cells.
		var batch []candidate
		for len(batch) < n-len(out) {
			var best *cellCursor
			for _, c := range cursors {
				if c.ok && (best == nil || idBefore(best.head, c.head)) {
					best = c
				}
			}
			if best == nil {
				break
			}
			batch = append(batch, candidate{conv: best.conv, id: best.head})
			var err error
			best.head, best.ok, err = best.it.seek(ctx, bound{id: best.head})
			st.Statements += best.st.Statements
			st.Postings += best.st.Postings
			best.st = chat.SearchStats{}
			if err != nil {
				return nil, err
			}
		}
		if len(batch) == 0 {
			break
		}
		msgs, err := s.messagesByID(ctx, batch, st)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if q.Matches(m) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

type candidate struct {
	conv chat.Conversation
	id   chat.ID
}

// matcher builds c's iterator over its matches of q: the AND of
// its terms' postings, the author's, and for each prefix the union of the
// postings of the words it begins. It is nil when a prefix begins no word
// of the month.
func (s *Store) matcher(ctx context.Context, c *cellCursor, q chat.SearchQuery) (postingIter, error) {
	month := c.month
	floor := floorOf(c.conv)
	post := func(term string) *postings {
		return &postings{s: s, conv: c.conv.ID, term: term, month: month, floor: floor,
			statements: &c.st.Statements, fetched: &c.st.Postings}
	}
	var parts []postingIter
	for _, t := range q.Terms {
		parts = append(parts, post(t))
	}
	if q.From != "" {
		parts = append(parts, post(chat.FromTerm(q.From)))
	}
	for _, p := range q.Prefixes {
		terms, err := s.prefixTerms(ctx, c.conv.ID, month, p)
		c.st.Statements++
		if err != nil {
			return nil, err
		}
		if len(terms) == 0 {
			return nil, nil
		}
		var u unionIter
		for _, t := range terms {
			u = append(u, post(t))
		}
		parts = append(parts, u)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return &andIter{parts: parts}, nil
}

// prefixTerms are the distinct terms of the words of conv's month that
// begin with prefix, at most maxExpansions words.
func (s *Store) prefixTerms(ctx context.Context, conv string, month int, prefix string) ([]string, error) {
	q, err := s.query(ctx, selectWordTerms, conv, month, prefix, prefix+"\U0010FFFF", maxExpansions)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(0).Iter()
	var out []string
	seen := map[string]bool{}
	var t string
	for iter.Scan(&t) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read words of "+conv, err)
	}
	return out, nil
}

// messagesByID reads the candidates' messages as stored, one statement per
// conversation and day, all at once, and returns those found in the
// candidates' order.
func (s *Store) messagesByID(ctx context.Context, batch []candidate, st *chat.SearchStats) ([]chat.Message, error) {
	type key struct {
		conv   string
		bucket int
	}
	groups := map[key][]gocql.UUID{}
	var keys []key
	for _, c := range batch {
		k := key{c.conv.ID, chat.BucketOf(c.id)}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], gocql.UUID(c.id))
	}
	found := make(map[chat.ID]chat.Message, len(batch))
	var mu sync.Mutex
	err := s.eachConcurrently(ctx, len(keys), searchReaders, func(ctx context.Context, i int) error {
		k := keys[i]
		q, err := s.query(ctx, selectMessagesByID, k.conv, k.bucket, groups[k])
		if err != nil {
			return err
		}
		iter := q.PageSize(0).Iter()
		var ms []chat.Message
		for m, ok := scanMessage(iter, k.conv); ok; m, ok = scanMessage(iter, k.conv) {
			ms = append(ms, m)
		}
		if err := iter.Close(); err != nil {
			return s.fail("read messages of "+k.conv, err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			found[m.ID] = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.Statements += len(keys)
	st.Checked += len(batch)
	out := make([]chat.Message, 0, len(batch))
	for _, c := range batch {
		if m, ok := found[c.id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// eachConcurrently runs f for 0..n-1, at a time, and returns
// the first error (the others still finish).
func (s *Store) eachConcurrently(ctx context.Context, n, at int, f func(context.Context, int) error) error {
	sem := make(chan struct{}, at)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- f(ctx, i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

const (
	insertSearch   = `INSERT INTO recent_searches (login, searched_at, query) VALUES (?, ?, ?)`
	selectSearches = `SELECT query FROM recent_searches WHERE login = ? LIMIT ?`
	// recentSearches is how many searches a person sees again.
	recentSearches = 10
)

// RecordSearch remembers that login searched for query (kept 30 days).
func (s *Store) RecordSearch(ctx context.Context, login, query string) error {
	return s.exec(ctx, "record search of "+login, insertSearch, login, gocql.UUIDFromTime(s.Now()), query)
}

// RecentSearches are login's last 10 different searches, newest first.
func (s *Store) RecentSearches(ctx context.Context, login string) ([]string, error) {
	q, err := s.query(ctx, selectSearches, login, 5*recentSearches)
	if err != nil {
		return nil, err
	}
	iter := q.PageSize(0).Iter()
	var out []string
	seen := map[string]bool{}
	var query string
	for iter.Scan(&query) {
		if !seen[query] && len(out) < recentSearches {
			seen[query] = true
			out = append(out, query)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, s.fail("read searches of "+login, err)
	}
	return out, nil
}
