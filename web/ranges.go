package web

import (
	"cmp"
	"fmt"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

const (
	// maxRanges is the most byte ranges one download serves; a request for
	// more gets the whole file (RFC 9110 lets a server ignore Range).
	maxRanges = 8
	// rangeGap is the gap under which two ranges are served as one: less
	// than a multipart part's own headers.
	rangeGap = 80
)

// MergeRanges rewrites a Range header for a file of size bytes so that
// http.ServeContent reads each chunk at most once: its ranges sorted,
// overlapping and nearly adjacent ones merged (RFC 9110 §14.2 allows
// both, whatever order the client gave). It answers ok=false for more
// than maxRanges ranges left after merging, and the header unchanged when
// it does not parse or nothing in it is satisfiable, for ServeContent to
// answer (416 or the whole file).
func MergeRanges(header string, size int64) (string, bool) {
	specs, found := strings.CutPrefix(header, "bytes=")
	if !found {
		return header, true
	}
	type span struct{ start, end int64 } // end exclusive
	var spans []span
	for _, spec := range strings.Split(specs, ",") {
		spec = textproto.TrimString(spec)
		if spec == "" {
			continue
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok {
			return header, true
		}
		first, last = textproto.TrimString(first), textproto.TrimString(last)
		var sp span
		if first == "" { // a suffix: the last N bytes
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n < 0 {
				return header, true
			}
			sp = span{max(size-n, 0), size}
		} else {
			start, err := strconv.ParseInt(first, 10, 64)
			if err != nil || start < 0 {
				return header, true
			}
			end := size
			if last != "" {
				e, err := strconv.ParseInt(last, 10, 64)
				if err != nil || e < start {
					return header, true
				}
				end = min(e+1, size)
			}
			sp = span{start, end}
		}
		if sp.start < sp.end { // unsatisfiable ranges are dropped, as ServeContent does
			spans = append(spans, sp)
		}
	}
	if len(spans) == 0 {
		return header, true
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end+rangeGap {
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	if len(merged) > maxRanges {
		return "", false
	}
	parts := make([]string, len(merged))
	for i, sp := range merged {
		parts[i] = fmt.Sprintf("%d-%d", sp.start, sp.end-1)
	}
	return "bytes=" + strings.Join(parts, ","), true
}
