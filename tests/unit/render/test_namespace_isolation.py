"""Isolation `namespace`: dev copies keep their names and labels in a flow namespace, every baseline Service
not copied is aliased there by an `ExternalName` Service, and only references that name a namespace are
rewritten. Every assertion reads the rendered objects."""

from __future__ import annotations

import pytest
from support import CRDS, yaml_doc, yamlc

K = "kardinal.dev.service/"


def deployment(name: str, ns: str | None = "shop", env: list | None = None, env_from: list | None = None,
               **spec) -> str:
    container = {"name": "main", "image": f"{name}:1", **({"env": env} if env else {}),
                 **({"envFrom": env_from} if env_from else {})}
    pod = {"containers": [container], **spec}
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                     "spec": {"selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {"app": name, "tier": "x"}}, "spec": pod}}})


def service(name: str, ns: str | None = "shop", port: int = 80, deps: str | None = None, **annotations) -> str:
    meta: dict = {"name": name, **({"namespace": ns} if ns else {})}
    ann = {**({K + "dependencies": deps} if deps else {}), **{K + k: v for k, v in annotations.items()}}
    if ann:
        meta["annotations"] = ann
    return yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                     "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port}]}})


def objects(result) -> dict[tuple[str, str | None, str], dict]:
    return {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
            for f in result.flows for o in f.objects}


def pod(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


NS = {"isolation": "namespace"}


def shop(harness, env: list | None = None, extra: str = "", env_from: list | None = None) -> None:
    """web -> api -> db (stateful), catalog untouched, all in namespace shop."""
    harness.write("app.yaml", service("web", deps="api:http") + deployment("web")
                  + service("api", deps="db:http") + deployment("api", env=env, env_from=env_from)
                  + service("db", stateful="true") + deployment("db")
                  + service("catalog") + deployment("catalog") + extra)
    harness.config(NS)


def test_dev_copies_keep_names_and_labels_in_the_flow_namespace(harness):
    shop(harness)
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert got["Namespace", None, "shop-pr-1"]["metadata"]["labels"]["devlane.dev/flow"] == "pr-1"
    api = got["Deployment", "shop-pr-1", "api"]
    assert pod(api)["containers"][0]["image"] == "api:2"
    assert api["spec"]["template"]["metadata"]["labels"] == {"app": "api", "tier": "x", "devlane.dev/flow": "pr-1",
                                                             "app.kubernetes.io/managed-by": "devlane"}
    assert api["spec"]["selector"] == {"matchLabels": {"app": "api", "devlane.dev/flow": "pr-1"}}
    assert got["Service", "shop-pr-1", "api"]["spec"]["selector"] == {"app": "api", "devlane.dev/flow": "pr-1"}
    assert ("Deployment", "shop-pr-1", "db") in got  # the stateful dependency
    assert not any(ns == "shop" for _, ns, _ in got), "nothing is rendered into the baseline namespace"


def test_every_service_not_copied_is_an_alias_to_the_baseline(harness):
    shop(harness)
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    aliases = {name: o["spec"] for (kind, ns, name), o in got.items()
               if kind == "Service" and o["spec"].get("type") == "ExternalName"}
    assert aliases == {
        "catalog": {"type": "ExternalName", "externalName": "catalog.shop.svc.cluster.local",
                    "ports": [{"name": "http", "port": 80}]},
        "web": {"type": "ExternalName", "externalName": "web.shop.svc.cluster.local",
                "ports": [{"name": "http", "port": 80}]},
    }
    assert got["Service", "shop-pr-1", "web"]["metadata"]["annotations"] == {"devlane.dev/alias-of": "shop/web"}


def test_cluster_domain_and_namespace_template_are_configurable(harness):
    shop(harness)
    harness.config({**NS, "clusterDomain": "corp.internal", "namespaceTemplate": "lane-{flow}-{namespace}"})
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert ("Deployment", "lane-pr-1-shop", "api") in got
    assert got["Service", "lane-pr-1-shop", "catalog"]["spec"]["externalName"] == "catalog.shop.svc.corp.internal"


def test_only_references_naming_a_namespace_are_rewritten(harness):
    env = [{"name": "DB_HOST", "value": "db"}, {"name": "DB_URL", "value": "http://db.shop.svc.cluster.local:80/x"},
           {"name": "DB_SHORT", "value": "db.shop:80"}, {"name": "CATALOG_URL", "value": "http://catalog.shop:80"}]
    shop(harness, env=env)
    result = harness.render("pr-1", {"api": "api:2"})
    got = objects(result)
    assert pod(got["Deployment", "shop-pr-1", "api"])["containers"][0]["env"] == [
        {"name": "DB_HOST", "value": "db"},  # resolves in the flow namespace, to the dev copy
        {"name": "DB_URL", "value": "http://db.shop-pr-1.svc.cluster.local:80/x"},
        {"name": "DB_SHORT", "value": "db.shop-pr-1:80"},
        {"name": "CATALOG_URL", "value": "http://catalog.shop:80"},  # no dev copy: the baseline, as before
    ]


def test_every_config_map_a_dev_pod_reads_is_copied_beside_it(harness):
    cm = yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api-config", "namespace": "shop"},
                   "data": {"DB": "db.shop.svc.cluster.local:80", "LOG": "debug"}})
    other = yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flags", "namespace": "shop"},
                      "data": {"NEW_UI": "true"}})
    shop(harness, extra=cm + other,
         env_from=[{"configMapRef": {"name": "api-config"}}, {"configMapRef": {"name": "flags"}}])
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert got["ConfigMap", "shop-pr-1", "api-config"]["data"] == {"DB": "db.shop-pr-1.svc.cluster.local:80",
                                                                   "LOG": "debug"}
    assert got["ConfigMap", "shop-pr-1", "flags"]["data"] == {"NEW_UI": "true"}  # copied, as the pod reads it here
    assert pod(got["Deployment", "shop-pr-1", "api"])["containers"][0]["envFrom"] == [
        {"configMapRef": {"name": "api-config"}}, {"configMapRef": {"name": "flags"}}]


