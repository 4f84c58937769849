"""The Argo CD CMP front door on the real bookshop example (repo-local Kardinal plugins), driven the way
argocd-cmp-server drives it: the repository as a tarball unpacked into a temp dir with file modes reset,
`devlane cmp generate` run as a process in the Application's path with only the environment Argo CD sets, and
stdout parsed as the manifests: it carries the objects and nothing else. The request parsing and errors are in
tests/cli/test_cmp.py and tests/unit/views/test_cmp.py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
from support import EXAMPLE, ROOT, yamlc

SERVICE = "orders=ghcr.io/acme/bookshop-orders:pr-7"
RENDER = ["render", str(EXAMPLE), "--flow", "pr-7", "--service", SERVICE, "--stdout"]


def _unpack_like_argocd(src, dest) -> None:
    """Tar the repo and unpack it with file modes reset, as the cmp-server does (preserveFileMode: false)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname=".", filter=lambda ti: None if "rendered" in ti.name.split("/") else ti)
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:gz") as tar:
        for member in tar.getmembers():
            member.mode = 0o755 if member.isdir() else 0o644
        # `filter` came with Python 3.11.4 (Debian's 3.11.2 has none); this archive is the test's own
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))


def _generate(app_dir, env: dict):
    """`python -m renderer.cli cmp generate` in `app_dir` with nothing but Argo CD's environment and `env`."""
    full = {"PATH": os.environ["PATH"], "HOME": str(app_dir), "PYTHONPATH": str(ROOT),
            "ARGOCD_APP_NAME": "bookshop-pr-7", "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_APP_PROJECT_NAME": "default",
            "ARGOCD_APP_REVISION": "a" * 40, "ARGOCD_APP_SOURCE_PATH": "examples/bookshop",
            "ARGOCD_APP_SOURCE_REPO_URL": "https://github.com/acme/bookshop.git", **env}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "renderer.cli", "cmp", "generate"], cwd=app_dir, env=full,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _objects(stream: str) -> list[dict]:
    return [d for d in yamlc.safe_load_all(stream) if d]


@pytest.fixture
def app_dir(tmp_path):
    _unpack_like_argocd(EXAMPLE, tmp_path / "app")
    return tmp_path / "app"


