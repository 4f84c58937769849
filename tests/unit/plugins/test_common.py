"""What every built-in shares (plugins/_common.py): names that carry the flow within a DNS label, env set by name
and read as the kubelet does, refusals answered in Kardinal's shape, boolean args, and create_flow advertising its
args to Kardinal's by-name binding."""

from __future__ import annotations

import inspect

import pytest

from plugins import _common
from renderer.render.plugins.output_policy import name_findings


@pytest.mark.parametrize("servicename", ["db", "a-very-long-plugin-servicename-that-goes-on-and-on-and-on-x"])
@pytest.mark.parametrize("flow_id", ["pr-7", "f" * 40])
def test_flow_names_carry_the_flow_and_fit_a_dns_label(servicename, flow_id):
    uuid = f"{servicename}-{flow_id}"
    names = {_common.flow_name(prefix, uuid) for prefix in ("stripe-mock", "neon-create")}
    assert len(names) == 2
    for name in names:
        assert len(name) <= 63 and _common.DNS_LABEL.match(name), name
        assert name_findings(name, flow_id) == [], name
    assert _common.flow_name("neon", uuid) == _common.flow_name("neon", uuid)
    assert _common.flow_name("x", uuid) != _common.flow_name("x", f"other-{flow_id}")


def test_set_env_replaces_the_first_entry_in_place_and_drops_duplicates():
    container = {"env": [{"name": "A", "value": "1"}, {"name": "K", "value": "old"}, {"name": "B", "value": "2"},
                         {"name": "K", "value": "dup"}]}
    _common.set_env(container, "K", _common.secret_ref("s", "k"))
    assert container["env"] == [{"name": "A", "value": "1"},
                                {"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                                {"name": "B", "value": "2"}]
    _common.set_env(container, "NEW", {"value": "x"})
    assert container["env"][-1] == {"name": "NEW", "value": "x"}
    empty: dict = {"env": None}
    _common.set_env(empty, "A", {"value": "1"})
    assert empty["env"] == [{"name": "A", "value": "1"}]


def test_plain_env_resolves_duplicates_as_the_kubelet_does():
    container = {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"},
                         {"name": "B", "value": "x"}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}
    assert _common.plain_env(container) == {"A": "2"}  # the last entry wins; B's is a reference, not a value


def test_wire_refuses_a_pod_spec_without_containers_in_kardinal_shape():
    pod_specs = [{"containers": [{"name": "app"}]}, {"containers": []}]
    with pytest.raises(_common.Refused) as refused:
        _common.wire(pod_specs, {"A": {"value": "1"}})
    assert refused.value.answer(pod_specs) == {
        "pod_specs": pod_specs, "config_map": {},
        "results": [{"severity": "error", "message": "pod spec #2 has no containers"}]}
    assert _common.result("m", "warning", "do x", "args.image") == {
        "severity": "warning", "message": "m", "field": {"path": "args.image"}, "tags": {"devlane.dev/hint": "do x"}}


@pytest.mark.parametrize(("value", "default", "expected"), [
    ("true", False, True), ("True", False, True), ("false", True, False), ("", True, True), (None, False, False)])
def test_flag_reads_yaml_booleans_given_as_strings(value, default, expected):
    assert _common.flag(value, default) is expected


def test_arg_findings_name_the_field_and_never_echo_the_value():
    args = {"a_env": "1BAD", "b_env": "GOOD_1", "key": "k"}
    assert _common.env_name_findings(args, ("a_env", "b_env", "c_env")) == [
        {"field": "a_env", "message": "is not an environment variable name (letters, digits, '_', '-' and '.'; not "
                                      "starting with a digit)"}]
    assert _common.key_needs_secret(args, "key", "secret") == [
        {"field": "key", "message": "names a key of no Secret; set secret too"}]


def test_kardinal_functions_advertise_every_arg_by_name():
    def create(service_specs, pod_specs, flow_uuid, extensions=None, **args):
        return args

    validate, create_flow, delete = _common.kardinal_functions(("a", "b"), lambda args: [], create, lambda c, f: None)
    assert list(inspect.signature(create_flow).parameters) == [
        "service_specs", "pod_specs", "flow_uuid", "extensions", "a", "b"]
    assert (validate.__name__, create_flow.__name__, delete.__name__) == ("validate_args", "create_flow", "delete_flow")