def test_a_secret_a_dev_pod_reads_is_reported_never_copied(harness):
    secret = yaml_doc({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-db", "namespace": "shop"},
                       "stringData": {"PASSWORD": "x"}})
    shop(harness, env=[{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "api-db", "key": "PASSWORD"}}}],
         extra=secret)
    result = harness.render("pr-1", {"api": "api:2"})
    assert not any(kind == "Secret" for kind, _, _ in objects(result))
    [warning] = [p for p in result.warnings if p.code == "namespace-missing"]
    assert "reads Secret api-db, which the flow namespace does not have" in warning.message
    assert "ExternalSecret" in warning.hint and "secrets.mirror" in warning.hint
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout", "--strict")
    assert out.returncode == 1 and "reads Secret api-db" in out.stderr


def test_a_claim_is_fresh_in_the_flow_namespace_and_cannot_be_shared(harness):
    claim = yaml_doc({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                      "metadata": {"name": "data", "namespace": "shop"},
                      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                               "volumeName": "pv-1"}})
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    harness.write("app.yaml", service("db", stateful="true") + deployment("db", volumes=volumes) + claim)
    harness.config(NS)
    got = objects(harness.render("pr-1", {"db": "db:2"}))
    fresh = got["PersistentVolumeClaim", "shop-pr-1", "data"]
    assert "volumeName" not in fresh["spec"]
    assert pod(got["Deployment", "shop-pr-1", "db"])["volumes"] == volumes
    harness.config({**NS, "services": {"shop/db": {"volume": "shared"}}})
    out = harness.cli("render", "--flow", "pr-1", "--service", "db=db:2", "--stdout")
    assert out.returncode == 1 and "cannot share the baseline PersistentVolumeClaim data" in out.stderr


def test_a_repository_without_namespaces_needs_namespace_in_config(harness):
    harness.write("app.yaml", service("api", ns=None) + deployment("api", ns=None))
    harness.config(NS)
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 1
    assert "Deployment api has no namespace" in out.stderr and "set `namespace:` in .devlane.yaml" in out.stderr
    harness.config({**NS, "namespace": "shop"})
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    assert ("Deployment", "shop-pr-1", "api") in got and ("Namespace", None, "shop-pr-1") in got


