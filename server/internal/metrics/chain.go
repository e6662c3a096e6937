package metrics

import (
	"net/url"

	"github.com/prometheus/client_golang/prometheus"
)

// RPC metrics, one series per chain, endpoint host and JSON-RPC method (a dozen methods).
var (
	RPCRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_rpc_requests_total",
		Help: "JSON-RPC calls sent to a chain's endpoint (endpoint: its host, never the path or query where API keys live), by method.",
	}, []string{"chain_id", "endpoint", "method"})
	RPCErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_rpc_errors_total",
		Help: "JSON-RPC calls that failed, by kind: transport (no answer, HTTP 429/5xx, rate limit: the call moves to the next endpoint) or node (the node answered with an error).",
	}, []string{"chain_id", "endpoint", "method", "kind"})
	RPCDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "coffer_rpc_request_duration_seconds",
		Help:    "JSON-RPC call latency per chain and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"chain_id", "method"})
)

// EndpointLabel is an RPC URL's host (and port): providers put API keys in the path or query,
// and user info may hold a password, so neither ever becomes a label.
func EndpointLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "invalid"
	}
	return u.Host
}
