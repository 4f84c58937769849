"""The cluster DNS model (`support.dns`) answers names the way a pod's search path and the cluster DNS would,
and the `namespace`-isolation checker built on it can fail: each property, violated in a small hand-written
flow, is reported in words; the correct flow reports nothing."""

from __future__ import annotations

import pytest
from support.dns import ClusterDNS, check_namespace_flow

FLOW = "pr-1"
FLOW_LABEL = {"devlane.dev/flow": FLOW}


def service(name, ns, selector=None, deps=None, ports=(("http", 80),), **spec):
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    if deps:
        meta["annotations"] = {"kardinal.dev.service/dependencies": deps}
    body = {"ports": [{"name": n, "port": p} for n, p in ports], **spec}
    if selector:
        body["selector"] = dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": body}


def alias(name, ns, target, ports=(("http", 80),)):
    return service(name, ns, ports=ports, type="ExternalName", externalName=target)


def workload(name, ns, labels, kind="Deployment", env=(), env_from=(), volumes=()):
    c = {"name": "main", "image": f"example/{name}:1"}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env]
    if env_from:
        c["envFrom"] = [{"configMapRef": {"name": n}} for n in env_from]
    spec = {"selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [c]}}}  # fmt: skip
    if volumes:
        spec["template"]["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": v}}
                                               for v in volumes]  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def config_map(name, ns, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": dict(data)}


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def pvc(name, ns):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip


WEB_ENV = (("CART_URL", "http://cart:80"), ("REDIS_ADDR", "redis:6379"), ("STRIPE_URL", "https://stripe:443"))
BASE_PAYMENTS = "http://payments.pay.svc.cluster.local:80"
DEV_PAYMENTS = f"http://payments.pay-{FLOW}.svc.cluster.local:80"
DB = {"clusterIP": "None"}


def baseline():
    """shop: web -> cart, redis, payments.pay; cart -> redis, db (headless, a StatefulSet with a claim);
    stripe is an ExternalName Service out of the cluster. pay: payments."""
    return [
        namespace("shop"),
        service("web", "shop", {"app": "web"}, deps="cart:http,redis:6379,payments.pay:http"),
        workload("web", "shop", {"app": "web"}, env=[*WEB_ENV, ("PAYMENTS_URL", BASE_PAYMENTS)]),
        service("cart", "shop", {"app": "cart"}, deps="redis:6379,db:5432"),
        workload("cart", "shop", {"app": "cart"}, env_from=["cart-config"]),
        config_map("cart-config", "shop", {"REDIS_HOST": "redis", "DB_HOST": "db"}),
        service("redis", "shop", {"app": "redis"}, ports=(("redis", 6379),)),
        workload("redis", "shop", {"app": "redis"}),
        service("db", "shop", {"app": "db"}, ports=(("tcp", 5432),), **DB),
        workload("db", "shop", {"app": "db"}, kind="StatefulSet", volumes=["data"]),
        pvc("data", "shop"),
        service("stripe", "shop", ports=(), type="ExternalName", externalName="api.stripe.com"),
        namespace("pay"),
        service("payments", "pay", {"app": "payments"}),
        workload("payments", "pay", {"app": "payments"}),
    ]


def dev(labels):
    return {**labels, **FLOW_LABEL}


def rendered():
    """A correct flow: web, cart and payments have dev versions; redis, db and stripe are aliases in shop-pr-1;
    web's address of payments, in another namespace, is rewritten to pay-pr-1."""
    shop, pay = f"shop-{FLOW}", f"pay-{FLOW}"
    return [
        namespace(shop),
        service("web", shop, dev({"app": "web"}), deps="cart:http,redis:6379,payments.pay:http"),
        workload("web", shop, dev({"app": "web"}), env=[*WEB_ENV, ("PAYMENTS_URL", DEV_PAYMENTS)]),
        service("cart", shop, dev({"app": "cart"})),
        workload("cart", shop, dev({"app": "cart"}), env_from=["cart-config"]),
        config_map("cart-config", shop, {"REDIS_HOST": "redis", "DB_HOST": "db"}),
        alias("redis", shop, "redis.shop.svc.cluster.local", ports=(("redis", 6379),)),
        alias("db", shop, "db.shop.svc.cluster.local", ports=(("tcp", 5432),)),
        alias("stripe", shop, "stripe.shop.svc.cluster.local", ports=()),
        namespace(pay),
        service("payments", pay, dev({"app": "payments"})),
        workload("payments", pay, dev({"app": "payments"})),
    ]


def find(objects, kind, name, ns=f"shop-{FLOW}"):
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name
                and o["metadata"].get("namespace") == ns)  # fmt: skip


