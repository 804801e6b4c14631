package web_test

import (
	"testing"

	"github.com/killrchat/killrchat/web"
)

func TestMergeRanges(t *testing.T) {
	t.Parallel()
	const size = 10_000
	for _, tc := range []struct {
		name, header, want string
		ok                 bool
	}{
		{"One", "bytes=0-99", "bytes=0-99", true},
		{"Sorted", "bytes=500-599,0-99", "bytes=0-99,500-599", true},
		{"Overlapping", "bytes=0-199,100-299", "bytes=0-299", true},
		{"Contained", "bytes=0-999,100-199", "bytes=0-999", true},
		{"NearlyAdjacent", "bytes=0-99,150-199", "bytes=0-199", true},
		{"ApartByMoreThanAPart", "bytes=0-99,181-199", "bytes=0-99,181-199", true},
		{"Suffix", "bytes=-100", "bytes=9900-9999", true},
		{"SuffixLongerThanFile", "bytes=-20000", "bytes=0-9999", true},
		{"OpenEnded", "bytes=9000-", "bytes=9000-9999", true},
		{"EndPastSize", "bytes=9000-20000", "bytes=9000-9999", true},
		{"Spaces", "bytes= 0-9 , 20-29 ", "bytes=0-29", true},
		{"UnsatisfiableDropped", "bytes=0-9,20000-20010", "bytes=0-9", true},
		{"NothingSatisfiable", "bytes=20000-20010", "bytes=20000-20010", true},
		{"NotBytes", "items=0-9", "items=0-9", true},
		{"NoDash", "bytes=5", "bytes=5", true},
		{"BadNumber", "bytes=a-9", "bytes=a-9", true},
		{"EndBeforeStart", "bytes=9-5", "bytes=9-5", true},
		{"NegativeSuffix", "bytes=--5", "bytes=--5", true},
		{"EightRanges", "bytes=0-0,200-200,400-400,600-600,800-800,1000-1000,1200-1200,1400-1400",
			"bytes=0-0,200-200,400-400,600-600,800-800,1000-1000,1200-1200,1400-1400", true},
		{"NineRanges", "bytes=0-0,200-200,400-400,600-600,800-800,1000-1000,1200-1200,1400-1400,1600-1600", "", false},
		{"NineMergedToOne", "bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8", "bytes=0-8", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := web.MergeRanges(tc.header, size)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("MergeRanges(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
			}
		})
	}
}
