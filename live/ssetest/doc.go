// Package ssetest reads server-sent events as the HTML standard's parser
// does ("Interpreting an event stream"), which browsers' EventSource and
// htmx's SSE extension follow: a line ends at "\r\n", at a lone "\r" or at
// "\n". Tests read streams with it (r3labs' reader splits events on "\r"
// but their lines on "\n" only, and so cannot see an event forged with
// lone carriage returns).
package ssetest
