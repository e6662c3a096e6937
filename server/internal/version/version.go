// Package version says which build of Coffer is running: the module version, the commit, when
// it was built and with which Go. Release builds (make build, make image) set the first three
// with -ldflags -X; a plain `go build` or `go run` falls back to what the Go toolchain recorded
// (runtime/debug.ReadBuildInfo: the module version and the VCS stamp, when there was one).
package version

import (
	"runtime"
	"runtime/debug"
	"strconv"
)

// Set at link time: go build -ldflags "-X github.com/cofferhq/coffer/server/internal/version.version=v1.2.3 …".
// Left empty, the build info fills them.
//
//nolint:gochecknoglobals // -ldflags -X sets only package variables
var (
	version   string
	commit    string
	buildTime string
)

// Info describes one build. Empty fields are unknown (a build without -ldflags and without a
// VCS stamp, e.g. `go run` outside a git checkout).
type Info struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CommitTime string `json:"commitTime,omitempty"`
	// Modified: the working tree had uncommitted changes when this was built.
	Modified  bool   `json:"modified"`
	BuildTime string `json:"buildTime"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Devel is the version of a build that names none.
const Devel = "devel"

// Get is this binary's build.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, version, commit, buildTime)
}

// from merges the link-time values (which win where set) with the toolchain's build info.
func from(bi *debug.BuildInfo, version, commit, buildTime string) Info {
	info := Info{Version: version, Commit: commit, BuildTime: buildTime, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		var revision string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				info.CommitTime = s.Value
			case "vcs.modified":
				info.Modified, _ = strconv.ParseBool(s.Value)
			}
		}
		if info.Commit == "" {
			info.Commit = revision
		} else if revision != "" && revision != info.Commit {
			// The link-time commit names the build; the toolchain's stamp of another commit
			// only confuses, so it is dropped with its time and dirty flag.
			info.CommitTime, info.Modified = "", false
		}
	}
	if info.Version == "" {
		info.Version = Devel
	}
	return info
}

// String is the one-line form: "coffer v1.2.3 (commit abc1234, built 2026-01-02T03:04:05Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	s := "coffer " + i.Version + " ("
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += "commit " + c
		if i.Modified {
			s += "-dirty"
		}
		s += ", "
	}
	if i.BuildTime != "" {
		s += "built " + i.BuildTime + ", "
	}
	return s + i.GoVersion + " " + i.Platform + ")"
}
