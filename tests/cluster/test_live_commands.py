"""The live commands against the tier's real control plane (tests/support/controlplane.py): lanes of the bundled
bookshop example are rendered, applied with server-side apply over the baseline as a GitOps engine would, and then

- `devlane status` reports them missing before the apply, `--wait` waits until the controllers and kwok make them
  ready, a second push (a new image) is `outdated` until it is applied, an object left out is named as missing
  (exit 1), and a seed Job counts as ready once the Job controller marks it complete (kwok completes the pods of
  Jobs), and as failed (exit 1, before the timeout) when it fails;
- `devlane gc --cluster` lists the orphan lanes (namespaced objects beside the baseline, and a whole lane
  namespace) and deletes them only with `--yes`, leaving the kept lane, the baseline and look-alike objects
  without devlane's labels exactly as they were;
- `devlane verify --server` accepts the applied lane, and names each object the server refuses with the API's
  reason (a ValidatingAdmissionPolicy denial, an immutable StatefulSet field a second push changes) without
  changing anything; objects of a lane namespace not created yet are said to be unchecked;
- a cluster that cannot be reached, a missing kubeconfig, an unknown context, refused credentials and missing RBAC
  rights each end in one clear error naming the server and the kubeconfig, never a traceback.

Every verdict is checked from the cluster's side with kubectl, never from devlane's own report alone."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from support import EXAMPLE, controlplane, yamlc
from support.builders import yaml_doc
from support.neon_stripe import neon_args

ORDERS = "ghcr.io/acme/bookshop-orders"
BASELINE = ("namespace", "web", "catalog", "orders", "orders-db", "ingress")  # k8s/plugins.yaml is never deployed


@pytest.fixture(scope="module")
def bookshop(cluster: controlplane.ControlPlane) -> controlplane.ControlPlane:
    """The cluster with the bookshop's baseline applied (namespace `bookshop`)."""
    cluster.apply("---\n".join((EXAMPLE / "k8s" / f"{name}.yaml").read_text() for name in BASELINE))
    return cluster


def render(harness, out: Path, flow: str, tag: str, *extra: str) -> Path:
    """`devlane render` of the bookshop with `orders` at `tag`; the flow's directory."""
    done = harness.cli("render", str(EXAMPLE), "--flow", flow, "--service", f"orders={ORDERS}:{tag}", "--out", str(out),
                       *extra)
    assert done.returncode == 0, done.stderr
    return out / "flows" / flow


def apply_dir(cluster: controlplane.ControlPlane, *flow_dirs: Path, skip: tuple[str, ...] = (),
              namespace: str | None = None) -> None:
    """Server-side apply of rendered flows' files but those in `skip`, namespaces first (as Argo CD, Flux and
    `kubectl apply -k` order them)."""
    files = [d / f for d in flow_dirs for f in yamlc.safe_load((d / "kustomization.yaml").read_text())["resources"]
             if f not in skip]
    files.sort(key=lambda f: not f.name.startswith("namespace-"))
    cluster.apply("---\n".join(f.read_text() for f in files), namespace=namespace)


def live(harness, cluster: controlplane.ControlPlane, command: str, repo: Path, *args: str):
    return harness.cli(command, str(repo), "--kubeconfig", str(cluster.kubeconfig), *args)


def available(cluster: controlplane.ControlPlane, flow: str, namespace: str = "bookshop") -> dict[str, int]:
    """The lane's Deployments and StatefulSets as the cluster reports them: name -> ready replicas."""
    items = cluster.get("deployments,statefulsets", "-n", namespace, "-l", f"devlane.dev/flow={flow}")["items"]
    return {i["metadata"]["name"]: i.get("status", {}).get("readyReplicas", 0) for i in items}


# ------------------------------------------------------------------------------------------------------------------
# status