def test_generate_prints_exactly_what_render_stdout_prints(app_dir, harness):
    params = json.dumps([{"name": "services", "array": [SERVICE]}])
    out = _generate(app_dir, {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": params,
                              "ARGOCD_EXEC_TIMEOUT": "90s"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = harness.cli(*RENDER)
    assert expected.returncode == 0, expected.stderr
    assert out.stdout == expected.stdout
    objects = _objects(out.stdout)
    assert len(objects) == 10 and all(o["apiVersion"] and o["kind"] for o in objects)


def test_generate_objects_match_render_and_the_revision_is_logged(app_dir, harness):
    out = _generate(app_dir, {"ARGOCD_APP_PARAMETERS": json.dumps([
        {"name": "flow-id", "string": "pr-7"}, {"name": "services", "array": [SERVICE]}])})  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = harness.cli(*RENDER)
    assert expected.returncode == 0, expected.stderr
    assert _objects(out.stdout) == _objects(expected.stdout)
    assert f"revision {'a' * 40}" in out.stderr and "10 objects" in out.stderr
    assert "devlane:" not in out.stdout  # logs never reach Argo CD's manifest parser


def test_the_plugins_objects_pass_the_cluster_api_gate(app_dir, harness):
    """The real plugins' objects too: a cluster serving the core APIs and Ingress takes the whole stream."""
    out = harness.cli(
        "cmp",
        "generate",
        cwd=app_dir,
        env={
            "ARGOCD_ENV_FLOW_ID": "pr-7",
            "PARAM_SERVICES_0": SERVICE,
            "KUBE_API_VERSIONS": "v1,apps/v1,networking.k8s.io/v1",
        },
    )
    assert out.returncode == 0, out.stderr
    assert len(_objects(out.stdout)) == 10


def test_generate_on_the_inventory_overlay_prints_what_render_prints(tmp_path, harness):
    """examples/argocd/applicationset-inventory.yaml: the Application's path is a kustomize overlay, whose base
    lies beside it in the unpacked repository (here without .git, so the services are given: the image the
    example's image-template names for api)."""
    appset = yamlc.safe_load((ROOT / "examples" / "argocd" / "applicationset-inventory.yaml").read_text())
    source = appset["spec"]["template"]["spec"]["source"]
    repo = tmp_path / "repo"
    _unpack_like_argocd(ROOT / "examples" / "inventory", repo / "examples" / "inventory")
    params = {p["name"]: p for p in source["plugin"]["parameters"]}
    service = "api=" + params["image-template"]["string"].format(service="api", short_sha="pr-7")
    params = json.dumps([{"name": "services", "array": [service]}])
    out = _generate(repo / source["path"], {"ARGOCD_APP_SOURCE_PATH": source["path"], "ARGOCD_ENV_FLOW_ID": "pr-7",
                                            "ARGOCD_APP_PARAMETERS": params})  # fmt: skip
    assert out.returncode == 0, out.stderr
    expected = harness.cli("render", str(ROOT / source["path"]), "--flow", "pr-7", "--service", service, "--stdout")
    assert expected.returncode == 0, expected.stderr
    assert out.stdout == expected.stdout
    objects = {(o["kind"], o["metadata"]["name"]) for o in _objects(out.stdout)}
    assert ("Deployment", "api-pr-7") in objects and ("Ingress", "inventory-pr-7") in objects
    assert any(k == "ConfigMap" and n.startswith("inventory-config-") for k, n in objects)


def test_generate_in_namespace_isolation_prints_the_namespace_and_the_aliases(app_dir, harness):
    """`isolation: namespace` in the Application's .devlane.yaml: the stream carries the Namespace (Argo CD creates
    it from the manifests, no CreateNamespace needed) and every object names its namespace."""
    config = app_dir / ".devlane.yaml"
    config.write_text(config.read_text() + "isolation: namespace\n")
    params = json.dumps([{"name": "services", "array": [SERVICE]}])
    out = _generate(app_dir, {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_APP_PARAMETERS": params})
    assert out.returncode == 0, out.stderr
    expected = harness.cli("render", str(app_dir), "--flow", "pr-7", "--service", SERVICE, "--stdout")
    assert expected.returncode == 0, expected.stderr
    assert out.stdout == expected.stdout
    objects = _objects(out.stdout)
    assert {(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] == "Namespace"} == {
        ("Namespace", "bookshop-pr-7")}
    assert all(o["metadata"].get("namespace") == "bookshop-pr-7" for o in objects if o["kind"] != "Namespace")
    catalog = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "catalog")
    assert catalog["spec"]["externalName"] == "catalog.bookshop.svc.cluster.local"
    assert "reads Secret stripe-test, which the flow namespace does not have" in out.stderr  # shown in Argo CD's UI


# --------------------------------------------------------------------------------------------------
# services: auto (issue 43, point 3): the same targets as `render --services auto`, from the revisions Argo CD gives

AUTO_TEMPLATE = "ghcr.io/acme/bookshop-{service}:{short_sha}"


@pytest.fixture
def pr_clone(harness, tmp_path):
    """The repo-server's clone of a pull request: main, a feature branch changing `change`, origin/* fetched and
    the head checked out (detached), as Argo CD leaves it; returns (clone, head sha, a function that commits more)."""
    harness.copy(EXAMPLE, "examples/bookshop")
    harness.commit("base")
    harness.git("checkout", "-q", "-b", "feature")

    def push(rel: str, text: str) -> tuple:
        harness.write(rel, text)
        head = harness.commit(f"change {rel}")
        clone = tmp_path / f"clone-{head[:7]}"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(harness.root), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--detach", head], check=True)
        app = tmp_path / f"app-{head[:7]}"
        _unpack_like_argocd(clone, app)  # .git included, as the cmp-server gets it by default
        return app / "examples" / "bookshop", head

    return push


def _auto_env(head: str, **extra: str) -> dict:
    params = [{"name": "services", "string": "auto"}, {"name": "image-template", "string": AUTO_TEMPLATE}]
    return {"ARGOCD_ENV_FLOW_ID": "pr-7", "ARGOCD_ENV_BASE_REF": "main", "ARGOCD_ENV_PR": "7",
            "ARGOCD_APP_REVISION": head, "ARGOCD_APP_PARAMETERS": json.dumps(params), **extra}  # fmt: skip


def test_services_auto_prints_what_render_services_auto_prints(pr_clone, harness):
    app, head = pr_clone("examples/bookshop/src/orders/main.py", "print('orders')\n")
    out = _generate(app, _auto_env(head))
    assert out.returncode == 0, out.stderr
    expected = harness.cli("render", str(app), "--flow", "pr-7", "--services", "auto", "--base", "origin/main",
                           "--image-template", AUTO_TEMPLATE, "--pr", "7", "--stdout")  # fmt: skip
    assert expected.returncode == 0, expected.stderr
    assert out.stdout == expected.stdout
    assert f"image: ghcr.io/acme/bookshop-orders:{head[:7]}" in out.stdout and "name: orders-pr-7" in out.stdout
    assert "name: catalog-pr-7" not in out.stdout  # only what the pull request changed


def test_services_auto_of_a_docs_only_pull_request_is_one_configmap_saying_so(pr_clone):
    app, head = pr_clone("examples/bookshop/README.md", "# the docs\n")
    out = _generate(app, _auto_env(head))
    assert out.returncode == 0, out.stderr
    objects = _objects(out.stdout)
    assert [(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects] == [
        ("ConfigMap", "devlane-no-lane-pr-7", "shop")]
    assert objects[0]["metadata"]["labels"]["devlane.dev/flow"] == "pr-7"
    assert "no service changed between origin/main and HEAD" in objects[0]["data"]["reason"]


@pytest.mark.parametrize(("drop", "said"), [
    ("git", "the plugin was sent no .git"),
    ("ARGOCD_ENV_BASE_REF", "needs the plugin env BASE_REF and the parameter image-template"),
])  # fmt: skip
def test_services_auto_without_the_history_or_the_base_fails_with_nothing_on_stdout(pr_clone, drop, said):
    app, head = pr_clone("examples/bookshop/src/orders/main.py", "print('orders')\n")
    env = _auto_env(head)
    if drop == "git":
        import shutil

        shutil.rmtree(app.parent.parent / ".git")
    else:
        env.pop(drop)
    out = _generate(app, env)
    assert out.returncode == 1 and out.stdout == "" and said in out.stderr, out.stderr
