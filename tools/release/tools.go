//go:build tools

// Package release pins GoReleaser, which checks and builds the release
// archives described by .goreleaser.yaml at the repository's root, in a
// module of its own: its many dependencies stay out of agentauth's go.mod.
// `go tool task release:check` builds it once (cached) and runs it.
package release

import _ "github.com/goreleaser/goreleaser/v2"
