package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is the constant 1 labelled with the binary's version, VCS commit and Go version,
// so dashboards can show what runs and alerts can join on it.
var buildInfo = func() prometheus.Gauge {
	version, commit := Build()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "coffer_build_info",
		Help:        "Always 1; labelled with the running binary's module version, VCS commit and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}()

// Build is the binary's module version and VCS commit as the Go toolchain recorded them
// ("(devel)" and "unknown" when it recorded none, as in tests).
func Build() (version, commit string) {
	version, commit = "(devel)", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version, commit
	}
	if info.Main.Version != "" {
		version = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			commit = s.Value
		}
	}
	return version, commit
}
