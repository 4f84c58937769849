"""The neon-branch and stripe built-ins' output is what a cluster accepts, and the Neon Jobs do what they say.

- Every object of a flow rendered with both (by short name, each mode) passes
  strict Kubernetes validation (the ExternalSecret against ESO's v1 CRD), and the flow builds with
  `kubectl kustomize`; no secret-looking arg reaches the files, logs or flow.metadata.
- The create and delete scripts of the rendered Jobs run for real (sh, curl, jq, kubectl with `apply` stubbed)
  against a local fake of the Neon API v2: find-or-create by name, expires_at from the Job's clock, the
  connection URI written into the flow's Secret, idempotent re-runs, and a teardown that keeps the branch
  while the flow is still deployed."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from support import kubectl_kustomize, validate_strict, yamlc
from support.kardinal import import_builtin
from support.neon_stripe import NEON_LITERAL_KEY, neon_args, neon_stripe_shop

from renderer import api

PLUGINS = ("neon-branch", "stripe")
API_KEY = "napi_fake-key-for-the-local-server"
URI = "postgresql://orders_app:pw-from-neon@ep-fake-1.us-east-2.aws.neon.tech/orders?sslmode=require"


def kinds_and_names(objects: list[dict]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


@pytest.mark.parametrize("stripe", [None, {"mode": "mock"}, {"secret_name": "stripe-test"}])
def test_flow_is_valid_builds_and_is_secret_free(harness, stripe):
    kardinal = {k: v for k, v in neon_args(NEON_API_KEY=NEON_LITERAL_KEY).items() if k != "api_key_secret"}
    neon_stripe_shop(harness, neon=kardinal, stripe=stripe)
    result = harness.render("pr-7", {"shop": "example.com/shop:2"})
    for obj in result.main.objects:
        validate_strict(obj)
    paths = api.write(result, harness.tmp / "out")
    assert kinds_and_names(kubectl_kustomize(paths[0])) == kinds_and_names(result.main.objects)
    kinds = {o["kind"] for o in result.main.objects}
    assert {"Job", "Role", "RoleBinding", "ServiceAccount"} <= kinds
    assert ("ExternalSecret" in kinds) is (stripe is None)
    for path in sorted((harness.tmp / "out").rglob("*")):
        if path.is_file():
            assert NEON_LITERAL_KEY not in path.read_text(), path




# --------------------------------------------------------------------------------------------------
# The Jobs' scripts against a fake Neon API


class FakeNeon:
    """Neon API v2 as the scripts use it: list, create and delete branches, the connection URI."""

    def __init__(self, branches: list[dict] | None = None):
        self.branches = list(branches or [])
        self.calls: list[tuple[str, str, dict, dict | None]] = []  # method, path, query, body
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def _answer(self, status: int, body: dict | None = None) -> None:
                data = json.dumps(body or {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.calls.append((method, url.path, parse_qs(url.query), body))
                if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                    return self._answer(401, {"message": "bad key"})
                base = "/api/v2/projects/proud-lake-123456"
                if method == "GET" and url.path == f"{base}/branches":
                    return self._answer(200, {"branches": fake.branches})
                if method == "POST" and url.path == f"{base}/branches":
                    branch = {"id": f"br-new-{len(fake.branches) + 1}", **body["branch"]}
                    fake.branches.append(branch)
                    return self._answer(201, {"branch": branch, "endpoints": [{"host": "ep-fake-1"}]})
                if method == "GET" and url.path == f"{base}/connection_uri":
                    return self._answer(200, {"uri": URI})
                if method == "DELETE" and url.path.startswith(f"{base}/branches/"):
                    fake.branches = [b for b in fake.branches if b["id"] != url.path.rsplit("/", 1)[1]]
                    return self._answer(200, {})
                return self._answer(404, {"message": "no such endpoint"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v2"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def neon():
    fake = FakeNeon()
    yield fake
    fake.close()


def _jobs() -> dict[str, dict]:
    main = import_builtin("neon-branch")
    out = main.create_flow([], [{"containers": [{"name": "a"}]}], "shop-db-pr-7", **neon_args(
        database_name="orders", role_name="orders_app", pooled="true", ttl_hours="48"))
    return {r["metadata"]["annotations"]["argocd.argoproj.io/hook"]: r for r in out["resources"] if r["kind"] == "Job"}


def run_job(job: dict, fake: FakeNeon, tmp: Path, **extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Run the Job's container command on this machine: its env (references resolved), HOME in `tmp`, the Neon
    URL pointed at the fake, and `kubectl apply` writing what it would apply to `tmp/applied.yaml`."""
    for tool in ("curl", "jq", "kubectl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "KUBECONFIG": str(tmp / "none")}
    for e in container["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
    env.update({"NEON_API_KEY": API_KEY, "POD_NAMESPACE": "shop", "HOME": str(tmp), "NEON_API": fake.url, **extra})
    (tmp / "bin").mkdir(exist_ok=True)
    stub = tmp / "bin" / "kubectl"
    stub.write_text(f'#!/bin/sh\nif [ "$1" = apply ]; then cat > "{tmp}/applied.yaml"; exit 0; fi\n'
                    f'exec {shutil.which("kubectl")} "$@"\n')
    stub.chmod(0o755)
    done = subprocess.run(container["command"], env=env, capture_output=True, text=True, timeout=60)
    return done, tmp / "applied.yaml"


def test_create_job_finds_or_creates_the_branch_and_writes_the_secret(neon, tmp_path):
    job = _jobs()["PreSync"]
    before = time.time()
    done, applied = run_job(job, neon, tmp_path)
    assert done.returncode == 0, done.stderr
    posts = [c for c in neon.calls if c[0] == "POST"]
    assert len(posts) == 1
    branch = posts[0][3]["branch"]
    assert posts[0][3]["endpoints"] == [{"type": "read_write"}]
    assert branch["name"] == "devlane-shop-shop-db-pr-7" and branch["parent_id"] == "br-wispy-dew-591433"
    expires = datetime.fromisoformat(branch["expires_at"].replace("Z", "+00:00")).timestamp()
    assert before + 48 * 3600 - 5 <= expires <= time.time() + 48 * 3600 + 5  # the Job's clock, not the render's
    query = next(c[2] for c in neon.calls if c[1].endswith("/connection_uri"))
    assert query == {"branch_id": ["br-new-1"], "database_name": ["orders"], "role_name": ["orders_app"],
                     "pooled": ["true"]}
    secret = yamlc.safe_load(applied.read_text())
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == "neon-shop-db-pr-7"
    assert base64.b64decode(secret["data"]["DATABASE_URL"]).decode() == URI
    assert secret["metadata"]["labels"]["devlane.dev/flow-uuid"] == "shop-db-pr-7"
    assert API_KEY not in done.stdout + done.stderr and URI not in done.stdout + done.stderr
    assert not (tmp_path / "auth").read_text().count("\n") > 1
    neon.calls.clear()
    again, _ = run_job(job, neon, tmp_path)  # a re-sync: found by name, not created twice
    assert again.returncode == 0, again.stderr
    assert [c[0] for c in neon.calls] == ["GET", "GET"] and len(neon.branches) == 1


def test_create_job_fails_when_neon_refuses_the_key(neon, tmp_path):
    done, applied = run_job(_jobs()["PreSync"], neon, tmp_path, NEON_API_KEY="napi_wrong")
    assert done.returncode != 0 and not applied.exists()
    assert "napi_wrong" not in done.stdout + done.stderr


def test_delete_job_deletes_the_branch_only_after_the_flow_is_gone(neon, tmp_path):
    neon.branches = [{"id": "br-other", "name": "devlane-shop-other-pr-7"},
                     {"id": "br-mine", "name": "devlane-shop-shop-db-pr-7"}]
    job = _jobs()["PostDelete"]
    state = tmp_path / "state"
    state.mkdir()
    (state / "config_map.json").write_text("{}")
    kept, _ = run_job(job, neon, tmp_path, FLOW_STATE_DIR=str(state))  # Flux applied it: the flow is still there
    assert kept.returncode == 0 and "not a teardown" in kept.stdout
    assert not [c for c in neon.calls if c[0] == "DELETE"]
    done, _ = run_job(job, neon, tmp_path, FLOW_STATE_DIR=str(tmp_path / "gone"))  # Argo CD, after deletion
    assert done.returncode == 0, done.stderr
    assert [c[1] for c in neon.calls if c[0] == "DELETE"] == ["/api/v2/projects/proud-lake-123456/branches/br-mine"]
    assert [b["id"] for b in neon.branches] == ["br-other"]
    again, _ = run_job(job, neon, tmp_path, FLOW_STATE_DIR=str(tmp_path / "gone"))
    assert again.returncode == 0 and "nothing to delete" in again.stdout