def without(objects, kind, name, ns=f"shop-{FLOW}"):
    gone = find(objects, kind, name, ns)
    return [o for o in objects if o is not gone]


def set_env(objects, workload_name, key, value):
    env = find(objects, "Deployment", workload_name)["spec"]["template"]["spec"]["containers"][0]["env"]
    next(e for e in env if e["name"] == key)["value"] = value


def messages(violations, kind=None):
    return [str(v) for v in violations if kind is None or v.kind == kind]


def cluster(*objects, **kwargs):
    return ClusterDNS([*baseline(), *rendered(), *objects], **kwargs)


# -- the resolver --------------------------------------------------------------------------------------------------


def test_a_short_name_is_the_service_of_the_pods_namespace():
    dns = cluster()
    assert dns.resolve("cart", "shop").key == ("shop", "cart")
    assert dns.resolve("cart", "shop-pr-1").key == ("shop-pr-1", "cart")
    through = dns.resolve("redis", "shop-pr-1")
    assert (through.key, through.chain) == (("shop", "redis"), (("shop-pr-1", "redis"), ("shop", "redis")))
    assert through.path() == "redis -> shop-pr-1/redis -> shop/redis"
    assert dns.resolve("payments", "shop").reason == "no Service shop/payments"


@pytest.mark.parametrize("host", ["payments.pay", "payments.pay.svc", "payments.pay.svc.cluster.local",
                                  "payments.pay.svc.cluster.local.", "Payments.Pay.svc"])  # fmt: skip
def test_a_qualified_name_is_the_service_of_its_namespace_from_anywhere(host):
    dns = cluster()
    assert dns.resolve(host, "shop").key == ("pay", "payments")
    assert dns.resolve(host, "shop-pr-1").chain == (("pay", "payments"),)


def test_the_cluster_domain_is_a_parameter():
    dns = cluster(cluster_domain="example.internal")
    assert dns.resolve("payments.pay.svc.example.internal", "shop").key == ("pay", "payments")
    assert dns.resolve("payments.pay.svc.cluster.local", "shop").key is None
    assert dns.resolve("payments.pay", "shop").key == ("pay", "payments")


def test_names_of_no_service_resolve_to_nothing_or_leave_the_cluster():
    dns = cluster()
    assert dns.resolve("ghost.pay", "shop").reason == "no Service pay/ghost"
    assert dns.resolve("ghost.pay.svc.cluster.local.", "shop").reason == "no Service pay/ghost"
    assert dns.resolve("localhost", "shop").reason == "no Service shop/localhost"
    for absolute in ("cart.", "payments.pay."):  # no search path, and not in the cluster's zone
        assert dns.resolve(absolute, "shop").reason == f"{absolute} is absolute (a trailing dot: no search path) " \
                                                       "and outside cluster.local"
    assert dns.resolve("my_host", "shop").reason == "'my_host' is no DNS name"
    public = dns.resolve("api.example.com", "shop")
    assert (public.key, public.external, public.resolved) == (None, "api.example.com", True)
    assert dns.resolve("a.b.c.d.e.example.com", "shop").external == "a.b.c.d.e.example.com"  # ndots: asked as is


def chain_of(*links, max_hops=8):
    """Services in namespace x: each (name, target) an ExternalName, a target of None a plain Service."""
    objs = [alias(n, "x", t) if t else service(n, "x", {"app": n}) for n, t in links]
    return ClusterDNS(objs, max_hops=max_hops)


