package handlers_test

// Benchmarks of sign-up and login over real HTTP (httptest server, real
// Cassandra, real bcrypt cost 10 as TestMain leaves it).
//
//	go test -run '^$' -bench . -benchtime 100x ./handlers/

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/killrchat/handlers"
	"github.com/killrchat/killrchat/store/storetest"
)

// benchNoAuthLimit lifts the per-IP sign-up/login rate limit, which every
// request of a benchmark would otherwise share (they all come from 127.0.0.1).
func benchNoAuthLimit(c *handlers.Config) { c.AuthRate = 1 << 30 }

// timed runs n operations from conc goroutines; op(i) returns the time of
// the part to measure. It reports p50/p99 and the overall rate.
func benchTimed(b *testing.B, conc int, op func(i int) time.Duration) {
	lat := make(storetest.Latencies, b.N)
	var wg sync.WaitGroup
	next := make(chan int, b.N)
	for i := 0; i < b.N; i++ {
		next <- i
	}
	close(next)
	b.ResetTimer()
	t0 := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				lat[i] = op(i)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	lat.Report(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// BenchmarkSignup posts the sign-up form with a fresh login, as a browser
// holding the CSRF cookie would (the cookie is fetched outside the timing).
// A 303 (logged in) is required.
func BenchmarkSignup(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(map[int]string{1: "serial", 4: "conc4"}[conc], func(b *testing.B) {
			a := newApp(b, nil, nil, benchNoAuthLimit)
			clients := make([]*client, b.N)
			for i := range clients {
				clients[i] = a.client(b)
				clients[i].ensureCSRF()
			}
			benchTimed(b, conc, func(i int) time.Duration {
				form := signupForm(unique("bsign"), "password1")
				t0 := time.Now()
				p := clients[i].post("/signup", form)
				d := time.Since(t0)
				if p.StatusCode != http.StatusSeeOther {
					b.Errorf("sign up: %d", p.StatusCode)
				}
				return d
			})
		})
	}
}

// BenchmarkLogin logs in a signed-up user from a fresh client each time.
func BenchmarkLogin(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(map[int]string{1: "serial", 4: "conc4"}[conc], func(b *testing.B) {
			a := newApp(b, nil, nil, benchNoAuthLimit)
			login := unique("blogin")
			a.signedUp(b, login)
			clients := make([]*client, b.N)
			for i := range clients {
				clients[i] = a.client(b)
				clients[i].ensureCSRF()
			}
			benchTimed(b, conc, func(i int) time.Duration {
				form := url.Values{"login": {login}, "password": {"password1"}}
				t0 := time.Now()
				p := clients[i].post("/login", form)
				d := time.Since(t0)
				if p.StatusCode != http.StatusSeeOther {
					b.Errorf("login: %d", p.StatusCode)
				}
				return d
			})
		})
	}
}

// BenchmarkLoginFailure compares a wrong password with an unknown login:
// both must cost one bcrypt comparison, so neither tells an attacker which
// logins exist.
func BenchmarkLoginFailure(b *testing.B) {
	a := newApp(b, nil, nil, benchNoAuthLimit)
	login := unique("bfail")
	a.signedUp(b, login)
	for _, tt := range []struct{ name, login string }{
		{"WrongPassword", login},
		{"UnknownLogin", unique("bghost")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			c := a.client(b)
			c.ensureCSRF()
			benchTimed(b, 1, func(int) time.Duration {
				t0 := time.Now()
				p := c.post("/login", url.Values{"login": {tt.login}, "password": {"wrong-password"}})
				d := time.Since(t0)
				if p.StatusCode != http.StatusUnauthorized {
					b.Errorf("login: %d", p.StatusCode)
				}
				return d
			})
		})
	}
}

// BenchmarkHomePage loads the home page of a person in 50 rooms and 20
// DMs (2 of each unread, one mention), one request at a time and four at
// once, and reports p50/p99:
//
//	go test -run '^$' -bench HomePage -benchtime 200x ./handlers/
func BenchmarkHomePage(b *testing.B) {
	a := newApp(b, nil, nil)
	c, _ := busyPerson(b, a, 50, 20, 2)
	c.get("/")
	for _, conc := range []int{1, 4} {
		b.Run(map[int]string{1: "serial", 4: "conc4"}[conc], func(b *testing.B) {
			benchTimed(b, conc, func(int) time.Duration {
				t0 := time.Now()
				if p := c.get("/"); p.StatusCode != http.StatusOK {
					b.Errorf("home: %d", p.StatusCode)
				}
				return time.Since(t0)
			})
		})
	}
}
