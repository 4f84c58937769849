"""The refusals that confinement, trust and grants make, seen as a user sees them (issue 41, point 2): the
in-process CLI renders, exits 1 naming the rule, and writes nothing (the previous output byte-identical).

- The fence (`renderer/core/fence.py`): a kustomization naming a file of a sibling directory whose name starts
  like the repository's (`repo-secrets` beside `repo`), a symlink in the repository to a fake `~/.kube/config`
  (absolute and relative), a relative `../../..` link in an input's directory, a Helm values file that is such a
  link, an `inputs:` path to the sibling directory. Each is refused before any build tool runs, and the planted
  secret appears nowhere.
- Trust (`renderer/render/settings/trust.py`): for each field of `policy.plugins.<key>` (the four `allow`
  switches, `kinds`, `namespaces`), a built-in plugin's object that needs exactly that field is refused when only
  the pull request's own `.devlane.yaml` asks for it (the operator's policy granting everything else), and
  rendered, in the output files, when the operator's policy file or `.devlane.yaml` at the trusted ref grants it.
- Grants (`renderer/render/settings/grants.py`): two plugins, one grant: the other plugin's object in kube-system is
  refused, whether or not the head asks for it.

The plugins are built-ins (run in devlane's process), and every refusal comes before a build tool or a plugin
process would run: no sandbox is involved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import Harness, app_yaml, tree, yamlc

pytestmark = pytest.mark.sandbox_free

FLOW = "pr-7"
PLANTED = "PLANTED-SECRET-7d2a"
RENDER = ("render", "--flow", FLOW, "--service", "api=api:2")

# a Kardinal plugin that adds the objects of its `payload` argument ("FLOW" becomes the flow id)
KARDINAL = '''
import json

def create_flow(service_specs, pod_specs, flow_uuid, payload):
    return {"pod_specs": pod_specs, "config_map": {}, "resources": json.loads(payload.replace("FLOW", flow_uuid))}
'''


def out_dir(harness: Harness) -> Path:
    return harness.tmp / "out"


def written(harness: Harness) -> dict[str, bytes]:
    return tree(out_dir(harness)) if out_dir(harness).is_dir() else {}


def render(harness: Harness, *extra: str):
    return harness.cli(*RENDER, "--out", out_dir(harness), *extra)


def refused(harness: Harness, *extra: str, said: tuple[str, ...]) -> str:
    """Render: exit 1, one error or more naming `said`, nothing written or changed, no planted secret shown."""
    before = written(harness)
    out = render(harness, *extra)
    assert out.returncode == 1, out.stderr
    assert all(s in out.stderr for s in said), out.stderr
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr and PLANTED not in out.stderr
    assert written(harness) == before
    return out.stderr


def rendered(harness: Harness) -> list[dict]:
    """Every object of the rendered flow, read from its files."""
    flow = out_dir(harness) / "flows" / FLOW
    return [d for f in sorted(flow.glob("*.yaml")) for d in yamlc.safe_load_all(f.read_text())
            if isinstance(d, dict) and "kind" in d and "metadata" in d]


# -- the fence ----------------------------------------------------------------------------------------------------


@pytest.fixture
def planted(harness: Harness) -> dict[str, Path]:
    """`repo-secrets/` beside the repository (its name starts with the repository's) and a fake `~/.kube/config`,
    each holding the planted secret; a kustomization `app/` in the repository."""
    sibling = harness.tmp / "repo-secrets"
    sibling.mkdir()
    (sibling / "leak.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: leak}}\n"
                                       f"data: {{token: {PLANTED}}}\n")
    (sibling / "kustomization.yaml").write_text("resources: [leak.yaml]\n")
    kube = harness.tmp / "home" / ".kube"
    kube.mkdir(parents=True)
    (kube / "config").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: kube}}\n"
                                 f"data: {{token: {PLANTED}}}\n")
    harness.write("app/app.yaml", app_yaml("api"))
    harness.config({"inputs": [{"kustomize": "app"}]})
    return {"sibling": sibling, "kube": kube / "config"}


@pytest.mark.parametrize(("entry", "field"), [
    ("../../repo-secrets/leak.yaml", "resources entry '../../repo-secrets/leak.yaml'"),
    ("../../repo-secrets", "resources entry '../../repo-secrets'"),
    ("../../repo", "resources entry '../../repo'"),  # the repository itself, by a path through its parent: fine
])  # fmt: skip
def test_a_kustomization_naming_the_sibling_with_the_same_prefix_is_refused(harness, planted, entry, field):
    harness.write("app/kustomization.yaml", f"resources: [app.yaml, {entry}]\n")
    if entry == "../../repo":
        harness.write("app/kustomization.yaml", "resources: [app.yaml, ../../repo/app/app.yaml]\n")
        out = render(harness, "--stdout")
        assert "outside the repository" not in out.stderr  # whatever the build says, the fence let it through
        return
    stderr = refused(harness, said=("app/kustomization.yaml", field, "outside the repository", str(harness.root)))
    assert f"resolves to {planted['sibling']}" in stderr


@pytest.mark.parametrize("target", ["absolute", "relative"])
@pytest.mark.parametrize("named", [True, False])
def test_a_symlink_in_the_repository_to_a_kubeconfig_is_refused(harness, planted, target, named):
    link = harness.root / "app" / "kubeconfig.yaml"
    link.symlink_to(planted["kube"] if target == "absolute" else Path("..", "..", "home", ".kube", "config"))
    harness.write("app/kustomization.yaml", "resources: [app.yaml, kubeconfig.yaml]\n" if named else
                  "resources: [app.yaml]\n")  # unnamed, it is still readable by the build: refused as well
    refused(harness, said=("app/kustomization.yaml: its directory: the symlink app/kubeconfig.yaml resolves to "
                           f"{planted['kube']}, outside the repository",))


def test_a_relative_link_climbing_out_of_an_input_directory_is_refused(harness, planted):
    harness.write("app/kustomization.yaml", "resources: [app.yaml]\n")
    (harness.root / "app" / "base").symlink_to(Path("..", "..", "..") / planted["sibling"].relative_to("/"))
    refused(harness, said=("the symlink app/base resolves to", str(planted["sibling"]), "outside the repository"))


@pytest.mark.parametrize("values", ["sibling", "link"])
def test_a_helm_values_file_outside_is_refused_before_helm_runs(harness, planted, values):
    harness.write("charts/shop/Chart.yaml", "apiVersion: v2\nname: shop\nversion: 0.1.0\n")
    harness.write("charts/shop/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    if values == "link":
        (harness.root / "env").mkdir()
        (harness.root / "env" / "dev.yaml").symlink_to(Path("..", "..", "home", ".kube", "config"))
    named = "../repo-secrets/leak.yaml" if values == "sibling" else "env/dev.yaml"
    harness.config({"inputs": [{"helm": "charts/shop", "values": [named]}]})
    refused(harness, said=(f"the values file {named}", "outside the repository"))


def test_an_input_path_to_the_sibling_directory_is_refused(harness, planted):
    harness.config({"inputs": [{"kustomize": "../repo-secrets"}]})
    refused(harness, said=("the `kustomize:` path ../repo-secrets", f"resolves to {planted['sibling']}"))


# -- trust: each field of policy.plugins.<key> ------------------------------------------------------------------------


def obj(kind: str, name: str, api: str = "v1", **rest) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, **rest.pop("meta", {})}, **rest}


# field -> (the object that needs it, what the operator grants besides, where the rendered object is told apart)
FIELDS = {
    "namespaces": ([obj("ConfigMap", "cfg-FLOW", meta={"namespace": "kube-system"}, data={"a": "b"})],
                   {}, {"namespaces": ["kube-system"]}, "(rule namespace)"),
    "secrets": ([obj("Secret", "creds-FLOW", stringData={"password": "dev"})],
                {"kinds": ["Secret"]}, {"allow": ["secrets"]}, "(rule secrets)"),
    "privileged": ([obj("Deployment", "agent-FLOW", "apps/v1", spec={
        "selector": {"matchLabels": {"app": "agent-FLOW"}}, "template": {
            "metadata": {"labels": {"app": "agent-FLOW"}},
            "spec": {"hostNetwork": True, "containers": [{"name": "x", "image": "x:1"}]}}})],
        {}, {"allow": ["privileged"]}, "(rule privileged)"),
    "clusterScoped": ([obj("Namespace", "scratch-FLOW")], {"kinds": ["Namespace"]}, {"allow": ["clusterScoped"]},
                      "(rule clusterScoped)"),
    "rbac": ([obj("Role", "wide-FLOW", "rbac.authorization.k8s.io/v1", rules=[
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg-seed-FLOW"], "verbs": ["*"]}])],
        {"kinds": ["Role"]}, {"allow": ["rbac"]}, "(rule rbac)"),
    "kinds": ([obj("Widget", "w-FLOW", "example.com/v1", spec={"size": 1})], {}, {"kinds": ["Widget"]},
              "(rule emits)"),
}


def lane(harness: Harness, plugins: dict[str, list[dict]], head: dict | None = None) -> None:
    """`api` using one built-in Kardinal plugin instance per `plugins` entry (instance and plugin of one name),
    each adding its objects; `db` beside it; namespace shop; the head's `.devlane.yaml` asking `head`."""
    harness.write("app.yaml", app_yaml("api", ",".join(plugins)) + app_yaml("db") + "".join(
        yaml.safe_dump(d, sort_keys=False) + "---\n" for d in [obj("Service", "plugin-defs", meta={"annotations": {
            "kardinal.dev.service/plugin-definition": yaml.safe_dump([
                {"name": name, "type": "stateful", "servicename": name, "args": {"payload": json.dumps(objects)}}
                for name, objects in plugins.items()])}})]))
    for name in plugins:
        harness.builtin(name, KARDINAL)
    harness.config({"namespace": "shop", **({"policy": {"plugins": head}} if head else {})})


def operator_policy(harness: Harness, plugins: dict) -> str:
    path = harness.tmp / "policy.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "devlane.dev/v1alpha1", "kind": "Config",
                                    "policy": {"plugins": plugins}}))
    return f"--policy={path}"