def test_external_name_services_are_followed_as_cnames():
    dns = ClusterDNS([alias("a", "x", "b.y.svc.cluster.local"), alias("b", "y", "c.z.svc.cluster.local."),
                      service("c", "z", {"app": "c"})])  # fmt: skip
    res = dns.resolve("a", "x")
    assert (res.key, res.chain) == (("z", "c"), (("x", "a"), ("y", "b"), ("z", "c")))
    assert str(res) == "a -> x/a -> y/b -> z/c"


def test_a_cname_loop_and_a_long_chain_resolve_to_nothing():
    loop = chain_of(("a", "b.x.svc.cluster.local"), ("b", "a.x.svc.cluster.local")).resolve("a", "x")
    assert (loop.key, loop.reason) == (None, "CNAME loop: x/a -> x/b -> x/a")
    links = [(f"s{i}", f"s{i + 1}.x.svc.cluster.local") for i in range(4)] + [("s4", None)]
    assert chain_of(*links).resolve("s0", "x").key == ("x", "s4")
    assert chain_of(*links, max_hops=3).resolve("s0", "x").reason == "more than 3 CNAME hops"


def test_an_external_name_out_of_the_cluster_is_an_external_host():
    res = cluster().resolve("stripe", "shop-pr-1")
    assert (res.key, res.external, res.resolved) == (None, "api.stripe.com", True)
    assert res.chain == (("shop-pr-1", "stripe"), ("shop", "stripe"))


@pytest.mark.parametrize(("target", "reason"), [
    ("ghost.shop.svc.cluster.local", "x/a is an alias of ghost.shop.svc.cluster.local: no Service shop/ghost"),
    ("cart.shop", "x/a is an alias of cart.shop: no Service shop/cart"),  # not absolute in the cluster's zone
    ("cart", "x/a is an alias of cart: one label, and a CNAME target is not searched"),
])  # fmt: skip
def test_an_external_name_meant_for_the_cluster_that_names_nothing(target, reason):
    dns = ClusterDNS([*baseline(), alias("a", "x", target)])
    assert dns.resolve("a", "x").reason == reason


def test_per_pod_names_of_a_headless_service():
    dns = cluster()
    for host, ns in [("db-0.db", "shop"), ("db-0.db.shop.svc.cluster.local", "shop-pr-1"),
                     ("db-0.db.shop.svc.cluster.local.", "pay")]:  # fmt: skip
        res = dns.resolve(host, ns)
        assert (res.key, res.pod) == (("shop", "db"), "db-0"), host
    refused = dns.resolve("db-0.db", "shop-pr-1")
    assert (refused.key, refused.resolved) == (None, False)
    assert refused.reason == "db-0: Service shop-pr-1/db is an ExternalName Service, so it has no per-pod records"
    assert "not headless" in dns.resolve("cart-0.cart", "shop").reason
    assert dns.resolve("db-0.db.shop-pr-1.svc.cluster.local", "shop").key is None


def test_objects_without_a_namespace_are_in_the_default_one():
    objs = [service("redis", None, {"app": "redis"})]
    assert ClusterDNS(objs).resolve("redis", None).key == (None, "redis")
    assert ClusterDNS(objs).resolve("redis", "shop").key is None
    placed = ClusterDNS(objs, default_namespace="shop")
    assert placed.resolve("redis", "shop").key == ("shop", "redis")
    assert placed.resolve("redis.shop", "pay").key == ("shop", "redis")


# -- the flow checker ----------------------------------------------------------------------------------------------


def test_a_correct_flow_reports_nothing():
    assert check_namespace_flow(baseline(), rendered(), FLOW) == []


