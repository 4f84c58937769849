"""What `renderer.render.plugins.object_refs` reads that the per-path tests leave open (issue 41, mutation testing):
an Ingress backend's Service and an EndpointSlice's service-name label (a name that is not the flow's is refused,
naming the field), a field that does not say its kind (the named object's kind counts), a binding's role and
subjects, a `{name, key}` selector carrying every key it may, a PodMonitor's pods, a reference after a nested
subtree, the Azure owner (shared, read once, not walked into), and the kinds of what kinds share on purpose."""

from __future__ import annotations

import pytest
from support.policy_lane import NS, added, obj

from renderer.render.plugins.object_refs import references

FLOWS = "a plugin's objects reference only the flow's own (named <name>-pr-7, in its namespaces)"
RBAC = "rbac.authorization.k8s.io/v1"
AZURE = "sql.azure.com/v1api20211101"


def refusal(path: str, names: str) -> str:
    return f"(rule reference): {path} names {names}: {FLOWS}"


def ingress(**spec) -> dict:
    return obj("networking.k8s.io/v1", "Ingress", "i-pr-7", spec=spec)


def external_secret(key: str, source: dict) -> dict:
    return obj(
        "external-secrets.io/v1",
        "ExternalSecret",
        "e-pr-7",
        spec={"target": {"name": "t-pr-7"}, key: [{"sourceRef": source}]},
    )


# case -> (the object, given the Service name it gives; the field)
SERVICE_NAMES = {
    "Ingress defaultBackend service": (
        lambda name: ingress(defaultBackend={"service": {"name": name, "port": {"number": 80}}}),
        "spec.defaultBackend.service",
    ),
    "Ingress path service": (
        lambda name: ingress(
            rules=[
                {"host": "a"},
                {"http": {"paths": [{"path": "/", "backend": {"service": {"name": name, "port": {"name": "http"}}}}]}},
            ]
        ),
        "spec.rules[1].http.paths[0].backend.service",
    ),
    "EndpointSlice service-name": (
        lambda name: obj(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            "e-pr-7",
            meta={"labels": {"kubernetes.io/service-name": name}},
            endpoints=[],
        ),
        "metadata.labels.kubernetes.io/service-name",
    ),
}


@pytest.mark.parametrize("case", sorted(SERVICE_NAMES))
def test_a_service_name_that_is_not_the_flows_is_refused_naming_the_field(case):
    """`web` is no baseline object (the isolation rule's) and not named for the flow: the reference rule's."""
    build, path = SERVICE_NAMES[case]
    assert [(r.path, r.kind, r.name) for r in references(build("web")) if r.name] == [(path, "Service", "web")]
    assert added(build("web")) == [refusal(path, "Service/web, which is not an object of the flow")]
    assert added(build("web-pr-7")) == []


# case -> (a reference field that does not say the kind, naming the baseline ConfigMap cfg; its path)
KINDLESS = {
    "Ingress defaultBackend resource": (
        ingress(defaultBackend={"resource": {"apiGroup": "", "name": "cfg"}}),
        "spec.defaultBackend.resource",
    ),
    "Ingress path resource": (
        ingress(rules=[{"http": {"paths": [{"path": "/", "backend": {"resource": {"name": "cfg"}}}]}}]),
        "spec.rules[0].http.paths[0].backend.resource",
    ),
    "ExternalSecret data generatorRef": (
        external_secret("data", {"generatorRef": {"name": "cfg"}}),
        "spec.data[0].sourceRef.generatorRef",
    ),
    "ExternalSecret dataFrom generatorRef": (
        external_secret("dataFrom", {"generatorRef": {"name": "cfg"}}),
        "spec.dataFrom[0].sourceRef.generatorRef",
    ),
}


@pytest.mark.parametrize("case", sorted(KINDLESS))
def test_a_reference_that_does_not_say_its_kind_is_to_whatever_object_has_the_name(case):
    """Kind "" (unsaid): the policy takes the kind of the namespace's object of that name, so the baseline
    ConfigMap is found and refused as such."""
    thing, path = KINDLESS[case]
    assert [(r.kind, r.name) for r in references(thing) if r.path == path] == [("", "cfg")]
    assert added(thing) == [refusal(path, "the baseline ConfigMap/cfg")]


