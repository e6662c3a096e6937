package jobs

import (
	"log/slog"

	"github.com/riverqueue/river"
)

// RiverConfig is the River configuration NewClient builds for opts.
func RiverConfig(opts Options) *river.Config { return riverConfig(slog.New(slog.DiscardHandler), opts) }