def test_a_missing_alias_is_reported_and_its_short_name_resolves_to_nothing():
    violations = check_namespace_flow(baseline(), without(rendered(), "Service", "redis"), FLOW)
    assert messages(violations, "alias") == [
        "baseline Service shop/redis has neither a dev version nor an alias in shop-pr-1"]
    nothing = "redis does not resolve from shop-pr-1: no Service shop-pr-1/redis"
    assert messages(violations, "dns") == [
        f"Deployment shop-pr-1/web container main env REDIS_ADDR: {nothing}",
        f"Deployment shop-pr-1/web: dependency {nothing}",
        f"Deployment shop-pr-1/cart container main envFrom ConfigMap shop-pr-1/cart-config (rendered) key REDIS_HOST: "
        f"{nothing}",
        f"Deployment shop-pr-1/cart: dependency {nothing}",
    ]


def test_an_alias_of_a_service_with_a_dev_version_is_reported():
    violations = check_namespace_flow(baseline(), [*rendered(), alias("cart", f"shop-{FLOW}",
                                                                      "cart.shop.svc.cluster.local")], FLOW)
    assert set(messages(violations, "alias")) == {
        "the flow renders 2 Services shop-pr-1/cart",
        "alias shop-pr-1/cart points at baseline shop/cart, which has a dev version shop-pr-1/cart"}
    assert "Deployment shop-pr-1/web: dependency cart resolves to shop/cart (baseline, through shop-pr-1/cart) but " \
           "the flow has a dev version shop-pr-1/cart" in messages(violations, "dns")


@pytest.mark.parametrize(("target", "ports", "expected"), [
    ("redis.shop", (("redis", 6379),),
     ["alias shop-pr-1/redis points at 'redis.shop', which is no Service name of the cluster "
      "(expected redis.shop.svc.cluster.local)"]),
    ("redis.cache.svc.cluster.local", (("redis", 6379),),
     ["alias shop-pr-1/redis points at cache/redis; the short name redis in shop-pr-1 must reach shop/redis",
      "alias shop-pr-1/redis points at cache/redis, which is no baseline Service"]),
    ("cart.shop.svc.cluster.local", (("http", 80),),
     ["alias shop-pr-1/redis points at shop/cart; the short name redis in shop-pr-1 must reach shop/redis",
      "alias shop-pr-1/redis points at baseline shop/cart, which has a dev version shop-pr-1/cart"]),
    ("redis.shop.svc.cluster.local", (("redis", 6380),),
     ["alias shop-pr-1/redis has ports [redis 6380/TCP] but its baseline shop/redis has [redis 6379/TCP]"]),
    ("redis.shop.svc.cluster.local.", (("redis", 6379),), []),
])  # fmt: skip
def test_a_wrong_alias_is_reported(target, ports, expected):
    objs = [*without(rendered(), "Service", "redis"), alias("redis", f"shop-{FLOW}", target, ports=ports)]
    assert messages(check_namespace_flow(baseline(), objs, FLOW), "alias") == expected


def test_an_alias_that_sends_a_dependency_elsewhere_breaks_the_edge():
    objs = [*without(rendered(), "Service", "redis"), alias("redis", f"shop-{FLOW}", "db.shop.svc.cluster.local",
                                                            ports=(("redis", 6379),))]  # fmt: skip
    assert "Deployment shop-pr-1/cart: dependency redis resolves to shop/db (baseline, through shop-pr-1/redis), " \
           "not to the baseline shop/redis" in messages(check_namespace_flow(baseline(), objs, FLOW), "dns")


def test_a_fully_qualified_address_left_on_the_baseline_is_reported():
    objs = rendered()
    set_env(objs, "web", "PAYMENTS_URL", BASE_PAYMENTS)
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "Deployment shop-pr-1/web container main env PAYMENTS_URL: payments.pay.svc.cluster.local resolves to "
        "pay/payments (baseline) but the flow has a dev version pay-pr-1/payments",
        "Deployment shop-pr-1/web: dependency payments.pay resolves to pay/payments (baseline) but the flow has a "
        "dev version pay-pr-1/payments, and no address the pod reads reaches it",
    ]