TAKEN = yaml_doc({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-pr-1"}})


@pytest.mark.parametrize("holder", [service("old", ns="shop-pr-1"), TAKEN], ids=["service", "namespace"])
def test_a_flow_namespace_the_repository_already_uses_is_refused(harness, holder):
    """A lane in a namespace the baseline uses would mix with it, and pruning the lane would delete it: refused,
    naming the object that uses it and the setting that avoids it. Another template renders."""
    shop(harness, extra=holder)
    out = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2", "--stdout")
    assert out.returncode == 1 and out.stdout == ""
    assert "isolation namespace: the flow namespace shop-pr-1 (of shop, flow pr-1) is a namespace the repository " \
           "already uses" in out.stderr
    assert "app.yaml (document 9), " in out.stderr and "set `namespaceTemplate:` in .devlane.yaml" in out.stderr
    harness.config({**NS, "namespaceTemplate": "{namespace}-lane-{flow}"})
    assert ("Deployment", "shop-lane-pr-1", "api") in objects(harness.render("pr-1", {"api": "api:2"}))


def test_two_baseline_namespaces_give_two_flow_namespaces(harness):
    harness.write("app.yaml", service("web", ns="front", deps="api.back:http") + deployment("web", ns="front")
                  + service("api", ns="back") + deployment("api", ns="back") + service("cache", ns="back")
                  + service("cdn", ns="front"))
    harness.config(NS)
    got = objects(harness.render("pr-1", {"web": "web:2", "api": "api:2"}))
    assert {name for kind, _, name in got if kind == "Namespace"} == {"front-pr-1", "back-pr-1"}
    assert got["Service", "back-pr-1", "cache"]["spec"]["externalName"] == "cache.back.svc.cluster.local"
    assert got["Service", "front-pr-1", "cdn"]["spec"]["externalName"] == "cdn.front.svc.cluster.local"
    assert ("Deployment", "front-pr-1", "web") in got and ("Deployment", "back-pr-1", "api") in got


def test_a_long_flow_namespace_is_shortened_stably(harness):
    ns = "a-very-long-namespace-name-that-a-platform-team-chose"
    harness.write("app.yaml", service("api", ns=ns) + deployment("api", ns=ns))
    harness.config(NS)
    flow = "feature-branch-with-a-long-name"
    names = {ns_ for kind, ns_, _ in objects(harness.render(flow, {"api": "api:2"})) if kind == "Deployment"}
    [name] = names
    assert len(name) <= 63 and name.endswith(f"-{flow}") and name == next(iter(
        {n for k, n, _ in objects(harness.render(flow, {"api": "api:2"})) if k == "Deployment"}))


def test_the_entry_is_copied_into_the_flow_namespace(harness):
    ingress = yaml_doc({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                        "metadata": {"name": "shop", "namespace": "shop", "annotations": {K + "ingress": "true"}},
                        "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{
                            "path": "/", "pathType": "Prefix",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
    shop(harness, extra=ingress)
    got = objects(harness.render("pr-1", {"api": "api:2"}))
    entry = got["Ingress", "shop-pr-1", "shop"]
    assert entry["spec"]["rules"][0]["host"] == "pr-1.example.com"
    assert entry["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "web"
    assert ("Deployment", "shop-pr-1", "web") in got  # on the path from the entry: a dev copy, not an alias


@pytest.mark.parametrize("flag", ["--isolation", None])
def test_the_flag_overrides_the_config(harness, flag):
    shop(harness)
    harness.config({"isolation": "suffix"})
    args = ["render", "--flow", "pr-1", "--service", "api=api:2", "--stdout"]
    out = harness.cli(*args, *(["--isolation", "namespace"] if flag else []))
    assert out.returncode == 0, out.stderr
    assert ("namespace: shop-pr-1" in out.stdout) == bool(flag)
    assert ("name: api-pr-1" in out.stdout) != bool(flag)


def test_the_lane_invariants_catch_what_a_plugin_could_break(harness):
    """`invariants.check_lane` on the final objects: an object in the baseline namespace, an alias of a service
    that has a dev copy, a missing alias, a ConfigMap the dev pod reads missing from its namespace."""
    import copy

    from renderer.errors import Diagnostics
    from renderer.render.checks import invariants

    cm = yaml_doc({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "api-config", "namespace": "shop"},
                   "data": {"LOG": "debug"}})
    shop(harness, extra=cm, env_from=[{"configMapRef": {"name": "api-config"}}])
    result = harness.render("pr-1", {"api": "api:2"})
    final = [o for f in result.flows for o in f.objects]

    def problems(objects: list[dict]) -> list[str]:
        diags = Diagnostics()
        invariants.check_lane(result.model, result.dev, objects, diags, {})
        return [p.message for p in diags.problems]

    assert problems(final) == []
    leaked = copy.deepcopy(next(o for o in final if o["kind"] == "ConfigMap"))
    leaked["metadata"]["namespace"] = "shop"
    assert problems([*final, leaked]) == [
        "isolation violated: ConfigMap/api-config is rendered in namespace shop, outside the flow's namespaces "
        "(shop-pr-1)"]
    alias = copy.deepcopy(next(o for o in final if (o.get("spec") or {}).get("type") == "ExternalName"))
    alias["metadata"]["annotations"]["devlane.dev/alias-of"] = "shop/db"
    assert any("points at the baseline shop/db, which has a dev version" in m for m in problems([*final, alias]))
    without_db = [o for o in final if not (o["kind"] == "Service" and o["metadata"]["name"] == "db")]
    assert any("depends on db, which resolves to nothing in shop-pr-1" in m for m in problems(without_db))
    without_cm = [o for o in final if o["kind"] != "ConfigMap"]
    assert any("reads ConfigMap api-config, which is not in shop-pr-1" in m for m in problems(without_cm))


# --- what a pod needs in its namespace --------------------------------------------------------------


def obj(kind: str, name: str, api: str = "v1", ns: str | None = "shop", **rest) -> str:
    return yaml_doc({"apiVersion": api, "kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {}),
                                                                   **rest.pop("meta", {})}, **rest})


def test_the_service_account_and_its_rbac_are_copied(harness):
    rbac = (obj("ServiceAccount", "api-sa")
            + obj("Role", "api-reader", "rbac.authorization.k8s.io/v1",
                  rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
            + obj("RoleBinding", "api-reader", "rbac.authorization.k8s.io/v1",
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "api-reader"},
                  subjects=[{"kind": "ServiceAccount", "name": "api-sa", "namespace": "shop"}])
            + obj("ClusterRoleBinding", "api-nodes", "rbac.authorization.k8s.io/v1", ns=None,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                  subjects=[{"kind": "ServiceAccount", "name": "api-sa", "namespace": "shop"}]))
    harness.write("app.yaml", service("api") + deployment("api", serviceAccountName="api-sa") + rbac)
    harness.config(NS)
    result = harness.render("pr-1", {"api": "api:2"})
    got = objects(result)
    assert ("ServiceAccount", "shop-pr-1", "api-sa") in got and ("Role", "shop-pr-1", "api-reader") in got
    assert got["RoleBinding", "shop-pr-1", "api-reader"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "api-sa", "namespace": "shop-pr-1"}]
    assert not any(kind == "ClusterRoleBinding" for kind, _, _ in got)
    [warning] = [p for p in result.warnings if p.code == "namespace-rbac"]
    assert "ClusterRoleBinding api-nodes binds ServiceAccount shop/api-sa, not its copy in shop-pr-1" in warning.message


EXTERNAL_SECRET = "external-secrets.io/v1"


def with_secret(harness, extra: str, config: dict | None = None) -> object:
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "api-db", "key": "password"}}}]
    harness.write("app.yaml", service("api") + deployment("api", env=env) + extra)
    harness.config({**NS, **(config or {})})
    return harness.render("pr-1", {"api": "api:2"})


