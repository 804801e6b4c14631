// This file owns the Prometheus metrics: request latency by route,
// Cassandra statement latency, and open live-stream connections.
package handlers

import (
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

// Metrics is the application's Prometheus registry.
type Metrics struct {
	registry *prometheus.Registry
	requests *prometheus.HistogramVec
	queries  *prometheus.HistogramVec
	// SSEConnections is the number of open live-stream connections.
	SSEConnections prometheus.Gauge
	labels         sync.Map // statement -> its short label
}

// NewMetrics creates the registry with Go and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
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
	m.registry.MustRegister(m.requests, m.queries, m.SSEConnections,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveQuery records one Cassandra statement; the store calls it.
func (m *Metrics) ObserveQuery(q store.ObservedQuery) {
	m.queries.WithLabelValues(m.label(q.Statement), strconv.FormatBool(q.Err != nil)).Observe(q.Duration.Seconds())
}

// label shortens a statement to "VERB table[ LWT]", cached per statement.
func (m *Metrics) label(stmt string) string {
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

func (m *Metrics) measure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		code := c.Response().Status
		if err != nil {
			code, _ = statusOf(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
		return err
	}
}

func (m *Metrics) handler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
}
