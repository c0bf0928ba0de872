#!/usr/bin/env bash
# Checks the release build described by .goreleaser.yaml: `goreleaser check`
# on the file, then a snapshot build of agentauth for this machine, whose
# binary must run and report the version GoReleaser stamped into it.
#
# GoReleaser is built from source through the Go module proxy, from the
# separate module tools/release (pinned in its go.mod), and cached in
#   ${AGENTAUTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentauth-tools}
# keyed on that module's content: only the first run builds it.
#
# Last line: "release: N passed, M failed"; exit status 1 when M > 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TOOLS=tools/release
export GOWORK=off GOFLAGS=-mod=readonly

die() { echo "check.sh: $*" >&2; exit 1; }

version=$(go -C "$TOOLS" list -m -f '{{.Version}}' github.com/goreleaser/goreleaser/v2) ||
	die "cannot resolve github.com/goreleaser/goreleaser/v2 in $TOOLS/go.mod"
cache_root=${AGENTAUTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentauth-tools}
key=$( (go env GOVERSION GOOS GOARCH; cat "$TOOLS/go.mod" "$TOOLS/go.sum") | sha256sum | cut -c1-16)
bin_dir=$cache_root/goreleaser-$version-$key
GORELEASER=$bin_dir/goreleaser
if [ ! -x "$GORELEASER" ]; then
	echo "building goreleaser $version from $TOOLS (first run only; takes a few minutes)..."
	start=$(date +%s)
	mkdir -p "$cache_root"
	tmp_bin=$(mktemp -d "$cache_root/.build.XXXXXX")
	if ! CGO_ENABLED=0 go -C "$TOOLS" build -trimpath -o "$tmp_bin/goreleaser" github.com/goreleaser/goreleaser/v2; then
		rm -rf "$tmp_bin"
		die "building goreleaser in $TOOLS failed"
	fi
	rm -rf "$bin_dir"
	mv "$tmp_bin" "$bin_dir" 2>/dev/null || rm -rf "$tmp_bin"
	echo "built in $(($(date +%s) - start))s into $bin_dir"
fi

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
	[ -z "${2:-}" ] || sed 's/^/     /' "$2"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if "$GORELEASER" check >"$work/check.log" 2>&1; then
	pass "goreleaser check .goreleaser.yaml"
else
	fail "goreleaser check .goreleaser.yaml" "$work/check.log"
fi

# A snapshot build into a folder of its own, so that dist/ of a real release
# is never touched.
sed "s|^project_name: agentauth$|project_name: agentauth\ndist: $work/dist|" .goreleaser.yaml >"$work/goreleaser.yaml"
if "$GORELEASER" build --config "$work/goreleaser.yaml" --snapshot --clean --single-target \
	--output "$work/agentauth" >"$work/build.log" 2>&1; then
	pass "goreleaser build --snapshot --single-target"
	if out=$("$work/agentauth" version 2>&1) && grep -q -- "SNAPSHOT" <<<"$out"; then
		pass "the snapshot binary runs and reports its version ($(head -1 <<<"$out"))"
	else
		echo "$out" >"$work/version.log"
		fail "the snapshot binary's version names the snapshot" "$work/version.log"
	fi
else
	fail "goreleaser build --snapshot --single-target" "$work/build.log"
fi

echo "release: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