def test_a_cross_namespace_edge_without_a_dev_version_reaches_the_baseline():
    objs = [o for o in rendered() if o["metadata"].get("namespace", o["metadata"]["name"]) != f"pay-{FLOW}"]
    set_env(objs, "web", "PAYMENTS_URL", BASE_PAYMENTS)
    assert check_namespace_flow(baseline(), objs, FLOW) == []
    set_env(objs, "web", "PAYMENTS_URL", DEV_PAYMENTS)  # rewritten to a flow namespace the flow does not have
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "Deployment shop-pr-1/web container main env PAYMENTS_URL: payments.pay-pr-1.svc.cluster.local does not "
        "resolve from shop-pr-1: no Service pay-pr-1/payments"]


def test_a_dependency_edge_is_checked_even_when_the_pod_reads_no_address_for_it():
    base = baseline()
    find(base, "Service", "web", "shop")["metadata"]["annotations"]["kardinal.dev.service/dependencies"] += \
        ",ghost:80,ledger.bank:80"
    assert messages(check_namespace_flow(base, rendered(), FLOW)) == [
        "Deployment shop-pr-1/web: dependency ghost does not resolve from shop-pr-1: no Service shop-pr-1/ghost",
        "Deployment shop-pr-1/web: dependency ledger.bank resolves to the external host ledger.bank, not to the "
        "baseline bank/ledger, and no address the pod reads reaches it",  # bank is no namespace of the cluster
    ]


def test_a_lone_workloads_dependencies_are_its_own():
    base = [*baseline(), workload("worker", "shop", {"app": "worker"})]
    base[-1]["metadata"]["annotations"] = {"kardinal.dev.service/dependencies": "queue:5672"}
    objs = [*rendered(), workload("worker", f"shop-{FLOW}", dev({"app": "worker"}))]
    assert messages(check_namespace_flow(base, objs, FLOW), "dns") == [
        "Deployment shop-pr-1/worker: dependency queue does not resolve from shop-pr-1: no Service shop-pr-1/queue"]


def test_per_pod_names_through_an_alias_are_reported_and_a_dev_headless_copy_answers_them():
    objs = rendered()
    find(objs, "ConfigMap", "cart-config")["data"]["DB_HOST"] = "db-0.db"
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "Deployment shop-pr-1/cart container main envFrom ConfigMap shop-pr-1/cart-config (rendered) key DB_HOST: "
        "db-0.db does not resolve from shop-pr-1: db-0: Service shop-pr-1/db is an ExternalName Service, so it has "
        "no per-pod records"]
    shop = f"shop-{FLOW}"
    objs = [*without(objs, "Service", "db"), service("db", shop, dev({"app": "db"}), ports=(("tcp", 5432),), **DB),
            workload("db", shop, dev({"app": "db"}), kind="StatefulSet", volumes=["data"]), pvc("data", shop)]
    assert check_namespace_flow(baseline(), objs, FLOW) == []


def test_values_that_name_no_service_are_left_alone():
    objs = rendered()
    env = find(objs, "Deployment", "web")["spec"]["template"]["spec"]["containers"][0]["env"]
    env += [{"name": "LOG_HOST", "value": "localhost"}, {"name": "API_URL", "value": "https://api.example.com"},
            {"name": "REDIS_PASSWORD", "value": "redis"}]  # fmt: skip
    assert check_namespace_flow(baseline(), objs, FLOW) == []
    env.append({"name": "QUEUE_ADDR", "value": "queue.shop.svc:5672"})
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "Deployment shop-pr-1/web container main env QUEUE_ADDR: queue.shop.svc does not resolve from shop-pr-1: "
        "no Service shop/queue"]


