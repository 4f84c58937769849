"""What devlane writes, Go's YAML readers read as devlane meant it (issue 40, point 8), end to end.

Every rendered file, `kubectl kustomize` of every flow directory (the round trip Argo CD and Flux make), the
`--stdout` stream, `devlane cmp generate`'s stream and `devlane init`'s new files are read back by go-yaml v2 (as
sigs.k8s.io/yaml, hence kubectl, reads files), go-yaml v3 (kyaml, Flux), sigs.k8s.io/yaml's YAMLToJSON and PyYAML
(tests/support/yamloracle), and must equal the objects devlane rendered, every string a string. The corpora: a
flow whose env, labels, annotations and ConfigMap data hold the values of the issue (strings Go read as numbers,
booleans and dates), the examples, Kardinal's demos and a few real-world apps.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from support import yamlc, yamloracle
from support.corpora import EXAMPLES, copied
from support.demos import DEMOS, demo_options
from support.realworld import REALWORLD, app_top, chart_input, helm_bin, target

from renderer import api
from renderer.core.yamlscalars import SafeDumper
from renderer.render.output.emit import RenderedFlow
from renderer.render.plan.flow_spec import build_flow

# The issue's values, and more of each kind: numbers, booleans, nulls and timestamps to some reader, when plain.
VALUES = {"MODE": "0o17", "SCALE": "1e3", "RATIO": "-.5", "SHA": "5e12345", "FLAG": "y", "NO": "n", "YES": "Y",
          "DAY": "2024-1-2", "ZIP": "09", "COUNT": "1__0", "HEX": "0x1F", "BIN": "0b101", "OCT": "017", "INF": ".inf",
          "NAN": ".NaN", "NONE": "~", "ON": "on", "STAMP": "2024-01-02T03:04:05Z", "BIG": "18446744073709551616",
          "SIXTY": "1:20", "EMPTY": "", "MERGE": "<<", "EQ": "="}
# As label values must be: alphanumeric at both ends.
LABELS = {"y": "n", "rev": "1e3", "mode": "0o17", "zip": "09", "count": "1__0", "day": "2024-1-2", "on": "Y"}
IMAGE = "ghcr.io/acme/api:pr-1"
# A built-in plugin (in-process) whose ConfigMap carries the values as data, its state too.
SETTINGS_PLUGIN = textwrap.dedent(f"""
    VALUES = {VALUES!r}

    def create_flow(service_specs, pod_specs, flow_uuid):
        settings = {{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {{"name": f"settings-{{flow_uuid}}", "labels": {LABELS!r},
                                 "annotations": VALUES}}, "data": VALUES}}
        return {{"pod_specs": pod_specs, "config_map": VALUES, "resources": [settings]}}
