"""Errors point where the user can fix them (issue 44, point 5): a problem with a `.devlane.yaml` setting names
`.devlane.yaml` and the setting's line, also when the setting became an annotation of an object the user does not
own (`services:` for a chart's Service); a repository whose inputs were all skipped says which directories and why,
also when the command fails for want of a service."""

from __future__ import annotations

import pytest
from support.builders import app_yaml

pytestmark = pytest.mark.e2e

CONFIG = """\
# the app's config
routing: none
services:
  api:
    dependencies: [{dependency}]
  db:
    stateful: true
lifecycle:
  sleep:
    down: "{down}"
    up: "0 7 * * 1-5"
"""


@pytest.mark.parametrize(("dependency", "down", "said"), [
    ("dbb", "0 20 * * 1-5", ".devlane.yaml:5, services.api.dependencies (for Service/api): bad dependency 'dbb'"),
    ("dbb:http", "0 20 * * 1-5",
     ".devlane.yaml:5, services.api.dependencies (for Service/api): dependency dbb:http names no Service 'dbb'"),
    ("db:htt", "0 20 * * 1-5", ".devlane.yaml:5, services.api.dependencies (for Service/api): dependency db:htt: "
                               "Service db has no port named 'htt'"),
    ("db:http", "61 20 * * 1-5", ".devlane.yaml:10: lifecycle.sleep.down: '61 20 * * 1-5' has '61' in its minute"),
])
def test_a_setting_that_is_wrong_is_named_with_its_line(harness, dependency, down, said):
    harness.write("app.yaml", app_yaml("api") + app_yaml("db"))
    harness.config(CONFIG.format(dependency=dependency, down=down))
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2")
    assert done.returncode == 1 and f"devlane: error: {said}" in done.stderr, done.stderr
    assert "app.yaml" not in done.stderr  # not the manifest, which the config annotated


def test_a_schema_error_names_its_line(harness):
    harness.write("app.yaml", app_yaml("api"))
    harness.config("routing: none\nlifecycle:\n  ttl: 7d\n  sleeep: {}\n")
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2")
    assert done.returncode == 1 and "devlane: error: .devlane.yaml:2: lifecycle: unknown key(s): 'sleeep'" \
        in done.stderr, done.stderr


def test_a_repository_of_kustomize_bases_says_what_it_skipped_when_the_service_is_not_found(harness):
    harness.write("base/app.yaml", app_yaml("api"))
    harness.write("base/kustomization.yaml", "resources: [app.yaml]\n")
    harness.write("overlays/dev/kustomization.yaml", "resources: [../../base]\n")
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == ("devlane: warning: .devlane.yaml: skipped 2 plain-YAML directories (kustomize or Helm inputs, "
                        "or apps with their own .devlane.yaml): base/, overlays/dev/"), done.stderr
    assert "devlane: error: flow target 'api' is not a Service or workload in the repository" in done.stderr
