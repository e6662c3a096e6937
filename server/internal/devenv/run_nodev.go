//go:build nodev

package devenv

import (
	"context"
	"errors"
)

// ErrNotInThisBuild is Run's answer in a release build (-tags nodev: make build, make image),
// which leaves out the embedded dev chain: a whole go-ethereum node that `coffer serve` never
// runs, and about 12 MiB of its resident memory.
var ErrNotInThisBuild = errors.New("coffer dev is not in this build: release builds (-tags nodev: make build, make image) leave out the embedded dev chain; run a default build (go build ./server/cmd/coffer, or make run)")

// Run refuses: see ErrNotInThisBuild.
func Run(context.Context, Options) error { return ErrNotInThisBuild }