def merged(*entries: dict) -> dict:
    out: dict[str, list[str]] = {}
    for e in entries:
        for key, values in e.items():
            out[key] = [*out.get(key, []), *values]
    return out


def names(objects: list[dict]) -> set[tuple[str, str, str | None]]:
    return {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objects}


def want(objects: list[dict]) -> set[tuple[str, str, str | None]]:
    return {(o["kind"], o["metadata"]["name"].replace("FLOW", f"seed-{FLOW}"),
             o["metadata"].get("namespace", None if o["kind"] == "Namespace" else "shop")) for o in objects}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_the_heads_own_config_never_grants_a_field_and_the_operators_policy_does(harness, field):
    objects, base, needed, rule = FIELDS[field]
    lane(harness, {"seed": objects}, head={"seed": merged(base, needed)})
    assert render(harness).returncode == 1  # no output yet: the refusal leaves none either
    assert written(harness) == {}
    refused(harness, operator_policy(harness, {"seed": base}), said=(rule, "plugin seed: refused by the output policy"))
    out = render(harness, operator_policy(harness, {"seed": merged(base, needed)}))
    assert out.returncode == 0, out.stderr
    assert want(objects) <= names(rendered(harness))
    refused(harness, operator_policy(harness, {"seed": base}), said=(rule,))  # the output stays as it was