def test_status_names_every_missing_object_waits_for_the_rollout_and_sees_a_push_not_yet_applied(harness, bookshop,
                                                                                                   tmp_path):
    out = tmp_path / "out"
    lane = render(harness, out, "st-1", "st-1")
    args = ("--flow", "st-1", "--out", str(out))
    files = yamlc.safe_load((lane / "kustomization.yaml").read_text())["resources"]

    before = live(harness, bookshop, "status", EXAMPLE, *args, "-o", "json")
    assert before.returncode == 1
    report = json.loads(before.stdout)
    assert report["state"] == "not ready" and report["counts"] == {"missing": len(files)}
    assert {(o["kind"], o["name"]) for o in report["objects"]} >= {("Deployment", "orders-st-1"),
                                                                  ("StatefulSet", "orders-db-st-1")}
    assert "flow st-1 is not ready" in before.stderr and "Deployment bookshop/orders-st-1 missing" in before.stderr

    apply_dir(bookshop, lane)
    waited = live(harness, bookshop, "status", EXAMPLE, *args, "--wait", "--timeout", "60s")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert waited.stdout.startswith(f"flow st-1 in the cluster at {bookshop.server}: ready")
    assert "ready        Deployment bookshop/orders-st-1: 1 of 1 replicas updated and available" in waited.stdout
    assert "ready        StatefulSet bookshop/orders-db-st-1: 1 of 1 replicas ready" in waited.stdout
    # what the cluster itself says: every lane workload has its replica ready
    assert available(bookshop, "st-1") == {"orders-st-1": 1, "web-st-1": 1, "orders-db-st-1": 1}

    # a second push: rendered, not applied yet, the lane is not the one that runs
    render(harness, out, "st-1", "st-1b")
    stale = live(harness, bookshop, "status", EXAMPLE, *args)
    assert stale.returncode == 1
    assert (f"outdated     Deployment bookshop/orders-st-1: the cluster has another version: container app runs "
            f"{ORDERS}:st-1 (rendered: {ORDERS}:st-1b)") in stale.stdout
    apply_dir(bookshop, lane)
    again = live(harness, bookshop, "status", EXAMPLE, *args, "--wait", "--timeout", "60", "-o", "json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["ready"] is True
    orders = bookshop.get("deployment", "orders-st-1", "-n", "bookshop")
    assert orders["spec"]["template"]["spec"]["containers"][-1]["image"] == f"{ORDERS}:st-1b"
    assert orders["status"]["updatedReplicas"] == orders["status"]["availableReplicas"] == 1


def test_status_of_a_lane_with_an_object_left_out_exits_1_naming_it(harness, bookshop, tmp_path):
    out = tmp_path / "out"
    lane = render(harness, out, "st-2", "st-2")
    apply_dir(bookshop, lane, skip=("service-web-st-2.yaml",))
    assert bookshop.kubectl("get", "service", "web-st-2", "-n", "bookshop", check=False).returncode != 0
    started = time.monotonic()
    done = live(harness, bookshop, "status", EXAMPLE, "--flow", "st-2", "--out", str(out), "--wait", "--timeout", "1s")
    assert done.returncode == 1
    assert time.monotonic() - started < 30
    assert "missing      Service bookshop/web-st-2: not in the cluster" in done.stdout
    assert "timed out after" in done.stdout
    assert "devlane: error: flow st-2 is not ready after" in done.stderr and "Service bookshop/web-st-2 missing" \
        in done.stderr
    assert "Traceback" not in done.stderr


def neon_lane(harness, out: Path, flow: str) -> Path:
    """A shop whose database is a Neon branch (the built-in neon-branch): its lane has a seed Job (an Argo CD
    PreSync hook) and a teardown Job (a PostDelete hook); no namespace of its own."""
    shop = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "shop"}}, "template": {
                "metadata": {"labels": {"app": "shop"}},
                "spec": {"containers": [{"name": "shop", "image": "example.com/shop:1", "env": [
                    {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "shop-db", "key": "url"}}}]}]}}}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "shop", "annotations": {"kardinal.dev.service/plugins": "shop-db"}},
               "spec": {"selector": {"app": "shop"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    harness.write("app.yaml", yaml_doc(shop) + yaml_doc(service))
    harness.plugin_definition({"name": "neon-branch", "type": "external", "servicename": "shop-db",
                               "args": neon_args()})
    done = harness.cli("render", str(harness.root), "--flow", flow, "--service", "shop=example.com/shop:2", "--out",
                       str(out))
    assert done.returncode == 0, done.stderr
    return out / "flows" / flow


def test_status_waits_for_a_seed_job_to_complete_and_stops_at_once_when_one_fails(harness, cluster, namespace,
                                                                                  tmp_path):
    out = tmp_path / "out"
    lane = neon_lane(harness, out, "job-1")
    # Argo CD runs the PreSync seed Job, then applies the rest; the PostDelete Job runs only when the lane goes
    apply_dir(cluster, lane, skip=("job-neon-delete-shop-db-job-1.yaml",), namespace=namespace)
    done = live(harness, cluster, "status", harness.root, "--flow", "job-1", "--out", str(out), "-n", namespace,
                "--wait", "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ready        Job {namespace}/neon-create-shop-db-job-1: complete" in done.stdout
    assert f"skipped      Job {namespace}/neon-delete-shop-db-job-1: an Argo CD PostDelete hook" in done.stdout
    job = cluster.get("job", "neon-create-shop-db-job-1", "-n", namespace)
    assert {"type": "Complete", "status": "True"}.items() <= next(
        c for c in job["status"]["conditions"] if c["type"] == "Complete").items()

    # a seed Job that fails (it cannot be scheduled, and its deadline passes): exit 1 without waiting out --timeout
    failing = neon_lane(harness, out, "job-2")
    seed = failing / "job-neon-create-shop-db-job-2.yaml"
    doc = yamlc.safe_load(seed.read_text())
    doc["spec"]["activeDeadlineSeconds"] = 2
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"devlane.test/no-such-node": "true"}
    seed.write_text(yaml.safe_dump(doc))
    apply_dir(cluster, failing, skip=("job-neon-delete-shop-db-job-2.yaml",), namespace=namespace)
    started = time.monotonic()
    done = live(harness, cluster, "status", harness.root, "--flow", "job-2", "--out", str(out), "-n", namespace,
                "--wait", "--timeout", "120s", "-o", "json")
    assert done.returncode == 1
    assert time.monotonic() - started < 60
    report = json.loads(done.stdout)
    (job,) = [o for o in report["objects"] if o["name"] == "neon-create-shop-db-job-2"]
    assert report["state"] == "failed" and job["state"] == "failed" and "DeadlineExceeded" in job["message"]
    assert not report["timedOut"]
    live_job = cluster.get("job", "neon-create-shop-db-job-2", "-n", namespace)
    assert any(c["type"] == "Failed" and c["status"] == "True" for c in live_job["status"]["conditions"])


# ------------------------------------------------------------------------------------------------------------------
# gc --cluster


def _doomed(stderr: str) -> dict[str, set[str]]:
    """`would delete KIND NS/NAME (lane FLOW)` lines -> flow -> objects."""
    out: dict[str, set[str]] = {}
    for line in stderr.splitlines():
        if line.startswith("devlane: would delete "):
            what, _, flow = line.removeprefix("devlane: would delete ").rpartition(" (lane ")
            out.setdefault(flow.rstrip(")"), set()).add(what)
    return out


def _uids(cluster: controlplane.ControlPlane) -> dict[str, str]:
    """The bookshop's objects, the lanes' beside the baseline's, and its namespaces (other tests' come and go)."""
    items = cluster.get("deployments,statefulsets,services,configmaps,ingresses", "-n", "bookshop")["items"] + [
        n for n in cluster.get("namespaces")["items"] if n["metadata"]["name"].startswith("bookshop")]
    return {f"{i['kind']} {i['metadata'].get('namespace', '')}/{i['metadata']['name']}": i["metadata"]["uid"]
            for i in items}


def test_gc_cluster_lists_orphan_lanes_and_deletes_only_them_and_only_with_yes(harness, bookshop, tmp_path):
    out = tmp_path / "out"
    apply_dir(bookshop, *(render(harness, out, flow, flow, *extra) for flow, extra in (
        ("gc-kept", ()), ("gc-gone", ()), ("gc-gone-ns", ("--isolation", "namespace")))))
    # look-alikes: each carries one of devlane's two labels, never both
    bookshop.apply([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "orders-gc-gone", "labels": {"devlane.dev/flow": "gc-gone"}}, "data": {"made": "by hand"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "tooling", "labels": {"app.kubernetes.io/managed-by": "devlane"}}, "data": {"made": "by hand"}}],
        namespace="bookshop")
    untouched = _uids(bookshop)

    listed = live(harness, bookshop, "gc", EXAMPLE, "--cluster", "--keep", "gc-kept")
    assert listed.returncode == 0, listed.stderr
    doomed = _doomed(listed.stderr)
    assert {"Deployment bookshop/orders-gc-gone", "Deployment bookshop/web-gc-gone",
            "StatefulSet bookshop/orders-db-gc-gone", "Service bookshop/web-gc-gone",
            "Ingress bookshop/shop-gc-gone"} <= doomed["gc-gone"]
    assert {"Namespace bookshop-gc-gone-ns", "Deployment bookshop-gc-gone-ns/orders"} <= doomed["gc-gone-ns"]
    assert "gc-kept" not in doomed and "nothing deleted: run again with --yes" in listed.stderr
    assert "kept 1 lane: gc-kept" in listed.stderr
    everything = {what for objects in doomed.values() for what in objects}
    assert not {"ConfigMap bookshop/orders-gc-gone", "ConfigMap bookshop/tooling", "Deployment bookshop/orders"} \
        & everything
    assert not [line for line in listed.stderr.splitlines() if "ReplicaSet" in line or "Pod " in line
                or "Endpoint" in line]  # they go with their owners
    # the dry run deleted nothing
    assert untouched == _uids(bookshop)

    # other lanes this cluster holds (other tests') are kept too: only the two orphans go
    keep = sorted({*doomed} - {"gc-gone", "gc-gone-ns"} | {"gc-kept"})
    done = live(harness, bookshop, "gc", EXAMPLE, "--cluster", "--keep", *keep, "--yes")
    assert done.returncode == 0, done.stderr
    assert "deleted Namespace bookshop-gc-gone-ns (lane gc-gone-ns)" in done.stderr
    assert "deleted Deployment bookshop/web-gc-gone (lane gc-gone)" in done.stderr

    def gone() -> bool:
        lane = bookshop.get("deployments,statefulsets,services,configmaps,ingresses", "-n", "bookshop", "-l",
                            "devlane.dev/flow=gc-gone,app.kubernetes.io/managed-by=devlane")["items"]
        ns = bookshop.kubectl("get", "namespace", "bookshop-gc-gone-ns", "-o", "json", check=False)
        return not lane and (ns.returncode != 0 or bool(json.loads(ns.stdout)["metadata"].get("deletionTimestamp")))

    bookshop.wait_for(gone, timeout=30, what="the orphan lanes to be deleted")
    after = _uids(bookshop)
    orphans = {what for what in untouched if "gc-gone" in what and what != "ConfigMap bookshop/orders-gc-gone"}
    kept = {what: uid for what, uid in untouched.items() if what not in orphans}
    assert {"Deployment bookshop/web-gc-kept", "Deployment bookshop/web", "ConfigMap bookshop/tooling"} <= set(kept)
    assert {what: after.get(what) for what in kept} == kept  # the baseline, the kept lane, the look-alikes: as before
    assert not orphans & set(after) - {"Namespace /bookshop-gc-gone-ns"}

    again = live(harness, bookshop, "gc", EXAMPLE, "--cluster", "--keep", *keep)
    assert again.returncode == 0 and f"no orphan lane in the cluster at {bookshop.server}" in again.stderr


