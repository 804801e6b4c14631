package main

// search: search at the scale of the cluster. First the post ratio: `post`
// with the indexer and without, alternating (-post-runs times), while
// Cassandra is quiet (the seeding keeps it busy for minutes after). Then
// it seeds a keyspace with 1,000,000 messages in 200 conversations over 90
// days, indexed with the app's own tokeniser (written in single-partition
// batches, to seed fast: not what is measured), where one person takes
// part in 50 of the conversations; times 200 searches of each kind
// through HTTP as that person, and runs the same searches through the
// store for what they read; and measures what indexing a message costs
// Cassandra (the app's IndexMessage against SaveMessage alone). With
// -messages 0 it stops after the post ratio.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/inspect"
	"github.com/killrchat/killrchat/store/storetest"
)

const (
	seedBatch = 100
)

func runSearch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("search", flag.ExitOnError)
	var c common
	c.register(fs)
	nMsgs := fs.Int("messages", 1_000_000, "messages seeded")
	nConvs := fs.Int("convs", 200, "conversations (rooms) they are spread over")
	member := fs.Int("member", 50, "conversations the searcher takes part in")
	days := fs.Int("days", 90, "days the messages span, up to now")
	vocab := fs.Int("vocab", 20_000, "distinct words, drawn by a Zipf law")
	perMsg := fs.Int("words", 8, "words per message")
	searches := fs.Int("searches", 200, "searches of each kind")
	seedConc := fs.Int("seed-c", 16, "seeding batches in flight")
	indexD := fs.Duration("index-d", 10*time.Second, "duration of each indexing-cost phase")
	postD := fs.Duration("post-d", 10*time.Second, "duration of each post phase (0: skip the post ratio)")
	postRuns := fs.Int("post-runs", 2, "runs of post with the indexer and without, alternating")
	_ = fs.Parse(args)
	// The post ratio first, on a quiet Cassandra: after the seeding (and
	// the drop of its keyspace, which flushes it) Cassandra is busy for
	// minutes with work that is not the posts'.
	if *postD > 0 {
		for run := range *postRuns {
			for _, noIndex := range []bool{false, true} {
				args := []string{"-d", postD.String()}
				if c.child {
					args = append(args, "-child")
				}
				if noIndex {
					args = append(args, "-no-index")
				}
				fmt.Printf("\n== post %d, search index %s: go run ./e2e/load post %s\n", run+1, map[bool]string{false: "on", true: "off"}[noIndex], strings.Join(args, " "))
				if err := runPost(ctx, args); err != nil {
					return err
				}
			}
		}
	}
	if *nMsgs == 0 {
		return nil
	}
	if *nMsgs > 2_000_000 || *nConvs > 1000 || *member > *nConvs || *searches > 1000 {
		return fmt.Errorf("keep -messages <= 2,000,000, -convs <= 1000, -member <= -convs, -searches <= 1000")
	}
	store.PasswordCost = c.cost

	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Keyspace == "" || t.Store == nil {
		return fmt.Errorf("search needs the keyspace: give -keyspace with -url")
	}
	logf("app %s at %s, keyspace %s", t.Where, t.URL, t.Keyspace)
	tr := newTransport(8)
	id := runID()
	users, err := signUpMany(ctx, t.URL, "ls"+id+"u", 1, tr)
	if err != nil {
		return err
	}
	// The app cached the searcher's row at sign-up; the rooms made here,
	// around it, are seen once that entry is older than its TTL (10 s).
	signedUp := time.Now()
	searcher := users[0]
	me := chat.UserRef{Login: searcher.login, Firstname: "Ada", Lastname: "Lovelace"}
	other := chat.UserRef{Login: "ls" + id + "other", Firstname: "Bob", Lastname: "Other"}

	// The vocabulary: pronounceable words that the tokeniser keeps as they
	// are (one term, its own stem), so a query names exactly one term.
	words := makeVocabulary(*vocab, id)

	sess, err := inspect.Open(storetest.Hosts(), inspect.Options{Keyspace: t.Keyspace, Timeout: 20 * time.Second, Retries: 3})
	if err != nil {
		return err
	}
	defer sess.Close()

	var convs []chat.Conversation
	var mine []chat.Conversation
	for i := range *nConvs {
		creator := other
		if i < *member {
			creator = me
		}
		r, err := t.Store.CreateRoom(ctx, creator, chat.NewRoom{Name: fmt.Sprintf("ls%sr%d", id, i)})
		if err != nil {
			return err
		}
		// Created "90 days ago": the messages are older than the room row.
		r.CreatedAt = time.Now().AddDate(0, 0, -*days-1)
		convs = append(convs, r.Conversation())
		if i < *member {
			mine = append(mine, r.Conversation())
		}
	}
	// Counted among this run's rooms only: a site's default rooms
	// (#general) take every newcomer in as well.
	u, err := t.Store.User(ctx, me.Login)
	if err != nil {
		return err
	}
	in := 0
	for _, name := range u.ChatRooms {
		if strings.HasPrefix(name, "ls"+id+"r") {
			in++
		}
	}
	if in != len(mine) {
		return fmt.Errorf("the searcher is in %d of this run's rooms, want %d", in, len(mine))
	}
	logf("%d rooms, the searcher in %d; seeding %d messages over %d days", len(convs), len(mine), *nMsgs, *days)
	// The rooms' creation dates are now; move them back so their floors
	// are below the seeded messages.
	back := time.Now().AddDate(0, 0, -*days-1).UTC().Truncate(time.Millisecond)
	for _, cv := range convs {
		// The header's date and the members' rows, which carry it as
		// their incarnation (schema/016_room_members.cql), in one LWT.
		r, err := t.Store.Room(ctx, cv.ID)
		if err != nil {
			return err
		}
		members, err := t.Store.RoomMembers(ctx, r, "", 1000)
		if err != nil {
			return err
		}
		if err := sess.Backdate(ctx, cv.ID, r.CreatedAt, back, members); err != nil {
			return err
		}
	}
	// The seed writes every posting's place: the places are complete.
	if err := sess.PlacesComplete(ctx); err != nil {
		return err
	}
	seedStart := time.Now()
	cass := cassandraPID()
	c0 := cpuTime(cass)
	rows, err := seedSearch(ctx, sess, convs, words, *nMsgs, *perMsg, *days, *seedConc, []chat.UserRef{me, other})
	if err != nil {
		return err
	}
	seedTime := time.Since(seedStart)
	logf("seeded %d messages, %d rows in %s (Cassandra CPU %s)", *nMsgs, rows, seedTime.Round(time.Second), (cpuTime(cass) - c0).Round(time.Second))

	// Kinds of search: by how often their words occur (rank 0 is the most
	// common; the rare ones occur a few times in the whole data set).
	rng := rand.New(rand.NewPCG(7, 7))
	common := func() string { return words[rng.IntN(5)] }
	// Ranks 50-149; on a small vocabulary (the smoke run's) its middle half.
	midLo, midN := 50, 100
	if *vocab < 150 {
		midLo, midN = *vocab/4, max(1, *vocab/2)
	}
	mid := func() string { return words[midLo+rng.IntN(midN)] }
	rare := func() string { return words[*vocab/2+rng.IntN(*vocab/2)] }
	kinds := []struct {
		name string
		q    func() string
	}{
		{"1 rare", func() string { return rare() }},
		{"1 common", func() string { return common() }},
		{"2 common", func() string { return distinct(common, 2) }},
		{"2 rare+common", func() string { return rare() + " " + common() }},
		{"3 common", func() string { return distinct(common, 3) }},
		{"3 common+mid+rare", func() string { return common() + " " + mid() + " " + rare() }},
		{"1 prefix common", func() string { w := common(); return w[:len(w)-1] + "*" }},
		// The first kind runs while Cassandra still compacts what the
		// seeding wrote; the rare word again, last, on a calmer Cassandra.
		{"1 rare, again", func() string { return rare() }},
	}
	if wait := 11*time.Second - time.Since(signedUp); wait > 0 {
		time.Sleep(wait)
	}
	// The app's caches warm (the searcher's rooms and DMs).
	if _, _, err := searcher.get(ctx, "/search?q="+url.QueryEscape(common())); err != nil {
		return err
	}
	fmt.Printf("\n== search: %d messages in %d conversations over %d days (searcher in %d), %d words of vocabulary, %d a message; app %s\n",
		*nMsgs, len(convs), *days, len(mine), *vocab, *perMsg, t.Where)
	fmt.Printf("seeding: %s (%d rows; not what is measured)\n", seedTime.Round(time.Second), rows)
	for _, k := range kinds {
		qs := make([]string, *searches)
		for i := range qs {
			qs[i] = k.q()
		}
		var lat durations
		results := 0
		for _, q := range qs {
			s := time.Now()
			code, body, err := searcher.get(ctx, "/search?live=1&q="+url.QueryEscape(q))
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("search %q: %d %v %.200s", q, code, err, body)
			}
			lat = append(lat, time.Since(s))
			results += strings.Count(body, `class="mention-item search-result"`)
		}
		// The same searches through the store, for what they read.
		var st chat.SearchStats
		for _, q := range qs {
			pq, err := chat.ParseSearch(q)
			if err != nil {
				return err
			}
			_, _, one, err := t.Store.Search(ctx, mine, pq, chat.ID{}, 20)
			if err != nil {
				return err
			}
			st.Statements += one.Statements
			st.Postings += one.Postings
			st.Checked += one.Checked
		}
		n := float64(len(qs))
		if strings.Contains(k.name, "common") && !strings.Contains(k.name, "rare") && results == 0 {
			return fmt.Errorf("%s: no search found anything", k.name)
		}
		fmt.Printf("%-20s HTTP %s  results/search %.1f  statements %.1f, index rows %.0f, messages checked %.1f per search\n",
			k.name, lat.summary(), float64(results)/n, float64(st.Statements)/n, float64(st.Postings)/n, float64(st.Checked)/n)
	}

	return indexCost(ctx, t.Keyspace, words, *indexD)
}