def test_an_external_secret_and_its_store_are_copied(harness):
    store = obj("SecretStore", "vault", EXTERNAL_SECRET, spec={"provider": {"fake": {"data": []}}})
    es = obj("ExternalSecret", "api-db-es", EXTERNAL_SECRET, spec={
        "secretStoreRef": {"name": "vault", "kind": "SecretStore"}, "target": {"name": "api-db"},
        "data": [{"secretKey": "password", "remoteRef": {"key": "api/db", "property": "password"}}]})
    result = with_secret(harness, store + es)
    got = objects(result)
    assert got["ExternalSecret", "shop-pr-1", "api-db-es"]["spec"]["target"] == {"name": "api-db"}
    crd = CRDS / "external-secrets" / "external-secrets.io_externalsecrets.yaml"
    if crd.exists():  # the copy is what the External Secrets operator accepts (its upstream CRD, v1)
        import jsonschema

        schema = next(v for v in yamlc.safe_load(crd.read_text())["spec"]["versions"] if v["name"] == "v1")
        jsonschema.Draft7Validator(schema["schema"]["openAPIV3Schema"]).validate(
            got["ExternalSecret", "shop-pr-1", "api-db-es"])
    assert ("SecretStore", "shop-pr-1", "vault") in got
    assert not any(kind == "Secret" for kind, _, _ in got)
    assert not [p for p in result.warnings if p.code == "namespace-missing"]


