// This file owns the Prometheus metrics: request latency by route,
// Cassandra statement latency, open live-stream connections and open
// HTTP connections. Every label takes a bounded set of values, so no
// request can grow the registry.

package metrics

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/killrchat/killrchat/store"
)

// Registry is the application's Prometheus registry.
type Registry struct {
	registry *prometheus.Registry
	requests *prometheus.HistogramVec
	queries  *prometheus.HistogramVec
	// SSEConnections is the number of open live-stream connections.
	SSEConnections prometheus.Gauge
	uploads        *prometheus.CounterVec
	uploadBytes    prometheus.Counter
	// RoomPosts counts room posts by how their check of the room held:
	// "fenced" (no read) or "read" (read again after the write), see
	// live/fence.
	RoomPosts *prometheus.CounterVec
	// FenceTimeouts counts fences that some instance did not answer in time.
	FenceTimeouts prometheus.Counter
	// Push counts Web Push deliveries by result: sent, failed, dropped
	// (the queue was full), gone (a subscription removed), retried.
	Push *prometheus.CounterVec
	// Email counts mails by kind (missed, account) and result: sent,
	// refused (a bounce or a refused recipient, never retried), failed
	// (given up after retries), retried, dropped.
	Email *prometheus.CounterVec
	// SearchStatements is the statements each search ran.
	SearchStatements prometheus.Histogram
	labels           sync.Map // statement -> its short label
}

// New creates the registry with Go and process collectors.
func New() *Registry {
	m := &Registry{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "killrchat_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method", "route", "code"}),
		queries: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "killrchat_cassandra_query_duration_seconds", Help: "Cassandra statement latency by statement kind and table.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}, []string{"statement", "error"}),
		SSEConnections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "killrchat_sse_connections", Help: "Open live-stream (SSE) connections.",
		}),
	}
	m.uploads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "killrchat_uploads_total", Help: "Uploaded files by result: stored, too_large, refused, rate_limited, too_slow, failed.",
	}, []string{"result"})
	m.uploadBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "killrchat_upload_bytes_total", Help: "Bytes of the files stored.",
	})
	m.RoomPosts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "killrchat_room_posts_total", Help: "Room posts by how their check of the room held: fenced (no read) or read (read again after the write).",
	}, []string{"check"})
	m.FenceTimeouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "killrchat_fence_timeouts_total", Help: "Fences (removals, leaves, deletes) that some instance did not answer in time.",
	})
	m.Push = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "killrchat_push_total", Help: "Web Push deliveries by result: sent, failed, dropped (queue full), gone (subscription removed), retried.",
	}, []string{"result"})
	m.Email = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "killrchat_email_total", Help: "Mails by kind (missed, account) and result: sent, refused (bounced or recipient refused), failed, retried, dropped.",
	}, []string{"kind", "result"})
	m.SearchStatements = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "killrchat_search_statements", Help: "Cassandra statements one search (a page of results) ran.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	m.registry.MustRegister(m.requests, m.queries, m.SSEConnections, m.uploads, m.uploadBytes, m.RoomPosts, m.FenceTimeouts, m.Push, m.Email, m.SearchStatements,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ChunkCounter is what WatchStore reads of the store (a *store.Store).
type ChunkCounter interface {
	// ChunkReads is how many attachment chunks were read so far.
	ChunkReads() int64
}

// WatchStore exports the store's counters: the attachment chunks read.
// A registry watches one store; a second call is a no-op.
func (m *Registry) WatchStore(db ChunkCounter) {
	_ = m.registry.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "killrchat_attachment_chunk_reads_total", Help: "Attachment chunks (1000 KB each) read from Cassandra, by downloads and preview decodes.",
	}, func() float64 { return float64(db.ChunkReads()) }))
}

// CountUpload counts one upload by its result, and the bytes stored.
func (m *Registry) CountUpload(result string, bytes int64) {
	m.uploads.WithLabelValues(result).Inc()
	m.uploadBytes.Add(float64(bytes))
}

// ObserveQuery records one Cassandra statement; the store calls it.
func (m *Registry) ObserveQuery(q store.ObservedQuery) {
	m.queries.WithLabelValues(m.label(q.Statement), strconv.FormatBool(q.Err != nil)).Observe(q.Duration.Seconds())
}

// label shortens a statement to "VERB table[ LWT]", cached per statement.
func (m *Registry) label(stmt string) string {
	if l, ok := m.labels.Load(stmt); ok {
		return l.(string)
	}
	words := strings.Fields(strings.ToLower(stmt))
	label := "other"
	if len(words) > 0 {
		label = words[0]
		for i, w := range words {
			if (w == "from" || w == "into" || (i == 0 && w == "update")) && i+1 < len(words) {
				label += " " + words[i+1]
				break
			}
		}
		if strings.Contains(strings.ToLower(stmt), " if ") {
			label += " lwt"
		}
	}
	m.labels.Store(stmt, label)
	return label
}

// ConnCounter is what WatchConns reads of the connection cap (a
// *server.ConnLimiter).
type ConnCounter interface {
	// Open is the number of open connections.
	Open() int
	// Evicted is how many idle connections were closed to make room.
	Evicted() int64
}

// WatchConns exports the connection cap's open and evicted connections.
func (m *Registry) WatchConns(l ConnCounter) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "killrchat_http_connections", Help: "Open HTTP connections (capped by --max-conns).",
		}, func() float64 { return float64(l.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "killrchat_http_connections_evicted_total", Help: "Idle HTTP connections closed to make room at the connection cap.",
		}, func() float64 { return float64(l.Evicted()) }))
}

// Measure is middleware that records each request's latency by method,
// route and status; status says what status an error ends a request with.
func (m *Registry) Measure(status func(echo.Context, error) int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			code := status(c, err)
			m.requests.WithLabelValues(methodLabel(c.Request().Method), routeLabel(c, err), strconv.Itoa(code)).
				Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// knownMethods are the methods that get their own label; any other
// (a client may send any token as a method) is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodPatch: true, http.MethodOptions: true,
}

func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return "OTHER"
}

// routeLabel is the route pattern that served the request, or
// "unmatched" when no route did. For an unknown path echo's c.Path() is
// "/*", the catch-all that Group.Use registers so group middleware also
// runs for 404s, or "" when nothing matched; for a 404 or 405 it may name
// the nearest registered route, whose handler did not run.
func routeLabel(c echo.Context, err error) string {
	var he *echo.HTTPError
	if errors.As(err, &he) && (he == echo.ErrNotFound || he == echo.ErrMethodNotAllowed) {
		return "unmatched"
	}
	if p := c.Path(); p != "" && p != "/*" {
		return p
	}
	return "unmatched"
}

// Handler serves the registry in Prometheus' text format.
func (m *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