def test_an_object_outside_the_flow_namespaces_is_reported():
    objs = [*rendered(), config_map("extra", "shop", {}), config_map("other", "elsewhere", {}),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loose"}}, namespace("shop-pr1")]
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "rendered ConfigMap shop/extra sits in baseline namespace shop; its flow namespace is shop-pr-1",
        "rendered ConfigMap elsewhere/other is in namespace elsewhere, which is no flow namespace of pr-1 (pay-pr-1, "
        "shop-pr-1)",
        "rendered ConfigMap loose has no namespace",
        "rendered Namespace shop-pr1 is no flow namespace of pr-1 (pay-pr-1, shop-pr-1)",
    ]
    assert "rendered ConfigMap shop/loose sits in baseline namespace shop; its flow namespace is shop-pr-1" in \
        messages(check_namespace_flow(baseline(), objs, FLOW, default_namespace="shop"))


def test_a_flow_namespace_without_its_namespace_object_is_reported():
    assert messages(check_namespace_flow(baseline(), without(rendered(), "Namespace", "shop-pr-1", None), FLOW)) == [
        "flow namespace shop-pr-1 holds objects but the flow renders no Namespace shop-pr-1"]


def test_a_dev_pod_reading_a_config_map_or_claim_of_another_namespace_is_reported():
    objs = without(rendered(), "ConfigMap", "cart-config")
    shop = f"shop-{FLOW}"
    objs = [*without(objs, "Service", "db"), service("db", shop, dev({"app": "db"}), ports=(("tcp", 5432),), **DB),
            workload("db", shop, dev({"app": "db"}), kind="StatefulSet", volumes=["data"])]
    assert messages(check_namespace_flow(baseline(), objs, FLOW)) == [
        "Deployment shop-pr-1/cart reads ConfigMap cart-config, which its namespace shop-pr-1 does not hold (the "
        "baseline holds shop/cart-config)",
        "StatefulSet shop-pr-1/db mounts PersistentVolumeClaim data, which its namespace shop-pr-1 does not hold "
        "(the baseline holds shop/data)",
    ]


LONG = "inventory-management-service-with-a-rather-long-name-0123"  # 57 characters: 62 with -pr-1
LONGER = LONG + "456789"


def one_service(ns, labels=None):
    objs = [service("api", ns, labels or {"app": "api"}), workload("api", ns, labels or {"app": "api"})]
    return objs if labels is None else [namespace(ns), *objs]


def test_flow_namespace_names_follow_the_template():
    base = one_service(LONG)
    assert check_namespace_flow(base, one_service(f"{LONG}-{FLOW}", dev({"app": "api"})), FLOW) == []
    assert check_namespace_flow(base, one_service(f"{FLOW}-{LONG}", dev({"app": "api"})), FLOW,
                                template="{flow}-{namespace}") == []  # fmt: skip
    assert messages(check_namespace_flow(base, one_service(f"{FLOW}-{LONG}", dev({"app": "api"})), FLOW))[0] == \
        f"rendered Namespace {FLOW}-{LONG} is no flow namespace of pr-1 ({LONG}-pr-1)"


def test_a_shortened_flow_namespace_name_is_given_not_guessed():
    base, short = one_service(LONGER), "inventory-management-pr-1-3f9a"
    assert check_namespace_flow(base, one_service(short, dev({"app": "api"})), FLOW, namespaces={LONGER: short}) == []
    assert messages(check_namespace_flow(base, one_service(short, dev({"app": "api"})), FLOW))[0] == (
        f"rendered Namespace {short} is no flow namespace of pr-1 ({LONGER}-pr-1) (the template gives "
        f"{LONGER}-pr-1, over 63 characters: pass namespaces= with the names devlane chose)")
    assert messages(check_namespace_flow(base, one_service(f"{LONGER}-{FLOW}", dev({"app": "api"})), FLOW)) == [
        f"flow namespace {LONGER}-pr-1 is no valid namespace name (a DNS label of at most 63 characters)"]


def test_baseline_objects_without_a_namespace_need_the_default_one():
    base = baseline()
    for o in base:
        if o["metadata"].get("namespace") == "shop":
            del o["metadata"]["namespace"]
    with pytest.raises(ValueError, match="pass default_namespace"):
        check_namespace_flow(base, rendered(), FLOW)
    assert check_namespace_flow(base, rendered(), FLOW, default_namespace="shop") == []
