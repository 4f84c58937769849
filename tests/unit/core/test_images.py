"""Image references as registries parse them (`renderer/core/images.py`): what the OCI distribution grammar
accepts passes, with its limits (name 255 characters, tag 128) exact, and everything else is named; the render,
flow-file and CMP front doors refuse a bad reference before anything is read."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from renderer.core.images import MAX_NAME, MAX_TAG, image_problem, repository

COMPONENT = st.from_regex(r"[a-z0-9]{1,8}(?:[._-][a-z0-9]{1,8}){0,2}", fullmatch=True)
DOMAIN = st.from_regex(r"[a-z0-9]{1,10}(?:\.[a-z]{2,5}){0,2}(?::[0-9]{2,5})?", fullmatch=True)
TAG = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True)
DIGEST = st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True)


@given(domain=st.none() | DOMAIN, path=st.lists(COMPONENT, min_size=1, max_size=3), tag=st.none() | TAG,
       digest=st.none() | DIGEST)
def test_every_reference_of_the_grammar_is_accepted(domain, path, tag, digest):
    name = "/".join(path)
    if domain and ("." in domain or ":" in domain):  # distribution reads a first component as a host only so
        name = f"{domain}/{name}"
    ref = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
    assert image_problem(ref) is None, ref


@pytest.mark.parametrize("ref", ["api:2", "busybox", "ghcr.io/acme/bookshop-orders:pr-7", "localhost:5000/a/b",
                                 "[::1]:5000/a:1", "a__b/c--d:v1.2_3", "x@sha256:" + "a" * 64,
                                 "r/" + "a" * (MAX_NAME - 2) + ":" + "t" * MAX_TAG])
def test_real_references_and_the_limits_themselves_pass(ref):
    assert image_problem(ref) is None


@pytest.mark.parametrize(("ref", "said"), [
    ("r/" + "a" * (MAX_NAME - 1), "repository name of 256 characters"),
    ("api:" + "t" * (MAX_TAG + 1), "tag of 129 characters"),
    ("Acme/API:1", "invalid repository name"),
    ("api:-x", "invalid tag"),
    ("api:", "no tag"),
    (":1", "no repository name"),
    ("api@sha256:xyz", "malformed digest"),
    ("a" * 100_000, "100,000 characters long"),
    ("api:1 --privileged", "invalid tag"),
])  # fmt: skip
def test_bad_references_say_what_is_wrong(ref, said):
    assert said in (image_problem(ref) or "")


def test_render_flags_and_flow_files_refuse_a_bad_image(harness):
    harness.app("api")
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=" + "a" * 300, "--stdout")
    assert out.returncode == 2 and out.stdout == "" and "--service api=...: the image" in out.stderr
    flow = harness.write("flow.yaml", yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Flow",
                                                      "metadata": {"name": "pr-1"},
                                                      "spec": {"services": [{"name": "api", "image": "API:1"}]}}))
    out = harness.cli("render", "--flow-file", str(flow), "--stdout")
    assert out.returncode == 1 and out.stdout == ""
    assert "flow.yaml" in out.stderr and "the image of service 'api', 'API:1', has an invalid repository" in out.stderr


@pytest.mark.parametrize(("ref", "repo"), [
    ("postgres", "docker.io/library/postgres"),
    ("postgres:17", "docker.io/library/postgres"),
    ("docker.io/postgres:16", "docker.io/library/postgres"),
    ("index.docker.io/library/postgres@sha256:" + "a" * 64, "docker.io/library/postgres"),
    ("registry-1.docker.io/bitnami/redis:7", "docker.io/bitnami/redis"),
    ("prom/statsd-exporter:v0.27.1", "docker.io/prom/statsd-exporter"),
    ("ghcr.io/acme/bookshop-orders:pr-7", "ghcr.io/acme/bookshop-orders"),
    ("localhost:5000/x:1", "localhost:5000/x"),
    ("localhost/x", "localhost/x"),
    ("registry:5000/a/b:c", "registry:5000/a/b"),
    ("quay.io/x@sha256:" + "b" * 64, "quay.io/x"),
])  # fmt: skip
def test_the_repository_of_an_image_is_the_one_a_runtime_pulls(ref, repo):
    """`--services auto` tells what CI builds by repository: two spellings of Docker Hub's are one repository, and a
    tag or digest is no part of it."""
    assert repository(ref) == repo
