// Package metrics is KillrChat's Prometheus registry: request latency by
// route, Cassandra statement latency, live streams, uploads, fences, Web
// Push deliveries and the HTTP connection cap, every label from a bounded
// set of values.
package metrics
