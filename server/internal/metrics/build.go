package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cofferhq/coffer/server/internal/version"
)

// buildInfo is the constant 1 labelled with the binary's version, VCS commit and Go version
// (`coffer version`'s: the release's -ldflags values, else what the Go toolchain recorded), so
// dashboards can show what runs and alerts can join on it.
var buildInfo = func() prometheus.Gauge {
	v := version.Get()
	if v.Commit == "" {
		v.Commit = "unknown" // no VCS information (go run, tests): an empty label would drop it
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "coffer_build_info",
		Help:        "Always 1; labelled with the running binary's version, VCS commit and Go version (coffer version).",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion},
	})
	g.Set(1)
	return g
}()
