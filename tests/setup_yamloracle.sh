#!/usr/bin/env bash
# Builds the Go YAML reader the tests use as their oracle (tests/support/yamloracle: go-yaml v2 and v3 and
# sigs.k8s.io/yaml at the versions kubectl and kustomize use) with `go build`, modules through the Go module proxy
# checked against the committed go.sum. The binary is never committed: it goes to a cache outside the checkout,
# keyed by a hash of go.mod, go.sum and main.go (tests/support/yamloracle.py computes the same path), and a
# cached build is reused. Prints one line. Without Go it exits 0 and the tests that need the oracle skip; a failed
# build where Go is exits 1 (.ci/run then stops, and sets DEVLANE_YAMLORACLE_REQUIRED=1 so the tests never skip).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 0

SRC=tests/support/yamloracle

skip() {
    echo "==> yamloracle not built: $*; the tests that read devlane's output with Go's YAML readers will skip"
    exit 0
}

command -v sha256sum >/dev/null 2>&1 || skip "sha256sum is missing"
hash=$({ cat "$SRC/go.mod"; printf '\0'; cat "$SRC/go.sum"; printf '\0'; cat "$SRC/main.go"; } | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/devlane-test-tools/yamloracle-$hash"
DEST="$dir/yamloracle"

if [ -x "$DEST" ]; then
    echo "==> yamloracle already built: $DEST"
    exit 0
fi
command -v go >/dev/null 2>&1 || skip "go is not on PATH"
mkdir -p "$dir" || skip "cannot create $dir"
tmp=$(mktemp "$dir/.yamloracle.XXXXXX") || skip "mktemp failed"
trap 'rm -f "$tmp"' EXIT
log=$( (cd "$SRC" && GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 timeout 600 go build -trimpath -o "$tmp" .) 2>&1 ) \
    || { printf '%s\n' "$log" >&2; echo "error: building the yamloracle failed (above)" >&2; exit 1; }
chmod 0755 "$tmp" && mv -f "$tmp" "$DEST" || skip "could not write $DEST"
echo "==> yamloracle built with $(go env GOVERSION): $DEST"
exit 0
