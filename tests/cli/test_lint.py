"""`devlane lint` (text and `-o json`) in-process: every problem of a repository at once, each naming its file,
document and object; and `devlane render` refusing a repository with lint errors, naming each of them."""

from __future__ import annotations

import json

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: main, image: x}]}
---
apiVersion: v1
kind: Service
metadata:
  name: api
  annotations: {kardinal.dev.service/dependencies: "db:tcp,cache:http,nohost", kardinal.dev.service/plugins: ghost,
                kardinal.dev.service/statefull: "true"}
spec:
  selector: {app: api}
  ports: [{name: http, port: 80, appProtocol: HTTP}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: main, image: x}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, annotations: {kardinal.dev.service/dependencies: "api:http"}}
spec:
  selector: {app: db}
  ports: [{name: tcp, port: 80}]
---
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


def test_lint_reports_every_problem_at_once(harness):
    harness.write("app.yaml", BROKEN)
    out = harness.cli("lint", "-o", "json")
    assert out.returncode == 1
    problems = json.loads(out.stdout)
    codes = sorted(p["code"] for p in problems if p["severity"] == "error")
    assert codes == sorted(
        ["unknown-key", "bad-dependency", "bad-dependency", "undefined-plugin", "duplicate-servicename",
         "unknown-key", "cycle", "plugin-source"]
    )  # fmt: skip  (plugin-source: ./plugins/a does not exist, and render would fail on it too)
    messages = "\n".join(p["message"] for p in problems)
    assert "unknown annotation kardinal.dev.service/statefull" in messages
    assert "dependency cache:http names no Service 'cache'" in messages
    assert "bad dependency 'nohost'" in messages
    assert "plugin 'ghost' is not defined" in messages
    assert "duplicate plugin servicename 'seed'" in messages
    assert "unknown key 'behaviour'" in messages
    assert "dependency cycle: api -> db -> api" in messages or "dependency cycle: db -> api -> db" in messages
    assert all(p["where"]["file"] == "app.yaml" for p in problems)
    text = harness.cli("lint")
    assert text.returncode == 1
    assert "8 error(s)" in text.stdout and "app.yaml (document 2), Service/api" in text.stdout


def test_render_fails_on_lint_errors_naming_them(harness):
    harness.write("app.yaml", BROKEN)
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=x:1")
    assert out.returncode == 1
    assert out.stderr.count("devlane: error:") == 7
    assert "unknown annotation kardinal.dev.service/statefull" in out.stderr and "Traceback" not in out.stderr
    assert not (harness.root / "rendered").exists()


def test_clean_repo_lints_clean(harness):
    harness.app("api")
    out = harness.cli("lint")
    assert out.returncode == 0 and "0 error(s), 0 warning(s)" in out.stdout
    assert json.loads(harness.cli("lint", "-o", "json").stdout) == []


def test_lint_reports_broken_config_and_every_broken_file(harness):
    harness.config("routing: mesh\ndomian: x.example.com\n")
    harness.write("a.yaml", "kind: [\n")
    harness.write("b.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: b\n")
    harness.app("c", file="c.yaml")
    c = harness.root / "c.yaml"
    c.write_text(c.read_text().replace("annotations: {}", "annotations: {kardinal.dev.service/x: '1'}"))
    out = harness.cli("lint", "-o", "json")
    assert out.returncode == 1
    found = sorted((p["where"].get("file"), p["code"]) for p in json.loads(out.stdout))
    assert found == [(".devlane.yaml", "schema"), (".devlane.yaml", "schema"), ("a.yaml", "yaml"),
                     ("b.yaml", "yaml"), ("c.yaml", "unknown-key")]  # fmt: skip
    render = harness.cli("render", "--flow", "pr-1", "--service", "c=x:1")
    assert render.returncode == 1 and render.stderr.count("devlane: error:") == 2  # config first, then stop
    assert render.stderr.count("devlane: error: .devlane.yaml") == 2
