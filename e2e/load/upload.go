package main

// upload: attachment throughput through HTTP against raw gocql chunk
// inserts and selects of the same bytes at the same concurrency, in one
// run, and the server's RSS growth while -clients upload -size bytes each
// at once and while -downloads clients download one file at once.

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/store/inspect"
	"github.com/killrchat/killrchat/store/storetest"
)

var fileLink = regexp.MustCompile(`class="attachment-name" href="(/files/[^"]+)"`)

func runUpload(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upload", flag.ExitOnError)
	var c common
	c.register(fs)
	clients := fs.Int("clients", 20, "clients uploading at once")
	downloads := fs.Int("downloads", 50, "clients downloading one file at once")
	size := fs.Int("size", 25<<20, "bytes of each file")
	_ = fs.Parse(args)

	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s, keyspace %s", t.Where, t.URL, t.Keyspace)
	tr := newTransport(*clients + *downloads)
	users, err := signUpMany(ctx, t.URL, "up"+runID(), *clients, tr)
	if err != nil {
		return err
	}
	room := "files" + runID()
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}
	data := make([]byte, *size)
	_, _ = rand.Read(data)
	total := float64(*clients) * float64(*size)

	// HTTP upload, with the server's RSS sampled throughout.
	base, err := t.Stats(ctx, true)
	if err != nil {
		return err
	}
	_, stopSampling := sampleRSS(ctx, t)
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var link atomic.Value
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, err := uploadFile(ctx, u, room, "load.bin", data)
			if err != nil || code != http.StatusOK {
				failed.Add(1)
				logf("upload by %s: %d %v %.200s", u.login, code, err, body)
				return
			}
			if m := fileLink.FindStringSubmatch(body); m != nil {
				link.Store(m[1])
			}
		}()
	}
	wg.Wait()
	httpUp := time.Since(start)
	upPeak := stopSampling()
	if failed.Load() > 0 {
		return fmt.Errorf("%d uploads failed", failed.Load())
	}

	// The same bytes as raw chunk inserts: one worker per client, each
	// inserting its file's chunks with the server's per-upload parallelism.
	sess, err := rawSession(t.Keyspace)
	if err != nil {
		return err
	}
	defer sess.Close()
	ids := make([]chat.ID, *clients)
	start = time.Now()
	for i := range ids {
		ids[i] = chat.IDAt(time.Now())
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, 4)
			var inner sync.WaitGroup
			for no, off := 0, 0; off < len(data); no, off = no+1, off+store.ChunkSize {
				sem <- struct{}{}
				inner.Add(1)
				go func() {
					defer inner.Done()
					defer func() { <-sem }()
					end := min(off+store.ChunkSize, len(data))
					if err := sess.InsertChunk(ctx, ids[i], no, data[off:end]); err != nil {
						failed.Add(1)
					}
				}()
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	rawUp := time.Since(start)
	if failed.Load() > 0 {
		return fmt.Errorf("%d raw inserts failed", failed.Load())
	}

	// HTTP download of one file by -downloads clients at once.
	href, _ := link.Load().(string)
	if href == "" {
		return fmt.Errorf("no download link in the upload answers")
	}
	readers := make([]*user, *downloads)
	for i := range readers {
		readers[i] = users[i%len(users)]
	}
	if _, err := t.Stats(ctx, true); err != nil {
		return err
	}
	_, stopSampling = sampleRSS(ctx, t)
	start = time.Now()
	for _, u := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.base+href, nil)
			resp, err := u.hc.Do(req)
			if err != nil {
				failed.Add(1)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n != int64(len(data)) {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	httpDown := time.Since(start)
	downPeak := stopSampling()
	if failed.Load() > 0 {
		return fmt.Errorf("%d downloads failed", failed.Load())
	}

	// The same chunks as raw selects, one worker per downloader, in order.
	chunks := (len(data) + store.ChunkSize - 1) / store.ChunkSize
	start = time.Now()
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for no := range chunks {
				if _, err := sess.Chunk(ctx, ids[i%len(ids)], no); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	rawDown := time.Since(start)
	if failed.Load() > 0 {
		return fmt.Errorf("%d raw selects failed", failed.Load())
	}

	mbps := func(bytes float64, d time.Duration) float64 { return bytes / 1e6 / d.Seconds() }
	downTotal := float64(len(readers)) * float64(len(data))
	fmt.Printf("upload   %d clients × %s: HTTP %.1f MB/s (%s), raw gocql inserts %.1f MB/s (%s): ratio %.2f\n",
		*clients, mib(float64(*size)), mbps(total, httpUp), httpUp.Round(time.Millisecond),
		mbps(total, rawUp), rawUp.Round(time.Millisecond), rawUp.Seconds()/httpUp.Seconds())
	fmt.Printf("download %d clients × %s: HTTP %.1f MB/s (%s), raw gocql selects %.1f MB/s (%s): ratio %.2f\n",
		len(readers), mib(float64(*size)), mbps(downTotal, httpDown), httpDown.Round(time.Millisecond),
		mbps(downTotal, rawDown), rawDown.Round(time.Millisecond), rawDown.Seconds()/httpDown.Seconds())
	fmt.Printf("server RSS (%s): baseline %s; peak while uploading %s (+%s); peak while downloading %s (+%s)\n",
		t.Where, mib(float64(base.RSS)), mib(float64(upPeak)), mib(float64(upPeak)-float64(base.RSS)),
		mib(float64(downPeak)), mib(float64(downPeak)-float64(base.RSS)))
	return nil
}

// uploadFile posts one file as the composer's XHR does (token header,
// HX-Request), streaming the body.
func uploadFile(ctx context.Context, u *user, room, name string, data []byte) (int, string, error) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	_ = mw.WriteField("_csrf", u.csrf)
	if _, err := mw.CreateFormFile("file", name); err != nil {
		return 0, "", err
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	body := io.MultiReader(bytes.NewReader(head.Bytes()), bytes.NewReader(data), bytes.NewBufferString(tail))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+"/rooms/"+room+"/messages", body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = int64(head.Len() + len(data) + len(tail))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-CSRF-Token", u.csrf)
	req.Header.Set("HX-Request", "true")
	return u.do(req)
}

// sampleRSS polls the app's RSS every 50 ms until stop is called, which
// returns the highest value seen.
func sampleRSS(ctx context.Context, t *target) (*atomic.Uint64, func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if st, err := t.Stats(ctx, false); err == nil && st.RSS > peak.Load() {
				peak.Store(st.RSS)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return &peak, func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

func rawSession(keyspace string) (*inspect.DB, error) {
	return inspect.Open(storetest.Hosts(), inspect.Options{Keyspace: keyspace, Timeout: 10 * time.Second})
}
