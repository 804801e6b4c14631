package store

import (
	"slices"
	"testing"
	"time"
)

// TestDaysDown: the buckets a page reads first are the day of its bound,
// and today too when the newest page's bound (an hour ahead) is tomorrow,
// never a day before the conversation started.
func TestDaysDown(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		name, from, to string
		start          int
		want           []int
	}{
		{"OneDay", "2026-03-10T12:00:00Z", "2026-03-10T11:00:00Z", 20260101, []int{20260310}},
		{"LastHourOfTheDay", "2026-03-11T00:30:00Z", "2026-03-10T23:30:00Z", 20260101, []int{20260311, 20260310}},
		{"AcrossAMonth", "2026-03-01T00:30:00Z", "2026-02-28T23:30:00Z", 20260101, []int{20260301, 20260228}},
		{"StartedToday", "2026-03-11T00:30:00Z", "2026-03-10T23:30:00Z", 20260311, []int{20260311}},
		{"BeforeTheStart", "2026-03-09T12:00:00Z", "2026-03-09T12:00:00Z", 20260310, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := daysDown(at(tt.from), at(tt.to), tt.start); !slices.Equal(got, tt.want) {
				t.Errorf("daysDown(%s, %s, %d) = %v, want %v", tt.from, tt.to, tt.start, got, tt.want)
			}
		})
	}
}