# ------------------------------------------------------------------------------------------------------------------
# verify --server

POLICY = "devlane-test-cpu-limits"


def _policy(flow: str) -> list[dict]:
    """A ValidatingAdmissionPolicy (bound to the lane's objects only) refusing a Deployment whose containers do not
    all set a CPU limit."""
    message = "every container needs a CPU limit"
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": POLICY},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"],
                                                          "resources": ["deployments"]}]},
                  "validations": [{"expression": "object.spec.template.spec.containers.all(c, has(c.resources) && "
                                                 "has(c.resources.limits) && 'cpu' in c.resources.limits)",
                                   "message": message}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POLICY},
         "spec": {"policyName": POLICY, "validationActions": ["Deny"],
                  "matchResources": {"objectSelector": {"matchLabels": {"devlane.dev/flow": flow}}}}},
    ]


def test_verify_server_names_each_object_the_server_refuses_and_why_and_changes_nothing(harness, bookshop, tmp_path):
    out = tmp_path / "out"
    lane = render(harness, out, "vf-1", "vf-1")
    apply_dir(bookshop, lane)
    args = ("--flow", "vf-1", "--out", str(out), "--server")
    accepted = live(harness, bookshop, "verify", EXAMPLE, *args)
    total = len(yamlc.safe_load((lane / "kustomization.yaml").read_text())["resources"])
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert accepted.stdout == (f"flow vf-1: the cluster at {bookshop.server} accepts {total} of {total} objects "
                               "(server-side dry run)\n")

    # a second push that changes what a StatefulSet may never change, and a cluster policy the lane breaks
    sts = lane / "statefulset-orders-db-vf-1.yaml"
    sts.write_text(sts.read_text().replace("serviceName: orders-db-vf-1", "serviceName: orders-db-renamed"))
    before = bookshop.get("deployments,statefulsets", "-n", "bookshop", "-l", "devlane.dev/flow=vf-1")["items"]
    bookshop.apply(_policy("vf-1"))
    try:
        probe = lane / "deployment-web-vf-1.yaml"
        bookshop.wait_for(lambda: bookshop.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(probe),
                                                   check=False).returncode != 0,
                          what=f"ValidatingAdmissionPolicy {POLICY} to take effect")
        refused = live(harness, bookshop, "verify", EXAMPLE, *args)
        assert refused.returncode == 1
        lines = refused.stdout.splitlines()
        assert any(line.startswith(f"{lane / 'deployment-web-vf-1.yaml'}: Deployment bookshop/web-vf-1: ")
                   for line in lines)
        by_object = {line.split(": ", 2)[1]: line.split(": ", 2)[2] for line in lines[:-1]}
        assert set(by_object) == {"Deployment bookshop/web-vf-1", "Deployment bookshop/orders-vf-1",
                                  "StatefulSet bookshop/orders-db-vf-1"}
        for deployment in ("web-vf-1", "orders-vf-1"):
            assert f"ValidatingAdmissionPolicy '{POLICY}'" in by_object[f"Deployment bookshop/{deployment}"]
            assert "every container needs a CPU limit" in by_object[f"Deployment bookshop/{deployment}"]
        assert 'StatefulSet.apps "orders-db-vf-1" is invalid: spec: Forbidden: updates to statefulset spec for ' \
               "fields other than" in by_object["StatefulSet bookshop/orders-db-vf-1"]
        assert lines[-1] == (f"flow vf-1: the cluster at {bookshop.server} would refuse 3 of {total} objects "
                             "(server-side dry run)")
        assert "devlane: error: the cluster at" in refused.stderr and "would refuse 3 objects of flow vf-1" \
            in refused.stderr
        as_json = json.loads(live(harness, bookshop, "verify", EXAMPLE, *args, "-o", "json").stdout)
        assert as_json["counts"] == {"accepted": total - 3, "refused": 3, "unchecked": 0}
    finally:
        bookshop.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", POLICY,
                         "--ignore-not-found", check=False)
    # a dry run: nothing changed
    after = bookshop.get("deployments,statefulsets", "-n", "bookshop", "-l", "devlane.dev/flow=vf-1")["items"]
    assert {(i["metadata"]["name"], i["metadata"]["generation"]) for i in after} == \
        {(i["metadata"]["name"], i["metadata"]["generation"]) for i in before}
    assert bookshop.get("statefulset", "orders-db-vf-1", "-n", "bookshop")["spec"]["serviceName"] == "orders-db-vf-1"

    # a lane namespace not created yet: its Namespace is checked, what goes in it cannot be
    fresh = render(harness, out, "vf-ns", "vf-ns", "--isolation", "namespace")
    done = live(harness, bookshop, "verify", EXAMPLE, "--flow", "vf-ns", "--out", str(out), "--server")
    assert done.returncode == 0, done.stdout + done.stderr
    count = len(yamlc.safe_load((fresh / "kustomization.yaml").read_text())["resources"])
    assert done.stdout == (f"flow vf-ns: the cluster at {bookshop.server} accepts 1 of {count} objects (server-side "
                           f"dry run; {count - 1} unchecked)\n")
    assert "not checked: its namespace bookshop-vf-ns comes with this flow and is not in the cluster yet" in done.stderr
    assert bookshop.kubectl("get", "namespace", "bookshop-vf-ns", check=False).returncode != 0