""")


@pytest.fixture(autouse=True)
def _oracle():
    yamloracle.require()


def identity(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name")


def misread(text: str, objects: list[dict], readers: tuple[str, ...] = (*yamloracle.READERS, "pyyaml")) -> list[str]:
    """Where a reader of `text` (a stream, in any document order) does not read exactly `objects`."""
    meant = {identity(o): o for o in objects}
    out = []
    for reader, docs in yamloracle.read([text])[0].items():
        if reader not in readers:
            continue
        if isinstance(docs, yamloracle.Failed):
            out.append(f"{reader}: {docs.error}")
            continue
        got = {identity(d): d for d in docs}
        if got.keys() != meant.keys():
            out.append(f"{reader}: objects {sorted(map(str, got))}, meant {sorted(map(str, meant))}")
            continue
        out += [f"{reader} {'/'.join(str(p) for p in key if p)}: {d}" for key in meant
                for d in yamloracle.differences(meant[key], got[key])]
    return out


def kustomized(directory: Path) -> str:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def read_back(flows: list[RenderedFlow], out: Path) -> None:
    """Each flow's files as written (by every reader), and `kubectl kustomize` of its directory (by Go's readers),
    read as devlane rendered them."""
    for flow in flows:
        directory = out / "flows" / flow.flow_id
        files = sorted(flow.files)
        assert len(files) == len(flow.objects)
        for name, obj in zip(files, flow.objects, strict=True):
            assert misread((directory / name).read_text(), [obj]) == [], f"{flow.flow_id}/{name}"
        # kustomize writes its own YAML (go-yaml v3's quoting: `=` plain, which PyYAML cannot read): Go reads it
        assert misread(kustomized(directory), flow.objects, yamloracle.READERS) == [], f"kustomized {flow.flow_id}"


def settings_repo(harness) -> None:
    """Service `api` whose Deployment has the values as env, labels and annotations, and plugin `settings`."""
    env = [{"name": k, "value": v} for k, v in VALUES.items()]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "api", "labels": {"app": "api", **LABELS}, "annotations": VALUES},
                  "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {
                      "metadata": {"labels": {"app": "api", **LABELS}, "annotations": VALUES},
                      "spec": {"containers": [{"name": "main", "image": "api:1", "env": env}]}}}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "api", "annotations": {"kardinal.dev.service/plugins": "settings"}},
               "spec": {"selector": {"app": "api"}, "ports": [{"name": "http", "port": 80}]}}
    harness.write("app.yaml", yaml.safe_dump_all([deployment, service], sort_keys=False) + "---\n")
    harness.plugin_definition({"name": "settings", "type": "external", "servicename": "settings"})
    harness.builtin("settings", SETTINGS_PLUGIN)


def test_the_issues_values_stay_strings_through_kubectl_kustomize(harness):
    settings_repo(harness)
    out = harness.tmp / "out"
    result, _ = api.render_and_write(harness.options(), harness.flow("pr-1", {"api": IMAGE}), out)
    objects = {o["kind"]: o for o in result.main.objects}
    assert objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"][0] == {"name": "MODE",
                                                                                             "value": "0o17"}
    config = next(o for o in result.main.objects if o["metadata"]["name"].startswith("settings-"))
    assert config["data"] == VALUES and config["metadata"]["labels"] == {**LABELS, **config["metadata"]["labels"]}
    read_back(result.flows, out)
    # what kubectl applies: the kustomized flow, read as sigs.k8s.io/yaml reads it, holds the strings
    [got] = yamloracle.read([kustomized(out / "flows" / "pr-1")])
    deployment = next(d for d in got["sigs"] if d["kind"] == "Deployment")
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {e["name"]: e["value"] for e in env} == VALUES
    assert {k: v for k, v in deployment["metadata"]["labels"].items() if k in LABELS} == LABELS
    settings = next(d for d in got["v3"] if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("settings"))
    assert settings["data"] == VALUES and settings["metadata"]["annotations"] == VALUES


def test_stdout_and_cmp_generate_streams_read_as_rendered(harness):
    settings_repo(harness)
    result = harness.render("pr-1", {"api": IMAGE})
    stdout = harness.cli("render", "--flow", "pr-1", "--service", f"api={IMAGE}", "--stdout")
    assert stdout.returncode == 0, stdout.stderr
    assert stdout.stdout == result.stream()
    objects = [o for f in result.flows for o in f.objects]
    assert misread(stdout.stdout, objects) == []
    argocd = {"PATH": os.environ["PATH"], "HOME": str(harness.root), "ARGOCD_APP_NAME": "api-pr-1",
              "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_APP_REVISION": "a" * 40, "ARGOCD_APP_SOURCE_PATH": ".",
              "ARGOCD_ENV_FLOW_ID": "pr-1", "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "services",
                                                                                   "array": [f"api={IMAGE}"]}])}
    generated = harness.cli("cmp", "generate", cwd=harness.root, env=argocd)
    assert generated.returncode == 0, generated.stderr
    assert misread(generated.stdout, objects) == []
    assert "value: '0o17'" in generated.stdout and "'y': 'n'" in generated.stdout


def test_inits_new_entry_ingress_reads_as_written(harness):
    """`devlane init --write` writes a new Ingress (`authoring.init.entry_ingress`): its namespace `09` is a string
    to Go too."""
    for name, port, kind in (("web", 80, "LoadBalancer"), ("orders", 8080, "ClusterIP")):
        env = [{"name": "ORDERS_URL", "value": "http://orders:8080/api"}] if name == "web" else []
        harness.append("app.yaml", yaml.dump_all([
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "09"},
             "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                 "metadata": {"labels": {"app": name}},
                 "spec": {"containers": [{"name": name, "image": f"acme/{name}:1", "env": env}]}}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "09"},
             "spec": {"type": kind, "selector": {"app": name}, "ports": [{"name": "http", "port": port}]}}],
            Dumper=SafeDumper, sort_keys=False, explicit_start=True))  # `'09'`: the user's file reads right in Go
    out = harness.cli("init", "--write")
    assert out.returncode == 0, out.stderr
    text = (harness.root / "web-entry-ingress.yaml").read_text()
    assert "  namespace: '09'\n" in text
    ingress = yamlc.safe_load(text)
    assert ingress["metadata"]["namespace"] == "09"
    assert misread(text, [ingress]) == []
    edited = (harness.root / "app.yaml").read_text()  # and the annotations init added to the user's file
    assert "kardinal.dev.service/dependencies: orders:http" in edited
    assert misread(edited, [d for d in yamlc.safe_load_all(edited) if d]) == []


# -----------------------------------------------------------------------------------------------------------------
# The corpora the other tests render


def written(options: api.Options, flow: api.FlowInput, out: Path) -> list[RenderedFlow]:
    with api.rendering(options, out) as run:
        result = run.render(flow)
        run.write(result)
    return result.flows


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_examples_read_back_as_rendered(name, tmp_path):
    src, inside, flow = EXAMPLES[name]
    top = copied(src, tmp_path)
    repo = top / inside
    read_back(written(api.Options(repo=repo, top=top), flow(repo), tmp_path / "out"), tmp_path / "out")


@pytest.mark.parametrize("demo", sorted(DEMOS))
def test_kardinal_demos_read_back_as_rendered(demo, demo_repo, tmp_path):
    name, images = DEMOS[demo]
    repo = demo_repo(name)
    read_back(written(demo_options(repo), build_flow("pr-9", images, []), tmp_path / "out"), tmp_path / "out")


# A few real-world apps: kustomize overlays and bases of three apps, and two Helm charts.
REALWORLD_INPUTS = [
    ("bank-of-anthos/src/frontend/k8s/overlays/development", "kustomize"),
    ("bank-of-anthos/src/ledger/ledgerwriter/k8s/overlays/production", "kustomize"),
    ("eks-workshop-retail-store/manifests/base-application", "kustomize"),
    ("eks-workshop-retail-store/manifests/modules/introduction/basics/configmaps", "kustomize"),
    ("gke-whereami/quickstarts/whereami/k8s-frontend-overlay-example", "kustomize"),
    ("retail-store-sample-app/src/catalog/chart", "helm"),
    ("eshoponcontainers/deploy/k8s/helm/webmvc", "helm"),
]


@pytest.mark.parametrize("rel,kind", REALWORLD_INPUTS)
def test_realworld_apps_read_back_as_rendered(rel, kind, tmp_path):
    path = REALWORLD / rel
    if not path.is_dir():
        pytest.skip(f"real-world input not available ({path})")
    if kind == "helm":
        helm_bin()
        path = chart_input(path, tmp_path)[0]
    options = api.Options(repo=path, top=app_top(path))
    service = target([d.obj for d in api.read(dataclasses.replace(options, cache=False)).loaded.documents])
    assert service is not None
    read_back(written(options, build_flow("pr-1", {service: "ghcr.io/example/dev:pr-1"}, []), tmp_path / "out"),
              tmp_path / "out")
