"""How the lane's reach reads a mounted configuration file line by line (`reach._lines`, issue 41): comment lines
(`#`, `;`, `//`) are skipped and the lines after them still read; an INI or TOML section (`[redis]`, only a line
both opened and closed by brackets) prefixes the keys under it; YAML and JSON mappings (`redis:`, `"redis": {` or
`"redis": [`) prefix the keys indented under them, and a sibling at the same indent closes them. A store named only
by that key path is found, and its sign says the path. Read from the render's reach records: what each dev pod can
reach, the sign that says why, as `render`, `lint` and the PR comment show them."""

from __future__ import annotations

import pytest
from support import app_yaml, yaml_doc


def reached(harness, text: str, name: str = "app.conf") -> dict[str, tuple[str, str, str]]:
    """The render's reach of a dev pod that mounts a ConfigMap holding `text` as file `name`:
    {target: (class, kind, sign)}."""
    harness.write("config.yaml", yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "files"},
                                           "data": {name: text}}))
    harness.write("api.yaml", app_yaml("api", containers=[{
        "name": "main", "image": "acme/api:1", "volumeMounts": [{"name": "conf", "mountPath": "/conf"}]}]).replace(
        "    spec: {containers: ", "    spec: {volumes: [{name: conf, configMap: {name: files}}], containers: ", 1))
    result = harness.render("pr-1", {"api": "acme/api:2"})
    return {r.target: (r.cls, r.kind, r.sign) for r in result.reach}


LIVE = "[live]\nurl = redis://live.example.com:6379\n"  # read after every comment form


@pytest.mark.parametrize("mark", ["#", ";", "//"])
def test_a_commented_out_store_is_not_reached_and_the_next_line_is(harness, mark):
    text = f"{mark} url = redis://old.example.com:6379\n{LIVE}"
    assert reached(harness, text) == {"live.example.com:6379": ("outside-store", "redis", "scheme redis")}


def test_a_key_before_any_section_has_no_section_in_its_path(harness):
    text = "redis:\n  host: cache.example.com\n"
    assert reached(harness, text, "application.yml") == {
        "cache.example.com": ("outside-store", "redis", "key redis.host")}


@pytest.mark.parametrize(("section", "path"), [("[redis]", "redis.host"), ("[ redis ]", "redis.host"),
                                               ("[redis.cacheX]", "redis.cacheX.host")])
def test_a_section_prefixes_the_keys_under_it(harness, section, path):
    text = f"[log]\nlevel = info\n{section}\nhost = cache.example.com\n"
    assert reached(harness, text, "app.ini") == {"cache.example.com": ("outside-store", "redis", f"key {path}")}


def test_a_value_in_brackets_is_no_section(harness):
    """`brokers = [...]` ends with `]` but is a key and its value: the broker in it is found."""
    text = '[log]\nlevel = "info"\n[kafka]\nbrokers = ["broker.example.com:9092"]\n'
    assert reached(harness, text, "config.toml") == {
        "broker.example.com:9092": ("outside-store", "kafka", "port 9092")}


def test_yaml_nesting_follows_the_indent(harness):
    text = "spring:\n  redis:\n    host: cache.example.com\nserver:\n  port: 8080\n"
    assert reached(harness, text, "application.yml") == {
        "cache.example.com": ("outside-store", "redis", "key spring.redis.host")}


def test_a_sibling_at_the_same_indent_closes_the_mapping_before_it(harness):
    text = "redis:\n  port: 6379\nmongo:\n  host: docs.example.com\n"
    assert reached(harness, text, "application.yml") == {
        "docs.example.com": ("outside-store", "mongodb", "key mongo.host")}


def test_a_json_list_opens_a_parent_like_a_mapping(harness):
    text = '{\n  "redis": [\n    {\n      "host": "cache.example.com"\n    }\n  ]\n}\n'
    assert reached(harness, text, "appsettings.json") == {
        "cache.example.com": ("outside-store", "redis", "key redis.host")}


def test_a_line_without_a_key_stands_under_its_section(harness):
    """An inventory's `[redis_servers]` then a host alone: the section names the store the host is."""
    text = "[web]\nfront.example.com\n[redis_servers]\ncache.example.com\n"
    assert reached(harness, text, "hosts.ini") == {
        "cache.example.com": ("outside-store", "redis", "key redis_servers")}


def test_a_yaml_list_item_stands_under_the_key_that_holds_the_list(harness):
    """`hosts:` then `- db1`: each item is a value of `mongo.hosts`; an item that is a mapping (`- host: ...`) gives
    its keys under the list's key, and the next item's keys too, however far its entry stands from the dash."""
    text = ("mongo:\n  hosts:\n    - db1.example.com\nredis:\n  nodes:\n    - host: cache.example.com\n"
            "      port: 6380\n    -   host: cache2.example.com\n")  # the item's entry after any spaces
    assert reached(harness, text, "application.yml") == {
        "db1.example.com": ("outside-store", "mongodb", "key mongo.hosts"),
        "cache.example.com": ("outside-store", "redis", "key redis.nodes.host"),
        "cache2.example.com": ("outside-store", "redis", "key redis.nodes.host")}
