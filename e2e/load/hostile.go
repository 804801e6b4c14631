package main

// hostile: what two of issue 22's hostile requests cost the server.
//   - ranges: one GET of a 1.5 MB file (two chunks) with 400 one-byte
//     ranges that alternate between its chunks: the chunks read from
//     Cassandra (killrchat_attachment_chunk_reads_total) and the wall time,
//     beside a plain download of the whole file.
//   - bombs: two uploads at once of a 6300×6300 PNG of 16-bit RGBA (about
//     300 KB, 318 MB decoded): the server's peak RSS and CPU time. The PNG
//     is written row by row, never held decoded here.
// Run it with -child, so that the RSS is the server's alone.

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/killrchat/store"
)

func runHostile(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hostile", flag.ExitOnError)
	var c common
	c.register(fs)
	ranges := fs.Int("ranges", 400, "one-byte ranges in the range request")
	bombs := fs.Int("bombs", 2, "bomb PNGs uploaded at once")
	side := fs.Int("side", 6300, "width and height of the bomb PNG")
	_ = fs.Parse(args)
	if *ranges < 1 || *ranges > 10_000 || *bombs < 0 || *bombs > 8 || *side < 1 || *side > 6324 {
		return fmt.Errorf("keep 1 <= -ranges <= 10000, 0 <= -bombs <= 8, -side <= 6324 (40 megapixels)")
	}
	t, err := startTarget(ctx, c)
	if err != nil {
		return err
	}
	defer t.Close()
	logf("app %s at %s", t.Where, t.URL)
	users, err := signUpMany(ctx, t.URL, "ho"+runID(), max(*bombs, 1), newTransport(8))
	if err != nil {
		return err
	}
	room := "hostile" + runID()
	if err := setupRoom(ctx, room, users); err != nil {
		return err
	}

	// ranges
	data := make([]byte, store.ChunkSize*3/2)
	for i := range data {
		data[i] = byte(i * 7)
	}
	code, body, err := uploadFile(ctx, users[0], room, "ranges.bin", data)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("upload: %d %v %.200s", code, err, body)
	}
	m := fileLink.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("no download link in the upload's answer")
	}
	specs := make([]string, *ranges)
	for i := range specs {
		at := int64(i/2) * 100
		if i%2 == 1 {
			at += store.ChunkSize
		}
		specs[i] = fmt.Sprintf("%d-%d", at, at)
	}
	get := func(rng string) (int, int64, int64, time.Duration, error) {
		before, err := chunkReads(ctx, t.URL)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, users[0].base+m[1], nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		start := time.Now()
		resp, err := users[0].hc.Do(req)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		after, cerr := chunkReads(ctx, t.URL)
		return resp.StatusCode, n, after - before, took, cmpErr(err, cerr)
	}
	status, n, reads, took, err := get("bytes=" + strings.Join(specs, ","))
	if err != nil {
		return err
	}
	fmt.Printf("ranges   %d one-byte ranges over the 2 chunks of a %s file: %d, %d bytes, %d chunk reads (%s from Cassandra), %s\n",
		*ranges, mib(float64(len(data))), status, n, reads, mib(float64(reads)*store.ChunkSize), took.Round(time.Millisecond))
	status, n, reads, took, err = get("")
	if err != nil {
		return err
	}
	fmt.Printf("whole    the same file without Range: %d, %d bytes, %d chunk reads, %s\n", status, n, reads, took.Round(time.Millisecond))

	// bombs
	if *bombs == 0 {
		return nil
	}
	bomb, err := bombPNG(*side, *side)
	if err != nil {
		return err
	}
	base, err := t.Stats(ctx, true)
	if err != nil {
		return err
	}
	cpu0 := cpuTime(childPID)
	_, stop := sampleRSS(ctx, t)
	start := time.Now()
	var wg sync.WaitGroup
	previews := make([]bool, *bombs)
	errs := make([]error, *bombs)
	for i := range *bombs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, err := uploadFile(ctx, users[i], room, "bomb.png", bomb)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("upload: %d %.200s", code, body)
			}
			errs[i], previews[i] = err, strings.Contains(body, "attachment-preview")
		}()
	}
	wg.Wait()
	took = time.Since(start)
	peak := stop()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	cpu := "n/a (in-process)"
	if childPID != 0 {
		cpu = (cpuTime(childPID) - cpu0).Round(10 * time.Millisecond).String()
	}
	fmt.Printf("bombs    %d uploads at once of a %d×%d 16-bit RGBA PNG (%s, %s decoded): %s, previews made %v; server RSS %s before, peak %s (+%s); server CPU %s\n",
		*bombs, *side, *side, mib(float64(len(bomb))), mib(float64(*side)*float64(*side)*8), took.Round(time.Millisecond), previews,
		mib(float64(base.RSS)), mib(float64(peak)), mib(float64(peak)-float64(base.RSS)), cpu)
	return nil
}

func cmpErr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// chunkReads reads the app's killrchat_attachment_chunk_reads_total.
func chunkReads(ctx context.Context, base string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "killrchat_attachment_chunk_reads_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("/metrics has no killrchat_attachment_chunk_reads_total")
}

// bombPNG is a w×h PNG of 16-bit RGBA, opaque black, written row by row:
// it compresses about a thousandfold.
func bombPNG(w, h int) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(kind string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(kind))
		crc.Write(data)
		out.WriteString(kind)
		out.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		out.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16 bits a sample, RGBA
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	z := zlib.NewWriter(&idat)
	row := make([]byte, 1+w*8) // filter 0, then black pixels
	for x := range w {
		row[1+x*8+6], row[1+x*8+7] = 0xff, 0xff // opaque
	}
	for range h {
		if _, err := z.Write(row); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes(), nil
}