# ------------------------------------------------------------------------------------------------------------------
# kubeconfig and errors


def _kubeconfig(path: Path, server: str, token: str, ca: Path | None, name: str = "lane") -> Path:
    cluster = {"server": server, **({"certificate-authority": str(ca)} if ca else {})}
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": name,
                                "clusters": [{"name": name, "cluster": cluster}],
                                "users": [{"name": name, "user": {"token": token}}],
                                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}))
    return path


def test_an_unreachable_cluster_or_a_missing_kubeconfig_is_one_clear_error(harness, tmp_path):
    """No control plane needed: the kubeconfig names a closed port, or there is none."""
    out = tmp_path / "out"
    render(harness, out, "er-1", "er-1")
    port = controlplane.free_port()
    config = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}", "t0ken", None)
    for command, extra in (("status", ()), ("verify", ("--server",))):
        done = harness.cli(command, str(EXAMPLE), "--flow", "er-1", "--out", str(out), *extra,
                           env={"KUBECONFIG": str(config)})
        assert done.returncode == 1
        assert done.stderr.startswith(f"devlane: error: cannot reach the cluster at https://127.0.0.1:{port} "
                                      f"($KUBECONFIG ({config}), context lane): "), done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    done = harness.cli("gc", str(EXAMPLE), "--cluster", "--keep", "pr-1", "--kubeconfig", str(config))
    assert done.returncode == 1 and "cannot reach the cluster at https://127.0.0.1:" in done.stderr

    missing = tmp_path / "nowhere" / "config"
    done = harness.cli("status", str(EXAMPLE), "--flow", "er-1", "--out", str(out), env={"KUBECONFIG": str(missing),
                                                                                          "HOME": str(tmp_path)})
    assert done.returncode == 1
    assert f"devlane: error: no kubeconfig: $KUBECONFIG ({missing}) names no file that exists" in done.stderr
    done = harness.cli("status", str(EXAMPLE), "--flow", "er-1", "--out", str(out), "--kubeconfig", str(missing))
    assert done.returncode == 2 and f"--kubeconfig {missing}: no such file" in done.stderr
    done = harness.cli("status", str(EXAMPLE), "--flow", "er-1", "--out", str(out), "--kubeconfig", str(config),
                       "--context", "nope")
    assert done.returncode == 2 and f"--context nope: kubeconfig {config} has no such context" in done.stderr


