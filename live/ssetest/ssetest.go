package ssetest

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// SpecRecord is what the parser holds at a blank line, the end of an
// event: the last event ID buffer (which an "id:" line sets even when no
// event follows: it is what a reconnect sends), the event type and data,
// and whether an event is dispatched (the data buffer is not empty).
type SpecRecord struct {
	LastID     string
	Name       string
	Data       string
	Dispatched bool
}

// ParseSpecStream reads r as the standard's parser does and calls each at
// every blank line until each returns false or r ends.
func ParseSpecStream(r io.Reader, each func(SpecRecord) bool) error {
	br := bufio.NewReader(r)
	var (
		line, data    []byte
		lastID, name  string
		afterCR, more = false, true
		start         = true
	)
	endLine := func() {
		switch i := bytes.IndexByte(line, ':'); {
		case len(line) == 0:
			rec := SpecRecord{LastID: lastID, Name: name, Dispatched: len(data) > 0}
			rec.Data = strings.TrimSuffix(string(data), "\n")
			data, name = data[:0], ""
			more = each(rec)
		case i == 0: // a comment
		default:
			field, value := string(line), ""
			if i > 0 {
				field, value = string(line[:i]), strings.TrimPrefix(string(line[i+1:]), " ")
			}
			switch field {
			case "event":
				name = value
			case "data":
				data = append(append(data, value...), '\n')
			case "id":
				if !strings.Contains(value, "\x00") {
					lastID = value
				}
			}
		}
		line = line[:0]
	}
	for more {
		b, err := br.ReadByte()
		if err != nil {
			return err
		}
		if start {
			start = false
			if b == 0xEF { // a byte order mark opens the stream at most
				if bom, _ := br.Peek(2); string(bom) == "\xBB\xBF" {
					_, _ = br.Discard(2)
					continue
				}
			}
		}
		if afterCR {
			afterCR = false
			if b == '\n' {
				continue // the "\n" of a "\r\n"
			}
		}
		switch b {
		case '\r':
			afterCR = true
			endLine()
		case '\n':
			endLine()
		default:
			line = append(line, b)
		}
	}
	return nil
}
