// Package buildinfo says which build of agentauth is running: the version
// and revision set at link time (the Dockerfile does), else what the Go
// toolchain recorded (go install module@version, a build from a git
// checkout), else "dev" and "unknown".
//
//	go build -ldflags "-X github.com/agentauth/agentauth/internal/buildinfo.version=v1.2.3 \
//	  -X github.com/agentauth/agentauth/internal/buildinfo.revision=$(git rev-parse HEAD)" ./cmd/agentauth
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; empty: read from the build information.
var version, revision string

// Info is what identifies a build.
type Info struct {
	Version   string
	Revision  string
	GoVersion string
}

// Get returns the running build's identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi)
}

// resolve prefers the link-time values, then the module version and the VCS
// stamp of bi (nil: none).
func resolve(linkVersion, linkRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: linkVersion, Revision: linkRevision, GoVersion: runtime.Version()}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			info.Revision = rev
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}