def test_a_sealed_secret_is_copied_only_when_cluster_wide(harness):
    sealed = obj("SealedSecret", "api-db", "bitnami.com/v1alpha1", spec={"encryptedData": {"password": "AgB..."}})
    result = with_secret(harness, sealed)
    assert not any(kind == "SealedSecret" for kind, _, _ in objects(result))
    [warning] = [p for p in result.warnings if p.code == "namespace-missing"]
    assert "SealedSecret api-db is sealed to namespace shop: the controller cannot decrypt a copy in shop-pr-1" in \
        warning.message
    wide = obj("SealedSecret", "api-db", "bitnami.com/v1alpha1",
               meta={"annotations": {"sealedsecrets.bitnami.com/cluster-wide": "true"}},
               spec={"encryptedData": {"password": "AgB..."}})
    assert ("SealedSecret", "shop-pr-1", "api-db") in objects(with_secret(harness, wide))


@pytest.mark.parametrize("replicator,annotation,allow", [
    ("reflector", "reflector.v1.k8s.emberstack.com/reflects", "reflector.v1.k8s.emberstack.com/reflection-allowed"),
    ("kubernetes-replicator", "replicator.v1.mittwald.de/replicate-from",
     "replicator.v1.mittwald.de/replication-allowed"),
])  # fmt: skip
def test_secrets_mirror_renders_an_empty_secret_for_the_replicator(harness, replicator, annotation, allow):
    secret = obj("Secret", "api-db", type="kubernetes.io/basic-auth", stringData={"password": "s3cret"})
    result = with_secret(harness, secret, {"secrets": {"mirror": True, "replicator": replicator}})
    mirror = objects(result)["Secret", "shop-pr-1", "api-db"]
    assert mirror["metadata"]["annotations"] == {annotation: "shop/api-db"}
    assert mirror["type"] == "kubernetes.io/basic-auth" and "data" not in mirror and "stringData" not in mirror
    [warning] = [p for p in result.warnings if p.code == "namespace-mirror"]
    assert f'annotate the Secret with {allow}: "true"' in warning.hint
    allowed = obj("Secret", "api-db", meta={"annotations": {allow: "true", allow + "-namespaces": "shop-.*"}})
    result = with_secret(harness, allowed, {"secrets": {"mirror": True, "replicator": replicator}})
    assert not [p for p in result.warnings if p.code.startswith("namespace-")]


def test_a_per_pod_name_of_a_headless_service_is_a_warning(harness):
    headless = yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "shop"},
                         "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}})
    env = [{"name": "PRIMARY_HOST", "value": "db-0.db"}]
    harness.write("app.yaml", service("api") + deployment("api", env=env) + headless + deployment("db"))
    harness.config(NS)
    result = harness.render("pr-1", {"api": "api:2"})
    [warning] = [p for p in result.warnings if p.code == "namespace-headless"]
    assert "uses db-0.db, a per-pod name of the headless Service db" in warning.message
    assert "db-0.db.shop.svc.cluster.local" in warning.hint


def test_a_gateway_in_another_namespace_must_admit_the_flow_namespace(harness):
    gateway = obj("Gateway", "public", "gateway.networking.k8s.io/v1", ns="infra", spec={
        "gatewayClassName": "eg", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
                                                 "hostname": "*.example.com"}]})
    route = obj("HTTPRoute", "shop", "gateway.networking.k8s.io/v1",
                meta={"annotations": {K + "route": "true"}},
                spec={"parentRefs": [{"name": "public", "namespace": "infra"}], "hostnames": ["shop.example.com"],
                      "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]})
    shop(harness, extra=gateway + route)
    result = harness.render("pr-1", {"web": "web:2"})
    got = objects(result)
    copy = got["HTTPRoute", "shop-pr-1", "shop"]
    assert copy["spec"]["parentRefs"] == [{"name": "public", "namespace": "infra"}]
    [warning] = [p for p in result.warnings if p.code == "namespace-gateway"]
    assert "Gateway infra/public does not admit routes from shop-pr-1" in warning.message
    assert "allowedRoutes.namespaces.from: Selector" in warning.hint


def test_network_policies_are_copied_and_a_blocking_one_is_named(harness):
    own = obj("NetworkPolicy", "api-ingress", "networking.k8s.io/v1", spec={
        "podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]})
    catalog = obj("NetworkPolicy", "catalog-same-ns", "networking.k8s.io/v1", spec={
        "podSelector": {"matchLabels": {"app": "catalog"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {}}]}]})
    shop(harness, extra=own + catalog)
    result = harness.render("pr-1", {"api": "api:2"})
    got = objects(result)
    assert got["NetworkPolicy", "shop-pr-1", "api-ingress"]["spec"]["podSelector"] == {
        "matchLabels": {"app": "api"}}  # the labels did not change, neither does the policy
    assert ("NetworkPolicy", "shop-pr-1", "catalog-same-ns") not in got
    names = [p.message for p in result.warnings if p.code == "namespace-policy"]
    assert len(names) == 1 and "NetworkPolicy catalog-same-ns in shop admits only pods of its own namespace" in names[0]


def test_a_secret_a_plugin_makes_is_not_reported(harness):
    """`provide_secrets` runs on the pods as plugins left them, with what plugins added."""
    from renderer.render.copies import flow_namespace

    result = with_secret(harness, "")
    assert [p.code for p in result.warnings if p.code == "namespace-missing"] == ["namespace-missing"]
    made = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "api-db"}, "stringData": {"password": "t"}}
    for objects, reported in (([made], 0), ([], 1)):
        _, problems = flow_namespace.provide_secrets(result.model, result.dev, objects)
        assert len([p for p in problems if p.code == "namespace-missing"]) == reported