// distinct joins n different words from pick.
func distinct(pick func() string, n int) string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		if w := pick(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// makeVocabulary makes n distinct words that the tokeniser indexes as
// themselves, with a tag of the run so no stop word or other run's word
// is among them.
func makeVocabulary(n int, tag string) []string {
	cons, vows := "bdfgklmnprstvz", "aiou"
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		b.WriteString(tag[:min(2, len(tag))])
		for range 2 + rng.IntN(2) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		b.WriteByte(cons[rng.IntN(len(cons))])
		w := b.String()
		if seen[w] || len(w) < 5 {
			continue
		}
		if terms := chat.Terms(w); len(terms) != 1 || terms[0] != w {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// seedSearch writes n messages over convs and their index rows, a
// conversation at a time, batches of one partition, conc in flight.
func seedSearch(ctx context.Context, sess *inspect.DB, convs []chat.Conversation, words []string, n, perMsg, days, conc int, authors []chat.UserRef) (int64, error) {
	type batch struct {
		kind inspect.Seed
		rows [][]any
	}
	work := make(chan batch, conc*2)
	var rows atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if firstErr.Load() != nil {
					continue
				}
				if err := sess.SeedRows(ctx, b.kind, b.rows); err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				rows.Add(int64(len(b.rows)))
			}
		}()
	}
	send := func(kind inspect.Seed, all [][]any) {
		for i := 0; i < len(all); i += seedBatch {
			work <- batch{kind: kind, rows: all[i:min(i+seedBatch, len(all))]}
		}
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.07, 1, uint64(len(words)-1))
	rng := rand.New(rand.NewPCG(5, 6))
	start := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	span := time.Duration(days) * 24 * time.Hour
	last := time.Now()
	for ci, conv := range convs {
		count := n / len(convs)
		if ci < n%len(convs) {
			count++
		}
		times := make([]time.Time, count)
		for i := range times {
			times[i] = start.Add(time.Duration(rng.Int64N(int64(span))))
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		msgs := map[int][][]any{}
		terms := map[string][][]any{}
		wordRows := map[int]map[string]string{}
		for _, at := range times {
			id := chat.IDAt(at)
			var b strings.Builder
			for k := range perMsg {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[zipf.Uint64()])
			}
			text := b.String()
			bucket := at.UTC().Year()*10000 + int(at.UTC().Month())*100 + at.UTC().Day()
			month := bucket / 100
			author := authors[rng.IntN(len(authors))]
			msgs[bucket] = append(msgs[bucket], []any{conv.ID, bucket, id, author, text})
			seen := map[string]bool{}
			for _, sp := range chat.TermSpans(text) {
				for _, w := range sp.Words {
					if !seen[w.Term] {
						seen[w.Term] = true
						key := fmt.Sprintf("%s\x00%d", w.Term, month)
						terms[key] = append(terms[key], []any{conv.ID, w.Term, month, id})
					}
					if wordRows[month] == nil {
						wordRows[month] = map[string]string{}
					}
					wordRows[month][w.Form] = w.Term
				}
			}
			key := fmt.Sprintf("from:%s\x00%d", author.Login, month)
			terms[key] = append(terms[key], []any{conv.ID, "from:" + author.Login, month, id})
		}
		for bucket, rs := range msgs {
			send(inspect.SeedBucket, [][]any{{conv.ID, bucket}})
			send(inspect.SeedMessage, rs)
		}
		var places [][]any
		for _, rs := range terms {
			send(inspect.SeedTerm, rs)
			places = append(places, []any{rs[0][1], rs[0][2], conv.ID})
		}
		send(inspect.SeedPlace, places)
		for month, ws := range wordRows {
			var rs [][]any
			for form, term := range ws {
				rs = append(rs, []any{conv.ID, month, form, term})
			}
			send(inspect.SeedWord, rs)
		}
		if err, _ := firstErr.Load().(error); err != nil {
			break
		}
		if time.Since(last) > 10*time.Second {
			logf("seeded %d of %d conversations, %d rows", ci+1, len(convs), rows.Load())
			last = time.Now()
		}
	}
	close(work)
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return rows.Load(), err
	}
	return rows.Load(), nil
}

