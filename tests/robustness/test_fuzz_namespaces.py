"""Fuzz on real apps (../shared/realworld, used in place): their objects with namespaces removed, kept, or mixed
across two namespaces, a `.devlane.yaml` namespace or none, in both isolation modes. Whatever the render says, it
says each cause once: no object is named by two errors (a root cause, then the checks that would only repeat it),
no error asks to report a devlane bug (devlane's own invariants never fire on user input), never an internal error.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import yamlc
from support.realworld import REALWORLD, target

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox_free]  # in-process renders of generated repositories

APPS = ["bank-of-anthos/kubernetes-manifests", "gke-guestbook/quickstarts/guestbook", "k8s-guestbook/web/guestbook",
        "booksapp/k8s", "jhipster-eureka/kubernetes", "skaffold-microservices/examples/microservices", "ftgo"]
ERROR = re.compile(r"^devlane: error: (?P<where>[^\n]*?): (?P<what>[^\n]*)$", re.M)
EXAMPLES = int(os.environ.get("DEVLANE_FUZZ_EXAMPLES", "12"))


def app_files(app: str) -> dict[str, list[dict]]:
    root = REALWORLD / app
    if not root.is_dir():
        pytest.skip(f"real-world app {app} not available ({root})")
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()):
        try:
            docs = [d for d in yamlc.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind")]
        except yaml.YAMLError:
            continue
        if docs and all(isinstance(d.get("metadata"), dict) for d in docs):
            files[path.relative_to(root).as_posix()] = docs
    return files


def placed(doc: dict, choice: str) -> dict:
    meta = dict(doc["metadata"])
    if choice == "drop":
        meta.pop("namespace", None)
    elif choice != "keep":
        meta["namespace"] = choice
    return {**doc, "metadata": meta}


@pytest.mark.parametrize("app", APPS)
@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=30), derandomize="DEVLANE_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), isolation=st.sampled_from(["suffix", "namespace"]),
       config_ns=st.sampled_from([None, "shop"]))
def test_namespaces_removed_or_mixed_give_one_error_per_cause(harness, app, data, isolation, config_ns):
    files = app_files(app)
    choices = st.sampled_from(["keep", "drop", "shop", "other"])
    everywhere = data.draw(st.sampled_from(["keep", "drop", "shop", "mixed"]), label="namespaces")
    objects = []
    for rel, docs in files.items():
        docs = [placed(d, data.draw(choices) if everywhere == "mixed" else everywhere) for d in docs]
        objects += docs
        harness.write(rel, yaml.safe_dump_all(docs, sort_keys=False))
    if config_ns:
        harness.config({"namespace": config_ns})
    else:
        (harness.root / ".devlane.yaml").unlink(missing_ok=True)  # the harness lives on across examples
    service = target(objects)
    if service is None:
        return
    out = harness.cli("render", "--flow", "pr-1", "--service", f"{service}=ghcr.io/example/dev:pr-1", "--stdout",
                      "--isolation", isolation, "--allow-weak-sandbox")  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    assert "internal error" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "devlane bug" not in out.stderr, out.stderr
    if out.returncode == 1:
        errors = [m["where"] for m in ERROR.finditer(out.stderr)]
        assert errors, out.stderr
        named = [w for w in errors if "/" in w]  # errors that name an object (file, document, Kind/name)
        assert len(named) == len(set(named)), f"one object, several errors:\n{out.stderr}"


def test_the_apps_are_there():
    missing = [a for a in APPS if not (REALWORLD / a).is_dir()]
    if not REALWORLD.is_dir():
        pytest.skip(f"real-world inputs not available ({REALWORLD})")
    assert missing == [] and all(app_files(a) for a in APPS)
