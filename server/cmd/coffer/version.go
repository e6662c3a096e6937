package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cofferhq/coffer/server/internal/version"
)

// runVersion is `coffer version [--json]`: which build this is (no database, no config), so
// a deployment can check what it runs before and after an upgrade.
func runVersion(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("version")
	asJSON := fs.Bool("json", false, "print JSON: version, commit, commitTime, modified, buildTime, goVersion, platform")
	if err := parse(fs, args); err != nil {
		return err
	}
	info := version.Get()
	if *asJSON {
		return json.NewEncoder(out).Encode(info)
	}
	_, err := fmt.Fprintln(out, info)
	return err
}