def test_the_kubeconfig_context_credentials_and_rights_are_the_clusters(harness, cluster, namespace, tmp_path):
    out = tmp_path / "out"
    render(harness, out, "er-2", "er-2")
    args = ("--flow", "er-2", "--out", str(out))
    # two kubeconfigs merged by $KUBECONFIG; --context picks the real cluster's, the first file's is unreachable
    closed = _kubeconfig(tmp_path / "closed", f"https://127.0.0.1:{controlplane.free_port()}", "x", None, "closed")
    env = {"KUBECONFIG": f"{closed}:{cluster.kubeconfig}"}
    assert harness.cli("status", str(EXAMPLE), *args, env=env).returncode == 1
    done = harness.cli("status", str(EXAMPLE), *args, "--context", "devlane-test", env=env)
    assert done.returncode == 1 and done.stdout.startswith(f"flow er-2 in the cluster at {cluster.server}: not ready")

    wrong = _kubeconfig(tmp_path / "wrong", cluster.server, "not-a-token", cluster.ca_file)
    done = harness.cli("status", str(EXAMPLE), *args, "--kubeconfig", str(wrong))
    assert done.returncode == 1
    assert done.stderr.startswith(f"devlane: error: the cluster at {cluster.server} refused the credentials of "
                                  f"kubeconfig {wrong}, context lane (401 Unauthorized)")

    cluster.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    token = cluster.kubectl("create", "token", "nobody", "-n", namespace).stdout.strip()
    nobody = _kubeconfig(tmp_path / "nobody", cluster.server, token, cluster.ca_file)
    done = harness.cli("status", str(EXAMPLE), *args, "--kubeconfig", str(nobody))
    assert done.returncode == 1 and "does not let kubeconfig" in done.stderr
    assert f'"system:serviceaccount:{namespace}:nobody" cannot get resource' in done.stderr
    done = harness.cli("gc", str(EXAMPLE), "--cluster", "--keep", "pr-1", "--kubeconfig", str(nobody))
    assert done.returncode == 1 and "list any kind of object by devlane's labels" in done.stderr
    assert f'"system:serviceaccount:{namespace}:nobody" cannot list resource' in done.stderr
