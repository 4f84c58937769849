"""`.devlane.yaml` edits (`renderer.authoring.configedit`): created when absent, existing keys, comments and layout
kept byte for byte, new services and plugin definitions (with their comments) appended, the result a valid config
that `render.settings.repo_config` reads as the additions; idempotent; disagreements listed, never written."""

from __future__ import annotations

import pytest
from support.yamledit import only_insertions

from renderer.authoring.configedit import plan_config
from renderer.authoring.yamledit import AnnotationEdit, Disagreement, EditPlan, apply, unified_diff
from renderer.core.yamlio import load_one
from renderer.render.settings.repo_config import CONFIG_FILE, parse_config

SERVICES = {"cart": {"dependencies": ["orders:http", "redis:tcp"], "stateful": False},
            "prod/redis": {"stateful": True, "plugins": ["redis-cart"]}}
PLUGINS = [
    {"#comment": "fill in: the Redis password Secret", "name": "redis-sidecar", "type": "stateful",
     "servicename": "redis-cart", "args": {"password-secret": ""}},
    {"#commented": "no built-in plugin for cassandra yet; a definition would look like:\n"
                   "- name: PLUGIN\n  type: stateful\n  servicename: cassandra-dev"},
]
REAL = {k: v for k, v in PLUGINS[0].items() if k != "#comment"}

COMMENTED_CONFIG = """\
# devlane configuration (schema: schemas/devlane-config.schema.json).
apiVersion: devlane.dev/v1alpha1
kind: Config
routing: none   # plain Services
# The base is shared, so the annotations live here.
services:
    api:
        dependencies: ["redis:redis"]   # flow style kept
    cart:
        stateful: false
# Flow files are not manifests.
exclude:
    - "flows/**"
"""


def plan_apply_again(tmp_path, services=SERVICES, plugins=PLUGINS) -> tuple[str, str, EditPlan]:
    """Plan, apply, and check that a second plan is empty; (before, after, the plan)."""
    plan = plan_config(tmp_path, services, plugins)
    assert not plan.skipped, plan.skipped
    before, after = plan.changes[CONFIG_FILE]
    assert apply(tmp_path, plan) == [CONFIG_FILE]
    assert (tmp_path / CONFIG_FILE).read_bytes() == after.encode()
    again = plan_config(tmp_path, services, plugins)
    assert again.changes == {} and not again.skipped and again.disagreements == plan.disagreements
    return before, after, plan


def test_a_new_config_holds_the_services_and_definitions(tmp_path):
    before, after, plan = plan_apply_again(tmp_path)
    assert before == "" and plan.disagreements == ()
    assert after == """\
apiVersion: devlane.dev/v1alpha1
kind: Config
services:
  cart:
    dependencies:
      - orders:http
      - redis:tcp
    stateful: false
  prod/redis:
    stateful: true
    plugins:
      - redis-cart
plugins:
  definitions:
    # fill in: the Redis password Secret
    - name: redis-sidecar
      type: stateful
      servicename: redis-cart
      args:
        password-secret: ''
    # no built-in plugin for cassandra yet; a definition would look like:
    # - name: PLUGIN
    #   type: stateful
    #   servicename: cassandra-dev
"""
    config = parse_config(after.encode())
    assert config.services == SERVICES and config.plugin_definitions == [REAL]
    assert unified_diff(plan).startswith(f"--- a/{CONFIG_FILE}\n+++ b/{CONFIG_FILE}\n@@ -0,0 +1,24 @@\n")


def test_the_commented_entry_validates_once_uncommented_and_filled(tmp_path):
    _, after, _ = plan_apply_again(tmp_path)
    filled = after.replace("    # - name: PLUGIN", "    - name: cassandra-plugin").replace("    #   ", "      ")
    config = parse_config(filled.encode())
    assert [d["servicename"] for d in config.plugin_definitions] == ["redis-cart", "cassandra-dev"]


def test_an_existing_commented_config_keeps_every_byte(tmp_path):
    (tmp_path / CONFIG_FILE).write_text(COMMENTED_CONFIG)
    before, after, plan = plan_apply_again(tmp_path)
    assert before == COMMENTED_CONFIG
    only_insertions(before, after)
    assert plan.disagreements == ()  # cart's stateful: false is what the file says already
    # the file's 4-space indentation and indented sequences, new entries after the old ones of each mapping
    assert """\
    cart:
        stateful: false
        dependencies:
            - orders:http
            - redis:tcp
    prod/redis:
        stateful: true
        plugins:
            - redis-cart
# Flow files are not manifests.
""" in after
    assert after.endswith("""\
    - "flows/**"
plugins:
    definitions:
        # fill in: the Redis password Secret
        - name: redis-sidecar
""" + after.split("        - name: redis-sidecar\n", 1)[1])
    config = parse_config(after.encode())
    assert config.services["api"] == {"dependencies": ["redis:redis"]}
    assert config.services["cart"] == SERVICES["cart"] and config.plugin_definitions == [REAL]
    assert config.exclude == ["flows/**"] and config.routing == "none"