@pytest.mark.parametrize("field", ["namespaces", "secrets", "kinds"])
def test_the_trusted_refs_config_grants_a_field_and_the_head_may_only_narrow_it(harness, field):
    objects, base, needed, rule = FIELDS[field]
    lane(harness, {"seed": objects}, head={"seed": merged(base, needed)})
    granting = harness.commit("base: the platform team's grant")
    out = render(harness, f"--trusted-ref={granting}")
    assert out.returncode == 0, out.stderr
    assert want(objects) <= names(rendered(harness))
    lane(harness, {"seed": objects}, head={"seed": base})  # the head narrows: the object is refused again
    refused(harness, f"--trusted-ref={granting}", said=(rule,))
    lane(harness, {"seed": objects}, head=None)
    silent = harness.commit("a base that grants nothing")
    lane(harness, {"seed": objects}, head={"seed": merged(base, needed)})  # the head asks: the base does not grant
    refused(harness, f"--trusted-ref={silent}", said=(rule,))


# -- grants: two plugins, one grant ------------------------------------------------------------------------------


def test_one_plugins_grant_never_reaches_the_other(harness):
    """The operator grants `seed` kube-system; `other`, a second built-in, adds a ConfigMap there too: refused,
    whether or not the pull request's config asks for it; `seed`'s own renders."""
    def cm(name: str) -> list[dict]:
        return [obj("ConfigMap", f"{name}-FLOW", meta={"namespace": "kube-system"}, data={"a": "b"})]

    grant = operator_policy(harness, {"seed": {"namespaces": ["kube-system"]}})
    lane(harness, {"seed": cm("s"), "other": cm("o")})
    refused(harness, grant, said=("ConfigMap/o-other-pr-7 in namespace kube-system, plugin other: refused by the "
                                  "output policy (rule namespace)",))
    lane(harness, {"seed": cm("s"), "other": cm("o")}, head={"seed": {"namespaces": ["kube-system"]},
                                                             "other": {"namespaces": ["kube-system"]}})
    refused(harness, grant, said=("plugin other: refused by the output policy (rule namespace)",))
    lane(harness, {"seed": cm("s"), "other": []})
    out = render(harness, grant)
    assert out.returncode == 0, out.stderr
    assert ("ConfigMap", "s-seed-pr-7", "kube-system") in names(rendered(harness))
    assert not any(n[1].startswith("o-") for n in names(rendered(harness)))