# --- OpenTelemetry auto-instrumentation in the flow namespace (issue 44, point 7) -----------------------------------

OTEL = "opentelemetry.io/v1alpha1"
CRD = yaml_doc({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "instrumentations.opentelemetry.io"},
                "spec": {"group": "opentelemetry.io", "scope": "Namespaced", "versions": [],
                         "names": {"kind": "Instrumentation", "plural": "instrumentations"}}})


def instrumented(harness, inject: str, extra: str = "") -> object:
    """api's pods ask the OpenTelemetry Operator for a Java agent (`inject-java: <inject>`)."""
    doc = next(d for d in yamlc.safe_load_all(deployment("api")) if d)
    doc["spec"]["template"]["metadata"]["annotations"] = {"instrumentation.opentelemetry.io/inject-java": inject}
    harness.write("app.yaml", service("api") + yaml_doc(doc) + extra)
    harness.config(NS)
    return harness.render("pr-1", {"api": "api:2"})


@pytest.mark.parametrize("inject", ["true", "java"])
def test_the_instrumentation_a_dev_pod_names_is_copied_with_baggage_among_its_propagators(harness, inject):
    """The Operator looks for the Instrumentation in the pod's own namespace: the flow namespace gets a copy, with
    the lane's propagators added to its own (a copy without baggage would drop the routing header)."""
    spec = {"exporter": {"endpoint": "http://otel-collector.observability:4317"}, "propagators": ["b3"]}
    result = instrumented(harness, inject, obj("Instrumentation", "java", OTEL, spec=spec)
                          + obj("Instrumentation", "other", OTEL, spec={}))
    got = objects(result)
    copy = got["Instrumentation", "shop-pr-1", "java"]
    assert copy["spec"] == {"exporter": {"endpoint": "http://otel-collector.observability:4317"},
                            "propagators": ["b3", "tracecontext", "baggage"]}
    assert copy["metadata"]["labels"]["devlane.dev/flow"] == "pr-1"
    assert ("Instrumentation", "shop-pr-1", "other") not in got
    assert not [p for p in result.warnings if "Instrumentation" in p.message]


def test_with_only_the_operators_crd_the_lane_gets_an_instrumentation_of_its_own(harness):
    result = instrumented(harness, "true", CRD)
    made = objects(result)["Instrumentation", "shop-pr-1", "devlane-lane"]
    assert (made["apiVersion"], made["spec"]) == (OTEL, {"propagators": ["tracecontext", "baggage"]})


@pytest.mark.parametrize(("inject", "named"), [("true", False), ("java", True)])
def test_an_instrumentation_the_flow_namespace_cannot_have_is_a_warning(harness, inject, named):
    result = instrumented(harness, inject)
    assert not [k for k in objects(result) if k[0] == "Instrumentation"]
    [warning] = [p for p in result.warnings if p.code == "namespace-missing"]
    assert ("names Instrumentation java, which is not in the repository" if named else
            "asks the OpenTelemetry Operator for an agent, but the repository has no Instrumentation") in \
        warning.message and "baggage stops" in warning.message


@pytest.mark.parametrize("inject", ["shop/java", "false"])
def test_an_instrumentation_in_another_namespace_or_none_needs_nothing(harness, inject):
    result = instrumented(harness, inject)
    assert not [k for k in objects(result) if k[0] == "Instrumentation"]
    assert not [p for p in result.warnings if "Instrumentation" in p.message]
