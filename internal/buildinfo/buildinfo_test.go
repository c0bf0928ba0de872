package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}}
	dirty := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name                 string
		linkVersion, linkRev string
		bi                   *debug.BuildInfo
		wantVersion, wantRev string
	}{
		{"link-time values win", "v2.0.0", "feed", stamped, "v2.0.0", "feed"},
		{"go install module@version", "", "", stamped, "v1.4.0", "abc123"},
		{"git checkout with changes", "", "", dirty, "dev", "abc123-dirty"},
		{"nothing recorded", "", "", nil, "dev", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.linkVersion, tt.linkRev, tt.bi)
			if got.Version != tt.wantVersion || got.Revision != tt.wantRev || got.GoVersion != runtime.Version() {
				t.Errorf("got %+v, want version %s revision %s go %s", got, tt.wantVersion, tt.wantRev, runtime.Version())
			}
		})
	}
}
