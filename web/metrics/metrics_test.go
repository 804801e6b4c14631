package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/killrchat/killrchat/store"
	"github.com/killrchat/killrchat/web/metrics"
)

// scrape is the registry's text exposition.
func scrape(t *testing.T, m *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func mustHave(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("the scrape lacks %q", l)
		}
	}
}

func TestObserveQueryLabels(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	for _, stmt := range []string{
		`SELECT login, data FROM sessions WHERE id = ?`,
		`INSERT INTO users (login) VALUES (?) IF NOT EXISTS`,
		`UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ? IF EXISTS`,
		`DELETE FROM sessions WHERE id = ?`,
		`BEGIN BATCH`,
		``,
	} {
		m.ObserveQuery(store.ObservedQuery{Statement: stmt, Duration: time.Millisecond})
	}
	m.ObserveQuery(store.ObservedQuery{Statement: `SELECT * FROM users WHERE login = ?`, Err: errors.New("timeout")})
	mustHave(t, scrape(t, m),
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="select sessions"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="insert users lwt"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="update chat_rooms lwt"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="delete sessions"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="begin"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="false",statement="other"} 1`,
		`killrchat_cassandra_query_duration_seconds_count{error="true",statement="select users"} 1`,
	)
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	e := echo.New()
	e.Use(m.Measure(func(_ echo.Context, err error) int {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he.Code
		}
		if err != nil {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}))
	e.GET("/rooms/:room", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
	e.POST("/rooms/:room", func(echo.Context) error { return echo.ErrForbidden })
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/rooms/general"},
		{http.MethodGet, "/rooms/random"},
		{http.MethodPost, "/rooms/general"},
		{http.MethodGet, "/no/such/page"},
		{"BREW", "/rooms/general"},
	} {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(r.method, r.path, nil))
	}
	text := scrape(t, m)
	mustHave(t, text,
		`killrchat_http_request_duration_seconds_count{code="200",method="GET",route="/rooms/:room"} 2`,
		`killrchat_http_request_duration_seconds_count{code="403",method="POST",route="/rooms/:room"} 1`,
		`killrchat_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
		`killrchat_http_request_duration_seconds_count{code="405",method="OTHER",route="unmatched"} 1`,
	)
	if strings.Contains(text, "general") || strings.Contains(text, "BREW") {
		t.Error("a label took a value from the request")
	}
}

type conns struct{}

func (conns) Open() int      { return 7 }
func (conns) Evicted() int64 { return 3 }

type chunks struct{}

func (chunks) ChunkReads() int64 { return 42 }

func TestWatch(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchConns(conns{})
	m.WatchStore(chunks{})
	m.WatchStore(chunks{}) // a second store is a no-op
	m.CountUpload("stored", 1000)
	m.CountUpload("too_large", 0)
	m.SSEConnections.Inc()
	mustHave(t, scrape(t, m),
		"killrchat_http_connections 7",
		"killrchat_http_connections_evicted_total 3",
		"killrchat_attachment_chunk_reads_total 42",
		`killrchat_uploads_total{result="stored"} 1`,
		`killrchat_uploads_total{result="too_large"} 1`,
		"killrchat_upload_bytes_total 1000",
		"killrchat_sse_connections 1",
		"go_goroutines",
	)
}
