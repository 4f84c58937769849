"""The cluster tier's control plane is a real one: the controller-manager makes ReplicaSets and EndpointSlices, the
scheduler places pods on kwok's Nodes, which run them with IPs; admission refuses what ResourceQuota, a
ValidatingAdmissionPolicy and RBAC forbid. And it leaves nothing behind: no process, no directory, whether its
session passes, fails, is interrupted with Ctrl-C, or a component fails to start."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from support import ROOT, controlplane
from support.processes import mentioning, wait_for

VERSIONS = controlplane.versions()


def deployment(name: str, labels: dict[str, str], replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}}}


def service(name: str, selector: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 8080}]}}


def running(cluster, namespace: str, selector: str, count: int) -> list[dict]:
    """The pods matching `selector` once exactly `count` are Running with an IP (else an empty list)."""
    pods = cluster.get("pods", "-n", namespace, "-l", selector)["items"]
    up = [p for p in pods if p["status"].get("phase") == "Running" and p["status"].get("podIP")]
    return up if len(pods) == len(up) == count else []


def test_the_server_is_the_pinned_version(cluster):
    got = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert got["gitVersion"] == f"v{VERSIONS['KUBERNETES_VERSION']}"


def test_the_pods_that_fill_kwoks_ip_pools_at_start_are_gone(cluster):
    """start() runs one Pod per Node so that kwok makes each Node's IP pool before the tests' Pods arrive (kwok's
    race: two Pods of a Node handled at once could each get a new pool and the same IP); none is left behind."""
    assert not [p["metadata"]["name"] for p in cluster.get("pods", "-A")["items"]
                if p["metadata"]["name"].startswith("ip-pool-")]


def test_a_deployment_gets_a_replicaset_and_pods_running_with_ips_on_kwok_nodes(cluster, namespace):
    cluster.apply(deployment("web", {"app": "web"}, 3), namespace=namespace)
    pods = cluster.wait_for(lambda: running(cluster, namespace, "app=web", 3), what="3 Running web pods")
    (rs,) = cluster.get("replicasets", "-n", namespace, "-l", "app=web")["items"]
    assert [(o["kind"], o["name"]) for o in rs["metadata"]["ownerReferences"]] == [("Deployment", "web")]
    cidr = ipaddress.ip_network(controlplane.POD_CIDR)
    for pod in pods:
        assert [(o["kind"], o["name"]) for o in pod["metadata"]["ownerReferences"]] == [("ReplicaSet",
                                                                                         rs["metadata"]["name"])]
        assert pod["spec"]["nodeName"] in controlplane.NODES  # placed by kube-scheduler
        assert ipaddress.ip_address(pod["status"]["podIP"]) in cidr  # run by kwok
        assert {"type": "Ready", "status": "True"}.items() <= next(
            c for c in pod["status"]["conditions"] if c["type"] == "Ready").items()
    assert len({p["status"]["podIP"] for p in pods}) == 3


def test_a_services_endpointslice_lists_exactly_the_pods_it_selects(cluster, namespace):
    lane, base = {"app": "api", "track": "lane"}, {"app": "api", "track": "base"}
    cluster.apply([deployment("api-lane", lane, 2), deployment("api-base", base, 1), service("api-lane", lane)],
                  namespace=namespace)
    lane_pods = cluster.wait_for(lambda: running(cluster, namespace, "app=api,track=lane", 2), what="the lane pods")
    base_pods = cluster.wait_for(lambda: running(cluster, namespace, "app=api,track=base", 1), what="the base pod")

    def endpoints() -> set[tuple[str, str]]:
        slices = cluster.get("endpointslices", "-n", namespace, "-l", "kubernetes.io/service-name=api-lane")["items"]
        return {(e["targetRef"]["name"], a) for s in slices for e in s.get("endpoints") or [] for a in e["addresses"]}

    expected = {(p["metadata"]["name"], p["status"]["podIP"]) for p in lane_pods}
    cluster.wait_for(lambda: endpoints() == expected, what=f"the EndpointSlice of api-lane to list {sorted(expected)}")
    assert not {p["metadata"]["name"] for p in base_pods} & {name for name, _ in endpoints()}


def test_deleting_a_deployment_collects_its_replicaset_and_pods_and_deleting_a_namespace_empties_it(cluster, namespace):
    cluster.apply(deployment("gone", {"app": "gone"}, 2), namespace=namespace)
    cluster.wait_for(lambda: running(cluster, namespace, "app=gone", 2), what="2 Running pods")
    cluster.kubectl("delete", "deployment", "gone", "-n", namespace, "--wait=false")
    cluster.wait_for(lambda: not cluster.get("replicasets,pods", "-n", namespace, "-l", "app=gone")["items"],
                     what="the garbage collector to delete the ReplicaSet and its pods")
    doomed = cluster.namespace("doomed")  # no pods: the namespace controller would wait out their grace period
    cluster.apply([service("web", {"app": "web"}),
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"k": "v"}}],
                  namespace=doomed)
    cluster.kubectl("delete", "namespace", doomed, "--wait=false")
    cluster.wait_for(lambda: cluster.kubectl("get", "namespace", doomed, check=False).returncode != 0,
                     what=f"the namespace controller to empty and remove namespace {doomed}")


def test_a_serviceaccount_token_authenticates_as_its_serviceaccount(cluster, namespace):
    cluster.kubectl("create", "serviceaccount", "robot", "-n", namespace)
    token = cluster.kubectl("create", "token", "robot", "-n", namespace).stdout.strip()  # signed with the fixture's key
    who = json.loads(cluster.kubectl("auth", "whoami", f"--token={token}", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:robot"
    # the controller-manager publishes the cluster's CA (--root-ca-file) in every namespace
    ca = cluster.wait_for(lambda: cluster.kubectl("get", "configmap", "kube-root-ca.crt", "-n", namespace,
                                                  check=False).returncode == 0, what="kube-root-ca.crt")
    assert ca


def test_a_resourcequota_refuses_what_exceeds_it(cluster, namespace):
    cluster.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "lane"},
                   "spec": {"hard": {"services": "1", "requests.cpu": "500m"}}}, namespace=namespace)
    # admission refuses everything the quota covers until the controller-manager has computed its usage
    cluster.wait_for(lambda: cluster.get("resourcequota", "lane", "-n", namespace).get("status", {}).get("used"),
                     what="the resource-quota controller to compute the quota's usage")
    cluster.apply(service("one", {"app": "one"}), namespace=namespace)
    refused = cluster.apply(service("two", {"app": "two"}), namespace=namespace, check=False)
    assert refused.returncode != 0
    assert "exceeded quota: lane" in refused.stderr and "services" in refused.stderr
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                    "resources": {"requests": {"cpu": "1"}}}]}}
    refused = cluster.apply(pod, namespace=namespace, check=False)
    assert refused.returncode != 0
    assert "exceeded quota: lane" in refused.stderr and "requests.cpu" in refused.stderr
    assert cluster.kubectl("get", "service", "two", "-n", namespace, check=False).returncode != 0


def test_a_validatingadmissionpolicy_with_a_binding_refuses_an_object(cluster, namespace):
    name = f"no-forbidden-key-{namespace}"
    message = "a ConfigMap may not hold the key 'forbidden'"
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE", "UPDATE"],
                                                               "resources": ["configmaps"]}]},
                       "validations": [{"expression": "!has(object.data) || !('forbidden' in object.data)",
                                        "message": message}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": namespace}}}}}

    def configmap(key: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {key: "x"}}

    cluster.apply([policy, binding])
    try:
        # the policy takes effect once the API server's informers have it: retry (a create, then updates)
        refused = cluster.wait_for(lambda: (r := cluster.apply(configmap("forbidden"), namespace=namespace,
                                                               check=False)).returncode != 0 and r,
                                   what=f"ValidatingAdmissionPolicy {name} to refuse the ConfigMap")
        assert message in refused.stderr and f"ValidatingAdmissionPolicy '{name}'" in refused.stderr
        cluster.kubectl("delete", "configmap", "settings", "-n", namespace, "--ignore-not-found")
        cluster.apply(configmap("allowed"), namespace=namespace)
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                        "--ignore-not-found", check=False)


def test_rbac_refuses_a_serviceaccount_without_rights(cluster, namespace):
    cluster.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    cluster.kubectl("create", "serviceaccount", "reader", "-n", namespace)
    cluster.kubectl("create", "role", "read-pods", "--verb=get,list", "--resource=pods", "-n", namespace)
    cluster.kubectl("create", "rolebinding", "reader", "--role=read-pods", f"--serviceaccount={namespace}:reader",
                    "-n", namespace)
    nobody, reader = (f"system:serviceaccount:{namespace}:{sa}" for sa in ("nobody", "reader"))
    assert not cluster.can_i("list", "pods", as_=nobody, namespace=namespace)
    assert not cluster.can_i("create", "deployments.apps", as_=nobody, namespace=namespace)
    assert cluster.can_i("list", "pods", as_=reader, namespace=namespace)
    assert not cluster.can_i("delete", "pods", as_=reader, namespace=namespace)
    assert not cluster.can_i("list", "pods", as_=reader, namespace="default")
    refused = cluster.kubectl("get", "pods", "-n", namespace, f"--as={nobody}", check=False)
    assert refused.returncode != 0 and "Forbidden" in refused.stderr and nobody in refused.stderr


# ------------------------------------------------------------------------------------------------------------------
# Nothing is left behind

def test_a_component_that_fails_to_start_leaves_no_process_and_no_directory(binaries, tmp_path):
    with (pytest.raises(controlplane.ControlPlaneError, match="kube-apiserver exited") as failed,
          controlplane.start(binaries, parent=tmp_path, apiserver_args=("--no-such-flag",))):
        pytest.fail("the control plane started with an unknown flag")
    assert "unknown flag: --no-such-flag" in str(failed.value)  # the component's log, in the error
    assert not list(tmp_path.iterdir())
    assert wait_for(lambda: not mentioning(str(tmp_path)), 5), mentioning(str(tmp_path))


SESSION = {
    "pytest.ini": "[pytest]\n",
    "conftest.py": """
        import os
        from pathlib import Path

        import pytest
        from support import controlplane


        @pytest.fixture(scope="session")
        def cluster():
            with controlplane.start(parent=Path(os.environ["CLUSTER_PARENT"])) as cp:
                yield cp
        """,
    "test_session.py": """
        import json
        import os
        import time
        from pathlib import Path


        def test_fails(cluster):
            assert cluster.healthy()
            assert False, "this test fails"


        def test_waits_for_ctrl_c(cluster):
            state = {"pids": cluster.pids(), "root": str(cluster.root)}
            started = Path(os.environ["CLUSTER_STARTED"])  # written whole, then renamed: the test reads it at once
            started.with_suffix(".tmp").write_text(json.dumps(state))
            started.with_suffix(".tmp").replace(started)
            time.sleep(600)
        """,
}


# pytest as a terminal starts it: Ctrl-C raises KeyboardInterrupt. A child inherits the ignored or blocked signals of
# the process that starts it (and Python keeps an ignored SIGINT ignored), so a test worker in which SIGINT happens to
# be ignored or blocked would start a session deaf to Ctrl-C.
AT_A_TERMINAL = ("import signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                 "signal.signal(signal.SIGINT, signal.default_int_handler); import pytest; "
                 "sys.exit(pytest.main(sys.argv[1:]))")


def test_ctrl_c_during_a_session_with_a_failure_stops_every_process_and_removes_the_directory(binaries, tmp_path):
    session, parent, started = tmp_path / "session", tmp_path / "clusters", tmp_path / "started.json"
    session.mkdir()
    parent.mkdir()
    for name, text in SESSION.items():
        (session / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(ROOT / "tests"), CLUSTER_PARENT=str(parent), CLUSTER_STARTED=str(started))
    with open(tmp_path / "out.txt", "w+") as out:
        pytest_run = subprocess.Popen([sys.executable, "-c", AT_A_TERMINAL, "-q", "-p", "no:cacheprovider", "-p",
                                       "no:xdist", str(session)], cwd=session, env=env, stdout=out,
                                      stderr=subprocess.STDOUT)  # fmt: skip
        try:
            assert wait_for(lambda: started.exists() or pytest_run.poll() is not None, 180)
            assert started.exists(), (tmp_path / "out.txt").read_text()
            state = json.loads(started.read_text())
            assert len(state["pids"]) == len(controlplane.COMPONENTS)
            assert all(os.path.exists(f"/proc/{pid}") for pid in state["pids"])
            pytest_run.send_signal(signal.SIGINT)  # what Ctrl-C sends
            pytest_run.wait(60)
        finally:
            if pytest_run.poll() is None:
                pytest_run.kill()
                pytest_run.wait()
        out.seek(0)
        output = out.read()
    assert "KeyboardInterrupt" in output and "1 failed" in output, output
    assert wait_for(lambda: not mentioning(str(parent)), 5), mentioning(str(parent))
    assert not any(os.path.exists(f"/proc/{pid}") for pid in state["pids"])
    assert not os.path.exists(state["root"]) and not list(parent.iterdir())