def test_a_different_value_is_a_disagreement_and_stays(tmp_path):
    (tmp_path / CONFIG_FILE).write_text(COMMENTED_CONFIG)
    services = {"cart": {"stateful": True, "dependencies": ["orders:http"]}, "api": {"dependencies": ["redis:redis"]}}
    plan = plan_config(tmp_path, services, [])
    assert plan.disagreements == (Disagreement(AnnotationEdit(CONFIG_FILE, 0, "Service", "cart", None,
                                                              "services.cart.stateful", "true"), "false"),)
    before, after = plan.changes[CONFIG_FILE]
    only_insertions(before, after)
    assert "        stateful: false\n        dependencies:\n            - orders:http\n" in after
    assert load_one(after, CONFIG_FILE)["services"]["cart"] == {"stateful": False, "dependencies": ["orders:http"]}


def test_a_definition_of_the_same_servicename_is_kept_or_disagrees(tmp_path):
    (tmp_path / CONFIG_FILE).write_text("plugins:\n  definitions:\n  - name: redis-sidecar\n    type: stateful\n"
                                        "    servicename: redis-cart\n    args: {password-secret: filled}\n")
    plan = plan_config(tmp_path, {}, PLUGINS[:1])
    assert plan.changes == {} and plan.skipped == ()
    assert [(d.edit.kind, d.edit.name, d.edit.key) for d in plan.disagreements] == [
        ("PluginDefinition", "redis-cart", "plugins.definitions")]
    assert "password-secret: filled" in plan.disagreements[0].existing


def test_new_definitions_go_after_the_existing_ones_indentless_like_them(tmp_path):
    text = "plugins:\n  definitions:\n  - name: neon\n    type: external\n    servicename: neon-dev\n"
    (tmp_path / CONFIG_FILE).write_text(text)
    _, after, _ = plan_apply_again(tmp_path, {}, PLUGINS)
    assert after == text + """\
  # fill in: the Redis password Secret
  - name: redis-sidecar
    type: stateful
    servicename: redis-cart
    args:
      password-secret: ''
  # no built-in plugin for cassandra yet; a definition would look like:
  # - name: PLUGIN
  #   type: stateful
  #   servicename: cassandra-dev
"""


@pytest.mark.parametrize("text", [
    "",
    "# just a comment\n",
    "routing: none",
    "routing: none\r\nservices:\r\n",
    "services: {api: {stateful: true}}\nplugins: {timeoutSeconds: 30}\n",
    "services:\n  cart:\nplugins:\n",
    "{routing: none}\n",
])
def test_layouts(tmp_path, text):
    (tmp_path / CONFIG_FILE).write_text(text, newline="")
    plugins = [REAL] if "{" in text else PLUGINS  # comments cannot go into a flow mapping
    before, after, _ = plan_apply_again(tmp_path, SERVICES, plugins)
    only_insertions(before, after)
    config = parse_config(after.encode())
    assert {k: v for k, v in config.services.items() if k != "api"} == SERVICES
    assert config.plugin_definitions == [REAL]
    if "\r\n" in text:
        assert "\n" not in after.replace("\r\n", "")


def test_only_commented_entries_stay_comments_outside_plugins(tmp_path):
    (tmp_path / CONFIG_FILE).write_text("routing: none\n")
    _, after, _ = plan_apply_again(tmp_path, {}, PLUGINS[1:])
    assert after.startswith("routing: none\n# no built-in plugin for cassandra yet")
    assert parse_config(after.encode()).plugin_definitions == []


def test_an_invalid_config_is_not_edited(tmp_path):
    (tmp_path / CONFIG_FILE).write_text("routing: sideways\n")
    plan = plan_config(tmp_path, SERVICES, PLUGINS)
    assert plan.changes == {} and len(plan.skipped) == 5
    assert all("cannot be edited" in reason and "fix it first" in reason for _, reason in plan.skipped)


def test_an_edit_that_would_break_the_schema_is_skipped(tmp_path):
    plan = plan_config(tmp_path, {"Not A Name": {"stateful": True}}, [])
    assert plan.changes == {} and "would not be a valid .devlane.yaml" in plan.skipped[0][1]