@pytest.mark.parametrize("kind", ["RoleBinding", "ClusterRoleBinding"])
def test_a_binding_names_its_role_and_its_service_account_subjects(kind):
    """roleRef is a Role unless it says otherwise; only ServiceAccount subjects are objects of a namespace."""
    binding = obj(
        RBAC,
        kind,
        "b-pr-7",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "name": "view"},
        subjects=[
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "sa-pr-7", "namespace": "prod"},
        ],
    )
    assert [(r.path, r.kind, r.name, r.namespace) for r in references(binding)] == [
        ("roleRef", "Role", "view", None),
        ("subjects[1]", "ServiceAccount", "sa-pr-7", "prod"),
    ]
    cluster_role = {**binding, "roleRef": {"kind": "ClusterRole", "name": "view"}}
    assert next((r.path, r.kind) for r in references(cluster_role)) == ("roleRef", "ClusterRole")
    assert (
        "(rule rbac): it grants its rights to ServiceAccount sa-pr-7 of namespace prod, not to a ServiceAccount "
        "of the flow"
    ) in added(binding)


def test_a_secret_key_selector_with_every_key_it_may_carry_is_read():
    """{name, key, optional, namespace}: all four, not fewer, still make a Secret key selector."""
    db = obj(
        "rds.services.k8s.aws/v1alpha1",
        "DBInstance",
        "d-pr-7",
        spec={"masterUserPassword": {"name": "creds", "key": "password", "optional": False, "namespace": NS}},
    )
    assert [(r.path, r.kind, r.name, r.namespace) for r in references(db)] == [
        ("spec.masterUserPassword", "Secret", "creds", NS)
    ]
    assert added(db) == [refusal("spec.masterUserPassword", "the baseline Secret/creds")]


@pytest.mark.parametrize(("kind", "selects"), [("PodMonitor", "Pod"), ("ServiceMonitor", "Service")])
def test_a_monitor_selects_the_kind_it_scrapes(kind, selects):
    monitor = obj("monitoring.coreos.com/v1", kind, "m-pr-7", spec={"selector": {"matchLabels": {"app": "x"}}})
    assert [(r.path, r.kind) for r in references(monitor)] == [("spec.selector", selects)]


def test_a_reference_after_a_nested_field_is_still_found():
    """The walk goes on past a subtree it went into (listeners) to the keys after it."""
    gateway = obj(
        "gateway.networking.k8s.io/v1",
        "Gateway",
        "g-pr-7",
        spec={
            "gatewayClassName": "istio",
            "listeners": [{"name": "http", "port": 80}],
            "infrastructure": {"parametersRef": {"group": "", "kind": "ConfigMap", "name": "cfg"}},
        },
    )
    assert [r.path for r in references(gateway)] == ["spec.infrastructure.parametersRef"]
    assert added(gateway) == [refusal("spec.infrastructure.parametersRef", "the baseline ConfigMap/cfg")]


def test_the_azure_owner_is_shared_as_what_it_is_and_not_walked_into():
    """The owner is accepted unfollowed, kind and all, and what it holds is not read as the object's references;
    a `*Reference` nested anywhere else is."""
    db = obj(
        AZURE,
        "ServersDatabase",
        "d-pr-7",
        spec={
            "owner": {"kind": "Server", "name": "db", "poolReference": {"kind": "ServersElasticPool", "name": "p"}},
            "properties": {"elasticPoolReference": {"kind": "ServersElasticPool", "name": "pool"}},
        },
    )
    assert [(r.path, r.kind, r.name, r.shared) for r in references(db)] == [
        ("spec.owner", "Server", "db", "the Azure resource the object lives on (its owner), which every flow's shares"),
        ("spec.properties.elasticPoolReference", "ServersElasticPool", "pool", ""),
    ]
    assert added(db) == [
        refusal("spec.properties.elasticPoolReference", "ServersElasticPool/pool, which is not an object of the flow")
    ]


# case -> (the object, the path of its shared reference, the kind it names)
SHARED_KINDS = {
    "ExternalSecret store": (
        obj(
            "external-secrets.io/v1",
            "ExternalSecret",
            "e-pr-7",
            spec={"secretStoreRef": {"name": "vault"}, "target": {"name": "t-pr-7"}},
        ),
        "spec.secretStoreRef",
        "SecretStore",
    ),
    "ExternalSecret data store": (
        external_secret("data", {"storeRef": {"name": "vault"}}),
        "spec.data[0].sourceRef.storeRef",
        "SecretStore",
    ),
    "ExternalSecret dataFrom store": (
        external_secret("dataFrom", {"storeRef": {"name": "vault"}}),
        "spec.dataFrom[0].sourceRef.storeRef",
        "SecretStore",
    ),
    "KafkaTopic cluster": (
        obj("kafka.strimzi.io/v1beta2", "KafkaTopic", "t-pr-7", meta={"labels": {"strimzi.io/cluster": "events"}}),
        "metadata.labels.strimzi.io/cluster",
        "Kafka",
    ),
}


@pytest.mark.parametrize("case", sorted(SHARED_KINDS))
def test_what_a_kind_shares_names_the_kind_of_the_shared_object(case):
    thing, path, kind = SHARED_KINDS[case]
    assert [(r.path, r.kind) for r in references(thing) if r.shared] == [(path, kind)]
