package storetest

import (
	"sort"
	"testing"
	"time"
)

// Latencies collects one duration per operation of a benchmark.
type Latencies []time.Duration

// Percentile is the p-th (0..1) percentile, nearest rank.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append(Latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Report adds p50, p99 and max, in milliseconds, to the benchmark's output.
func (l Latencies) Report(b *testing.B) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(l.Percentile(0.50)), "p50-ms")
	b.ReportMetric(ms(l.Percentile(0.99)), "p99-ms")
	b.ReportMetric(ms(l.Percentile(1.00)), "max-ms")
}
