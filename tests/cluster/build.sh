#!/usr/bin/env bash
# Builds the control plane of the cluster test tier (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok) from the Go module proxy, at the versions of tests/cluster/versions.env. Each upstream module is built from a
# go.mod of its own with a committed go.sum (tests/cluster/modules/<module>/: `tool` lines name the commands), so
# version selection never mixes two upstreams' dependencies. The three Kubernetes commands share one module: they
# are one upstream module (k8s.io/kubernetes) at one version, whose staging modules (k8s.io/api, ...) are replaced
# by their published v0.Y.Z (upstream's own go.mod points them at ./staging, which Go ignores in a dependency).
#
# The binaries go outside the checkout, to ~/.cache/devlane-test-tools/controlplane-<hash>/bin (hash of versions.env,
# the modules' files and the build flags; $XDG_CACHE_HOME is honoured), with Go's module and build caches under
# ~/.cache/devlane-test-tools/go (cache that directory in CI). A complete set is reused (a warm run takes a
# second); a build goes to a temporary directory renamed into place when whole, so a killed build leaves no half set.
#
#   bash tests/cluster/build.sh            build (or reuse) the set: one line per component; exit 1 if a build fails
#   bash tests/cluster/build.sh --bin-dir  print the set's directory, built or not (tests/support/controlplane.py)
#   bash tests/cluster/build.sh --update   regenerate modules/*/go.mod and go.sum from versions.env (needs the proxy)
#
# Without Go it says so and exits 0: the cluster tests then skip, or fail where DEVLANE_CLUSTER_REQUIRED=1.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$HERE/versions.env"
K=$KUBERNETES_VERSION
MINOR=$(echo "$K" | cut -d. -f2)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/devlane-test-tools
ENABLE="bash tests/cluster/build.sh"

# component, its module directory (under modules/), its Go package
COMPONENTS=(
    "etcd etcd go.etcd.io/etcd/server/v3"
    "kube-apiserver kubernetes k8s.io/kubernetes/cmd/kube-apiserver"
    "kube-controller-manager kubernetes k8s.io/kubernetes/cmd/kube-controller-manager"
    "kube-scheduler kubernetes k8s.io/kubernetes/cmd/kube-scheduler"
    "kwok kwok sigs.k8s.io/kwok/cmd/kwok"
)
MODULES=(etcd kubernetes kwok)
# kwok acts by "stages" read from its --config (kwokctl writes them there): the fast node and pod ones of the pinned
# module (Nodes Ready with a lease heartbeat; Pods Running and Ready with an IP, completed, deleted), copied beside bin/
STAGES=kwok-stages.yaml
STAGE_FILES=(node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready
             pod/fast/pod-complete pod/fast/pod-delete)

# Kubernetes reports the version it is stamped with (unstamped: v0.0.0-master, which some clients refuse); -s -w
# drops the symbol tables (a third of the size; the tests never debug the control plane).
LDFLAGS="-s -w"
KUBE_LDFLAGS="$LDFLAGS"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBE_LDFLAGS+=" -X $pkg.gitVersion=v$K -X $pkg.gitMajor=1 -X $pkg.gitMinor=$MINOR -X $pkg.gitTreeState=clean"
done

key=$(cd "$HERE" && { find versions.env modules -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
                      echo "$LDFLAGS | $KUBE_LDFLAGS"; } | sha256sum | cut -c1-16)
DIR=$CACHE/controlplane-$key
BIN=$DIR/bin

say() { echo "==> $*"; }
die() { echo "==> error: $*" >&2; exit 1; }

version_of() {  # the first line binary $1 prints for --version
    { "$1" --version 2>&1 || true; } | head -n 1
}

complete() {  # are the binaries in $1, and kwok's stages beside that directory?
    local spec
    for spec in "${COMPONENTS[@]}"; do
        [ -x "$1/${spec%% *}" ] || return 1
    done
    [ -f "$(dirname "$1")/$STAGES" ]
}

report() {  # one line per component of the set in $BIN, said to be $1 (built, cached)
    local spec name
    for spec in "${COMPONENTS[@]}"; do
        name=${spec%% *}
        say "$name: $(version_of "$BIN/$name") ($(du -m "$BIN/$name" | cut -f1) MB, $1): $BIN/$name"
    done
}

requires() {  # does modules/$1/go.mod require module $2 at v$3?
    grep -Eq "^[[:space:]]*$2 v$3( // indirect)?\$" "$HERE/modules/$1/go.mod"
}

go_env() {
    export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build CGO_ENABLED=0 GOWORK=off GOFLAGS=-modcacherw
}

