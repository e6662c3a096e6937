package metrics

import "github.com/prometheus/client_golang/prometheus"

// River job metrics, per job kind (a fixed, small set).
var (
	JobWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "coffer_job_wait_seconds",
		Help:    "Time a River job waited between becoming due and starting to run, per kind.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"kind"})
	JobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "coffer_job_duration_seconds",
		Help:    "River job run time per kind and outcome (ok, error).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"kind", "outcome"})
)
