"""The model of a repository and `devlane lint`: annotations, matching, every problem at once."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import run_cli

from renderer import api
from renderer.flow import build_flow
from renderer.load import Document
from renderer.model import build_model


def docs(text: str, file: str = "app.yaml") -> list[Document]:
    import yaml

    return [Document(d, file, i) for i, d in enumerate(yaml.safe_load_all(textwrap.dedent(text))) if d]


def deployment(name: str, app: str, kind: str = "Deployment", containers: str = "[{name: main, image: x}]") -> str:
    return f"""
    apiVersion: apps/v1
    kind: {kind}
    metadata: {{name: {name}}}
    spec:
      selector: {{matchLabels: {{app: {app}}}}}
      template:
        metadata: {{labels: {{app: {app}}}}}
        spec: {{containers: {containers}}}
    ---"""


def service(name: str, app: str | None, annotations: dict | None = None, port: str = "http", http: bool = True) -> str:
    ann = json.dumps(annotations or {})
    sel = f"selector: {{app: {app}}}" if app else ""
    proto = "appProtocol: HTTP" if http else ""
    return f"""
    apiVersion: v1
    kind: Service
    metadata: {{name: {name}, annotations: {ann}}}
    spec:
      {sel}
      ports: [{{name: {port}, port: 80, {proto}}}]
    ---"""


BROKEN = (
    deployment("api", "api")
    + service("api", "api", {"kardinal.dev.service/dependencies": "db:tcp,cache:http,nohost",
                             "kardinal.dev.service/plugins": "ghost", "kardinal.dev.service/statefull": "true"})
    + deployment("db", "db", "StatefulSet")
    + service("db", "db", {"kardinal.dev.service/dependencies": "api:http"}, port="tcp", http=False)
    + """
    apiVersion: v1
    kind: Service
    metadata:
      name: defs
      annotations:
        kardinal.dev.service/plugin-definition: |
          - name: ./plugins/a
            type: stateful
            servicename: seed
          - name: ./plugins/b
            type: stateful
            servicename: seed
            behaviour: enforce
    """
)  # fmt: skip


def test_lint_reports_every_problem_at_once(tmp_path):
    (tmp_path / "app.yaml").write_text(textwrap.dedent(BROKEN))
    out = run_cli("lint", str(tmp_path), "-o", "json")
    assert out.returncode == 1
    problems = json.loads(out.stdout)
    codes = sorted(p["code"] for p in problems if p["severity"] == "error")
    assert codes == sorted(
        ["unknown-key", "bad-dependency", "bad-dependency", "undefined-plugin", "duplicate-servicename",
         "unknown-key", "cycle"]
    )  # fmt: skip
    messages = "\n".join(p["message"] for p in problems)
    assert "unknown annotation kardinal.dev.service/statefull" in messages
    assert "dependency cache:http names no Service 'cache'" in messages
    assert "bad dependency 'nohost'" in messages
    assert "plugin 'ghost' is not defined" in messages
    assert "duplicate plugin servicename 'seed'" in messages
    assert "unknown key 'behaviour'" in messages
    assert "dependency cycle: api -> db -> api" in messages or "dependency cycle: db -> api -> db" in messages
    assert all(p["where"]["file"] == "app.yaml" for p in problems)
    text = run_cli("lint", str(tmp_path))
    assert "7 error(s)" in text.stdout and "app.yaml (document 2), Service/api" in text.stdout


def test_render_fails_on_lint_errors_naming_them(tmp_path):
    (tmp_path / "app.yaml").write_text(textwrap.dedent(BROKEN))
    out = run_cli("render", str(tmp_path), "--flow", "pr-1", "--service", "api=x:1")
    assert out.returncode == 1
    assert out.stderr.count("devlane: error:") == 7
    assert not (tmp_path / "rendered").exists()


def test_clean_repo_lints_clean(tmp_path):
    (tmp_path / "app.yaml").write_text(textwrap.dedent(deployment("api", "api") + service("api", "api")))
    out = run_cli("lint", str(tmp_path))
    assert out.returncode == 0 and "0 error(s), 0 warning(s)" in out.stdout


def test_port_name_must_exist_on_target():
    model = build_model(docs(
        deployment("a", "a") + service("a", "a", {"kardinal.dev.service/dependencies": "b:grpc"})
        + deployment("b", "b") + service("b", "b")
    ))  # fmt: skip
    [problem] = model.diagnostics.errors
    assert "Service b has no port named 'grpc'" in problem.message
    assert problem.hint == "port names of b: http"


def test_selector_matches_pod_template_labels_not_workload_labels():
    text = """
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web-v1, labels: {app: something-else}}
    spec:
      selector: {matchLabels: {app: web, version: v1}}
      template:
        metadata: {labels: {app: web, version: v1}}
        spec: {containers: [{name: main, image: x}]}
    ---""" + service("web", "web")
    model = build_model(docs(text))
    assert model.services["web"].workload.doc.name == "web-v1"


def test_ambiguous_selector_is_an_error_unless_a_workload_is_named():
    two = deployment("web-v1", "web") + deployment("web-v2", "web")
    model = build_model(docs(two + service("web", "web")))
    assert [p.code for p in model.diagnostics.errors] == ["ambiguous-workload"]
    assert "devlane.dev/workload" in model.diagnostics.errors[0].hint
    model = build_model(docs(two + service("web", "web", {"devlane.dev/workload": "web-v2"})))
    assert not model.diagnostics.errors and model.services["web"].workload.doc.name == "web-v2"


def test_stateful_defaults_and_overrides():
    model = build_model(docs(
        deployment("db", "db", "StatefulSet") + service("db", "db", http=False)
        + deployment("cache", "cache", "StatefulSet")
        + service("cache", "cache", {"kardinal.dev.service/stateful": "false"})
        + deployment("q", "q") + service("q", "q", {"kardinal.dev.service/stateful": "true"})
        + deployment("x", "x") + service("x", "x", {"kardinal.dev.service/stateful": "yes"})
    ))  # fmt: skip
    assert [model.services[n].stateful for n in ("db", "cache", "q")] == [True, False, True]
    assert [p.message for p in model.diagnostics.errors] == [
        'annotation kardinal.dev.service/stateful must be "true" or "false", got \'yes\''
    ]


def test_target_container_by_annotation_else_first():
    two = "[{name: sidecar, image: s}, {name: app, image: a}]"
    model = build_model(docs(
        deployment("a", "a", containers=two) + service("a", "a", {"devlane.dev/container": "app"})
        + deployment("b", "b", containers=two) + service("b", "b")
        + deployment("c", "c", containers=two) + service("c", "c", {"devlane.dev/container": "nope"})
    ))  # fmt: skip
    assert model.services["a"].container == "app"
    assert model.services["b"].container == "sidecar"
    assert "devlane.dev/container: nope is not a container" in model.diagnostics.errors[0].message


def test_image_override_goes_to_the_annotated_container_and_plugins_see_it_first(tmp_path):
    plugin = tmp_path / "repo" / "plugins" / "mark"
    plugin.mkdir(parents=True)
    (plugin / "main.py").write_text(textwrap.dedent("""
        def create_flow(service_specs, pod_specs, flow_uuid):
            for spec in pod_specs:
                spec["containers"][0].setdefault("env", []).append({"name": "MARKED", "value": flow_uuid})
            return {"pod_specs": pod_specs, "config_map": None}
    """))
    two = "[{name: sidecar, image: s}, {name: app, image: a}]"
    (tmp_path / "repo" / "app.yaml").write_text(textwrap.dedent(
        deployment("a", "a", containers=two)
        + service("a", "a", {"devlane.dev/container": "app", "kardinal.dev.service/plugins": "mark"})
        + """
    apiVersion: v1
    kind: Service
    metadata:
      name: mark
      annotations:
        kardinal.dev.service/plugin-definition: |
          - {name: ./plugins/mark, type: external, servicename: mark}
    """))  # fmt: skip
    result = api.render(api.Options(repo=tmp_path / "repo"), build_flow("pr-1", {"a": "new:1"}, []))
    dep = next(o for o in result.main.objects if o["kind"] == "Deployment")
    sidecar, app = dep["spec"]["template"]["spec"]["containers"]
    assert (sidecar["name"], sidecar["image"], "env" in sidecar) == ("sidecar", "s", False)
    assert (app["name"], app["image"], app["env"]) == ("app", "new:1", [{"name": "MARKED", "value": "mark-pr-1"}])
    state = next(o for o in result.main.objects if o["kind"] == "ConfigMap")
    assert state["data"]["config_map.json"] == "null"  # any JSON value round-trips


@pytest.mark.parametrize("value", ["- {name: x}", "[1, 2", "just a string"])
def test_bad_plugin_definitions_are_reported(value):
    text = f"""
    apiVersion: v1
    kind: Service
    metadata:
      name: defs
      annotations:
        kardinal.dev.service/plugin-definition: {json.dumps(value)}
    """
    model = build_model(docs(text))
    assert model.diagnostics.errors and all(p.code == "bad-plugin-definition" for p in model.diagnostics.errors)


def test_plugin_args_keep_their_literal_text_as_kardinal_does():
    text = """
    apiVersion: v1
    kind: Service
    metadata:
      name: defs
      annotations:
        kardinal.dev.service/plugin-definition: |
          - name: x
            type: stateful
            serviceName: seed
            args: {count: 007, flag: yes, ratio: 1e3, empty: }
    """
    model = build_model(docs(text))
    assert model.plugin_defs["seed"].args == {"count": "007", "flag": "yes", "ratio": "1e3", "empty": ""}


def test_unknown_devlane_annotation_and_wrong_kind_are_reported():
    text = deployment("a", "a").replace("metadata: {name: a}", "metadata: {name: a, annotations: "
                                        "{kardinal.dev.service/dependencies: 'b:http'}}")  # fmt: skip
    model = build_model(docs(text + service("a", "a", {"devlane.dev/contianer": "x"})))
    assert [p.code for p in model.diagnostics.errors] == ["unknown-key"]
    assert "only read on Services" in model.diagnostics.warnings[0].message


def test_lint_reports_broken_config_and_every_broken_file(tmp_path):
    (tmp_path / ".devlane.yaml").write_text("routing: mesh\ndomian: x.example.com\n")
    (tmp_path / "a.yaml").write_text("kind: [\n")
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: b\n")
    broken_annotation = service("c", "c", {"kardinal.dev.service/x": "1"})
    (tmp_path / "c.yaml").write_text(textwrap.dedent(deployment("c", "c") + broken_annotation))
    out = run_cli("lint", str(tmp_path), "-o", "json")
    assert out.returncode == 1
    found = sorted((p["where"].get("file"), p["code"]) for p in json.loads(out.stdout))
    assert found == [(".devlane.yaml", "schema"), (".devlane.yaml", "schema"), ("a.yaml", "yaml"),
                     ("b.yaml", "yaml"), ("c.yaml", "unknown-key")]  # fmt: skip
    render = run_cli("render", str(tmp_path), "--flow", "pr-1", "--service", "c=x:1")
    assert render.returncode == 1 and render.stderr.count("devlane: error:") == 2  # config first, then stop


def test_dependency_on_an_external_service_needs_its_plugin():
    ext = service("stripe", None, {"kardinal.dev.service/external": "true"})
    caller = service("pay", "pay", {"kardinal.dev.service/dependencies": "stripe:http"})
    model = build_model(docs(deployment("pay", "pay") + caller + ext))
    assert [p.code for p in model.diagnostics.errors] == ["external-without-plugin"]
    defined = """
    apiVersion: v1
    kind: Service
    metadata:
      name: stripe-def
      annotations:
        kardinal.dev.service/plugin-definition: "[{name: dummy, type: external, servicename: stripe}]"
    ---"""
    caller = service("pay", "pay", {"kardinal.dev.service/dependencies": "stripe:http",
                                    "kardinal.dev.service/plugins": "stripe"})  # fmt: skip
    model = build_model(docs(deployment("pay", "pay") + caller + ext + defined))
    assert not model.diagnostics.errors
    assert model.externals["stripe"] == ["pay"]


def test_shared_copies_never_point_at_one_flows_dev_services(tmp_path):
    def with_env(name: str, env: str) -> str:
        return deployment(name, name).replace("image: x}", f"image: x, env: [{env}]}}")

    text = (
        with_env("api", "{name: DB_HOST, value: db}")
        + service("api", "api", {"kardinal.dev.service/dependencies": "db:tcp"})
        + with_env("db", "{name: CALLBACK_URL, value: 'http://api:80/hook'}")
        + service("db", "db", {"kardinal.dev.service/stateful": "true", "kardinal.dev.service/shared": "true"},
                  port="tcp", http=False)
    )  # fmt: skip
    (tmp_path / "app.yaml").write_text(textwrap.dedent(text))
    result = api.render(api.Options(repo=tmp_path), build_flow("pr-1", {"api": "api:2"}, []))
    deployments = {o["metadata"]["name"]: o for f in result.flows for o in f.objects if o["kind"] == "Deployment"}

    def env(name: str) -> str:
        return deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"]

    assert [f.flow_id for f in result.flows] == ["pr-1", "shared"]
    assert env("api-pr-1") == "db-shared"
    assert env("db-shared") == "http://api:80/hook"  # the same for every flow