update() {
    command -v go >/dev/null 2>&1 || die "--update needs Go"
    go_env
    local gomod staging etcd m
    gomod=$(go mod download -json "k8s.io/kubernetes@v$K" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
    [ -f "$gomod" ] || die "could not download the go.mod of k8s.io/kubernetes v$K"
    etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$gomod")
    [ "$etcd" = "v$ETCD_VERSION" ] || die "k8s.io/kubernetes v$K requires etcd $etcd, versions.env says v$ETCD_VERSION"
    staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod")
    [ -n "$staging" ] || die "no staging modules in $gomod"
    for m in "${MODULES[@]}"; do
        rm -rf "${HERE:?}/modules/$m" && mkdir -p "$HERE/modules/$m"
        # go 1.24 (the first with `tool` lines): `go get` raises it to what the upstream module declares
        (cd "$HERE/modules/$m" && go mod init "devlane.test/cluster/$m" 2>/dev/null && go mod edit -go=1.24.0)
    done
    (
        cd "$HERE/modules/kubernetes"
        go mod edit -go="$(awk '$1 == "go" {print $2}' "$gomod")"
        for m in $staging; do go mod edit -replace="$m=$m@v0.${K#1.}"; done
        go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K" "k8s.io/kubernetes/cmd/kube-controller-manager@v$K" \
            "k8s.io/kubernetes/cmd/kube-scheduler@v$K"
    )
    (cd "$HERE/modules/etcd" && go get -tool "go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
    (cd "$HERE/modules/kwok" && go get -tool "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION")
    for m in "${MODULES[@]}"; do
        (cd "$HERE/modules/$m" && go mod edit -toolchain=none && go mod tidy)
    done
    say "regenerated $(cd "$HERE/../.." && ls -d tests/cluster/modules/*/go.mod | tr '\n' ' ')(commit them with go.sum)"
}

build() {
    if complete "$BIN"; then
        report cached
        return
    fi
    if ! command -v go >/dev/null 2>&1; then
        say "Go not found: the cluster tier will be skipped (its tests say so); to run it, install Go >= 1.26 and run \`$ENABLE\`"
        return
    fi
    requires kubernetes k8s.io/kubernetes "$K" && requires etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" \
        && requires kwok sigs.k8s.io/kwok "$KWOK_VERSION" \
        || die "tests/cluster/modules/*/go.mod do not require the versions of versions.env: run \`$ENABLE --update\`"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.controlplane.lock"
    if command -v flock >/dev/null 2>&1; then
        flock 9  # one build at a time; a second one reuses the first's set
    fi
    if complete "$BIN"; then
        report "cached, built by a concurrent run"
        return
    fi
    # what killed builds left (none runs now: we hold the lock), and a set someone took a binary from
    rm -rf "$CACHE"/.controlplane-*.partial "$DIR"
    tmp=$(mktemp -d "$CACHE/.controlplane-$key.XXXXXX.partial")
    trap 'rm -rf "$tmp"' EXIT
    go_env
    GOFLAGS="-modcacherw -mod=readonly -buildvcs=false"
    local m spec name module pkg pkgs out flags started
    for m in "${MODULES[@]}"; do
        pkgs=()
        for spec in "${COMPONENTS[@]}"; do
            read -r name module pkg <<<"$spec"
            if [ "$module" = "$m" ]; then
                pkgs+=("$pkg")
                out=$tmp/bin/$name
            fi
        done
        if [ "${#pkgs[@]}" -gt 1 ]; then
            out=$tmp/bin/  # several commands: each named after its package
        fi
        flags=$LDFLAGS
        if [ "$m" = kubernetes ]; then
            flags=$KUBE_LDFLAGS
        fi
        say "building ${pkgs[*]} with $(go env GOVERSION) (tests/cluster/modules/$m)"
        started=$SECONDS
        # one `go build` per module: the Kubernetes commands compile their shared packages once
        (cd "$HERE/modules/$m" && go build -trimpath -ldflags "$flags" -o "$out" "${pkgs[@]}") \
            || die "go build of tests/cluster/modules/$m failed (the errors are above)"
        say "built tests/cluster/modules/$m in $((SECONDS - started)) s"
    done
    local kwok_dir
    kwok_dir=$(cd "$HERE/modules/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
    for f in "${STAGE_FILES[@]}"; do
        echo "---"
        cat "$kwok_dir/kustomize/stage/$f.yaml"
    done >"$tmp/$STAGES"
    complete "$tmp/bin" || die "the build left an incomplete set in $tmp"
    local reported
    for name in kube-apiserver kube-controller-manager kube-scheduler; do
        reported=$(version_of "$tmp/bin/$name")
        [ "$reported" = "Kubernetes v$K" ] || die "$name reports \"$reported\", not Kubernetes v$K"
    done
    cp "$HERE/versions.env" "$tmp/versions.env"
    go env GOVERSION >"$tmp/go-version"
    chmod 755 "$tmp"
    mv -T "$tmp" "$DIR" || die "could not move the built set to $DIR"
    trap - EXIT
    report built
}

case ${1:-} in
    --bin-dir) echo "$BIN" ;;
    --update) update ;;
    "") build ;;
    *) echo "usage: bash tests/cluster/build.sh [--bin-dir|--update]" >&2; exit 2 ;;
esac