// indexCost measures what the app's indexer costs Cassandra per message:
// SaveMessage alone (the post's own writes) against IndexMessage alone,
// at the same concurrency, on messages drawn like the seeded ones.
func indexCost(ctx context.Context, keyspace string, words []string, d time.Duration) error {
	var statements, requests atomic.Int64
	st := store.New(store.Config{Hosts: storetest.Hosts(), Keyspace: keyspace, Timeout: 10 * time.Second,
		Observe: func(q store.ObservedQuery) {
			statements.Add(1)
			if q.BatchIndex == 0 {
				requests.Add(1)
			}
		}})
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := st.Connect(cctx); err != nil {
		return err
	}
	defer st.Close()
	author := chat.UserRef{Login: "indexcost", Firstname: "Index", Lastname: "Cost"}
	room, err := st.CreateRoom(ctx, author, chat.NewRoom{Name: "indexcost" + runID()})
	if err != nil {
		return err
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(8, 9)), 1.07, 1, uint64(len(words)-1))
	var mu sync.Mutex
	text := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for k := range 8 {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[zipf.Uint64()])
		}
		return b.String()
	}
	fmt.Printf("\nindexing cost per message (concurrency 16, %s a phase; 8 words a message):\n", d)
	for _, ph := range []struct {
		name string
		op   func(m chat.Message) error
	}{
		{"save", func(m chat.Message) error { return st.SaveMessage(ctx, room, m) }},
		{"index", func(m chat.Message) error { return st.IndexMessage(ctx, m) }},
	} {
		op := func(ctx context.Context, w int, i int64) (int, error) {
			m, err := st.DraftMessage(room, author, text())
			if err != nil {
				return 0, err
			}
			return 0, ph.op(m)
		}
		drive(ctx, ph.name, 16, 2*time.Second, op)
		before, beforeReq := statements.Load(), requests.Load()
		p := drive(ctx, ph.name, 16, d, op)
		p.print()
		fmt.Printf("      per message: %.2f rows written in %.2f requests (statements and batches)\n",
			float64(statements.Load()-before)/float64(max(p.ok, 1)), float64(requests.Load()-beforeReq)/float64(max(p.ok, 1)))
	}
	_ = os.Stdout.Sync()
	return nil
}
