"""The apps whose lanes tests/cluster/test_lanes.py applies to a real API server: the bundled examples and real public
apps (../shared/realworld, through the builders of `realworld_apps`), each as a temporary repository with the
baseline its GitOps application deploys, the services a pull request changes, and the `.devlane.yaml` settings the
tier adds (the destination namespace, a mesh Gateway, `lifecycle.sleep`, `lifecycle.quota` and the budget it takes).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from renderer import api
from renderer.errors import DevlaneError
from renderer.render.plan.flow_spec import FlowRequest, resolve

from . import realworld_apps as rw
from . import yamlc
from .consumers import kubectl_kustomize
from .isolation import load_yaml_files
from .paths import ROOT

DEFINITION = "kardinal.dev.service/plugin-definition"
# Values a YAML 1.1 or 1.2 reader could take for a number, a boolean, a null or a time: a ConfigMap holds them and
# every push sets them as env values. The server must store these very strings.
STRINGS = {"LANE_RATIO": "1.0", "LANE_ENABLED": "yes", "LANE_MASK": "0x10", "LANE_LIMIT": "1e3", "LANE_NOTHING": "~",
           "LANE_OFF": "off", "LANE_NULL": "null", "LANE_OCTAL": "012", "LANE_ODD_OCTAL": "0o17",
           "LANE_UNDERSCORE": "1_000", "LANE_SEXAGESIMAL": "12:30:45", "LANE_DATE": "2001-12-14",
           "LANE_INF": ".inf", "LANE_TRUE": "True", "LANE_N": "n"}
LIFECYCLE = {"sleep": {"down": "0 20 * * 1-5", "up": "0 7 * * 1-5", "timeZone": "Europe/Berlin",
                       "image": "registry.k8s.io/kubectl:v1.34.1@sha256:" + "5" * 64},
             "quota": {"defaultRequest": {"cpu": "50m", "memory": "64Mi"}}}
CHECKOUT_SA = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: checkout, namespace: cloudshop}\n"
BUDGET = {"cpu": "16", "memory": "32Gi", "storage": "200Gi"}  # lifecycle.quota's ResourceQuota: each flow namespace


@dataclass(frozen=True)
class Source:
    """An app as a repository: where devlane renders (REPO), the baseline, the services a pull request changes."""

    root: Path
    baseline: list[dict]
    targets: tuple[str, ...]
    top: Path | None = None  # the whole repository when `root` is a directory inside it (an overlay)


@dataclass(frozen=True)
class App:
    id: str
    form: str  # how its manifests are written: plain, kustomize or helm
    make: Callable[[Path], Source]
    mesh: bool = True  # its lanes have HTTP routes: a gateway-api lane too
    strings: bool = False  # a ConfigMap its target reads holds `STRINGS` (the lane gets a copy)


def _example(name: str, work: Path) -> Path:
    root = work / name
    shutil.copytree(ROOT / "examples" / name, root, ignore=shutil.ignore_patterns("rendered", "__pycache__"))
    return root


def baseline_objects(objects: Iterable[dict]) -> list[dict]:
    """What a GitOps tool deploys of an app's manifests: plugin definitions are pseudo-Services, never deployed."""
    return [o for o in objects if DEFINITION not in ((o.get("metadata") or {}).get("annotations") or {})]


def _plain_example(name: str, targets: tuple[str, ...], add: dict[str, str] | None = None) -> Callable[[Path], Source]:
    """The example's manifests; `add`: files its adopter adds where devlane's warnings say so."""

    def make(work: Path) -> Source:
        root = _example(name, work)
        for rel, text in (add or {}).items():
            (root / rel).write_text(text)
        return Source(root, baseline_objects(load_yaml_files(sorted((root / "k8s").glob("*.yaml")))), targets)

    return make


def inventory(work: Path) -> Source:
    """The kustomize example, its generated ConfigMap holding `STRINGS` too (a literal per value)."""
    top = _example("inventory", work)
    overlay = top / "overlays" / "staging"
    kustomization = yamlc.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["configMapGenerator"][0]["literals"] += [f"{k}={v}" for k, v in STRINGS.items()]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return Source(overlay, kubectl_kustomize(overlay), ("api",), top=top)


def _realworld(app_id: str) -> Callable[[Path], Source]:
    def make(work: Path) -> Source:
        app = next(a for a in rw.APPS + rw.BUILT if a.id == app_id)
        repo = (rw.BuiltRepo if app.built else rw.Repo)(work / "repo")
        app.build(repo)
        return Source(repo.root, repo.write(), app.targets)

    return make


APPS = [
    App("bookshop", "plain", _plain_example("bookshop", ("orders",))),
    # devlane warns that a flow namespace lacks checkout's ServiceAccount (made outside the repository, for IRSA),
    # "the pods would not be created", and says to add it to the repository: done here
    App("cloudshop", "plain", _plain_example("cloudshop", ("checkout",), {"k8s/serviceaccount.yaml": CHECKOUT_SA})),
    App("inventory", "kustomize", inventory, strings=True),
    App("bank-of-anthos", "plain", _realworld("bank-of-anthos")),
    App("k8s-guestbook-go", "plain", _realworld("k8s-guestbook-go")),
    App("gke-guestbook", "plain", _realworld("gke-guestbook")),
    App("skaffold-microservices", "plain", _realworld("skaffold-microservices"), mesh=False),
    App("booksapp", "plain", _realworld("booksapp")),
    App("eks-workshop-retail-store", "kustomize", _realworld("eks-workshop-retail-store (kustomize)")),
    App("gke-whereami", "kustomize", _realworld("gke-whereami (kustomize)")),
    App("skaffold-kustomize", "kustomize", _realworld("skaffold-kustomize (kustomize)"), mesh=False),
    App("robot-shop", "helm", _realworld("robot-shop (helm)")),
    App("retail-store-sample-app", "helm", _realworld("retail-store-sample-app (helm)")),
    App("skaffold-helm-dependencies", "helm", _realworld("skaffold-helm-dependencies (helm)")),
]


def configure(root: Path, destination: str | None, gateway: str) -> None:
    """Adds the tier's settings to the repository's `.devlane.yaml`, keeping what the app sets itself."""
    path = root / ".devlane.yaml"
    config = (yamlc.safe_load(path.read_text()) if path.is_file() else None) or {}
    if destination:
        config.setdefault("namespace", destination)
    config.setdefault("mesh", {}).setdefault("gateway", gateway)
    config.setdefault("lifecycle", {}).update(LIFECYCLE)
    config.setdefault("policy", {}).setdefault("budget", BUDGET)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def image(target: str, flow: str, push: int) -> str:
    return f"ghcr.io/example/{target.rsplit('/', 1)[-1]}:{flow}-push{push}"


def push_env(push: int) -> dict[str, str]:
    """The env a push sets on its targets: `STRINGS`, and a value the second push changes."""
    return {"LANE_PUSH": str(push), **STRINGS}


def render(source: Source, flow: str, isolation: str, routing: str, push: int, out: Path) -> Path:
    """Renders push `push` of the flow (in process, as `devlane render --out`); returns its directory."""
    request = FlowRequest(flow, {t: image(t, flow, push) for t in source.targets},
                          [(t, k, v) for t in source.targets for k, v in push_env(push).items()])
    options = api.Options(repo=source.root, top=source.top, isolation=isolation, routing=routing)
    try:
        api.render_and_write(options, resolve(request), out)
    except DevlaneError as exc:
        raise AssertionError(f"devlane refused flow {flow} ({isolation}, {routing}, push {push}): {exc}") from None
    return out / "flows" / flow
