package version

import (
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name                   string
		bi                     *debug.BuildInfo
		version, commit, built string
		want                   Info
	}{
		{name: "no build info, no ldflags", want: Info{Version: Devel}},
		{name: "go run: (devel), no VCS stamp", bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: Devel, GoVersion: "go1.26.8"}},
		{name: "VCS stamp only", bi: stamped, want: Info{Version: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567",
			CommitTime: "2026-11-01T10:00:00Z", Modified: true, GoVersion: "go1.26.8"}},
		{name: "ldflags win", bi: stamped, version: "v2.0.0", commit: "0123456789abcdef0123456789abcdef01234567", built: "2026-11-02T00:00:00Z",
			want: Info{Version: "v2.0.0", Commit: "0123456789abcdef0123456789abcdef01234567", CommitTime: "2026-11-01T10:00:00Z",
				Modified: true, BuildTime: "2026-11-02T00:00:00Z", GoVersion: "go1.26.8"}},
		{name: "ldflags name another commit: the stamp's time and dirty flag are dropped", bi: stamped, commit: "fedcba",
			want: Info{Version: "v1.4.0", Commit: "fedcba", GoVersion: "go1.26.8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := from(tc.bi, tc.version, tc.commit, tc.built)
			if got.Platform == "" {
				t.Error("no platform")
			}
			got.Platform = ""
			if tc.want.GoVersion == "" {
				tc.want.GoVersion = got.GoVersion // runtime.Version()
			}
			if got != tc.want {
				t.Errorf("from = %+v\nwant   %+v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "v1.2.3", Commit: "0123456789abcdef0123", BuildTime: "2026-01-02T03:04:05Z", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"coffer v1.2.3 (commit 0123456789ab, built 2026-01-02T03:04:05Z, go1.26.8 linux/amd64)"},
		{Info{Version: Devel, Commit: "abc", Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			"coffer devel (commit abc-dirty, go1.26.8 linux/arm64)"},
		{Info{Version: Devel, GoVersion: "go1.26.8", Platform: "linux/amd64"}, "coffer devel (go1.26.8 linux/amd64)"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
}
