"""Real public apps (../shared/realworld) as an adopter's repository: the builders and the hand annotations.

`tests/e2e/test_realworld_isolation.py` renders flows on them and checks isolation; `tests/e2e/test_init_realworld.py`
compares `devlane init` with the hand annotations written here, which are the ground truth. Every app is copied
into a temporary directory (never into the project); a missing app skips the test.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from . import yamlc
from .consumers import kubectl_kustomize
from .harness import run_cli
from .isolation import Key, load_flow, load_yaml_files
from .realworld import FLOW, REALWORLD

DEPS = "kardinal.dev.service/dependencies"
STATEFUL = "kardinal.dev.service/stateful"
INGRESS = "kardinal.dev.service/ingress"


# -- building an adopter's repository ------------------------------------------------------------------------------


def source(app: str) -> Path:
    path = REALWORLD / app
    if not path.is_dir():
        pytest.skip(f"real-world app {app} not available ({path})")
    return path


def helm(*args: str, cwd: Path | None = None) -> str:
    if shutil.which("helm") is None:
        pytest.skip("helm not available; see the inputs issue")
    out = subprocess.run(["helm", *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout


def objects_of(text: str) -> list[dict]:
    return [d for d in yamlc.safe_load_all(text) if isinstance(d, dict) and d.get("kind")]


class Repo:
    """The adopter's repository: files copied byte for byte, or objects written with PyYAML (annotated ones)."""

    def __init__(self, root: Path):
        self.root = root
        self.objects: dict[str, list[dict]] = {}
        self.verbatim: dict[str, str] = {}
        self.dirty: set[str] = set()

    def copy(self, path: Path, rel: str) -> None:
        text = path.read_text()
        self.verbatim[rel] = text
        self.objects[rel] = objects_of(text)

    def add(self, rel: str, objects: list[dict]) -> None:
        self.objects[rel] = objects
        self.dirty.add(rel)

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict:
        for rel, objs in self.objects.items():
            for o in objs:
                meta = o.get("metadata") or {}
                if o["kind"] == kind and meta.get("name") == name and meta.get("namespace") == namespace:
                    self.dirty.add(rel)
                    return o
        raise AssertionError(f"the app has no {kind} {namespace}/{name}")

    def annotate(self, kind: str, name: str, namespace: str | None = None, **annotations: str) -> None:
        meta = self.find(kind, name, namespace).setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}

    def depends(self, service: str, deps: str, namespace: str | None = None) -> None:
        self.annotate("Service", service, namespace, **{DEPS: deps})

    def stateful(self, service: str, namespace: str | None = None) -> None:
        self.annotate("Service", service, namespace, **{STATEFUL: "true"})

    def name_port(self, service: str, port_name: str, namespace: str | None = None) -> None:
        """Dependencies name a Service port; upstream left these single ports unnamed."""
        ports = self.find("Service", service, namespace)["spec"]["ports"]
        assert len(ports) == 1
        ports[0].setdefault("name", port_name)

    def entry(self, service: str, port: int, host: str, namespace: str | None = None) -> None:
        """The Ingress the app lacks, marked as the flows' entry point."""
        meta = {"name": f"{service}-entry", "annotations": {INGRESS: "true"}}
        if namespace:
            meta["namespace"] = namespace
        backend = {"service": {"name": service, "port": {"number": port}}}
        ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
                   "spec": {"rules": [{"host": host, "http": {"paths": [
                       {"path": "/", "pathType": "Prefix", "backend": backend}]}}]}}  # fmt: skip
        self.add(f"entry/{service}-ingress.yaml", [ingress])

    def write(self) -> list[dict]:
        """Write the files; the baseline objects as devlane reads them."""
        for rel, objs in self.objects.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if rel in self.dirty:
                path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
            else:
                path.write_text(self.verbatim[rel])
        return load_yaml_files(self.root / rel for rel in self.objects)


class BuiltRepo(Repo):
    """The app's own tree, read through `inputs:`; Kardinal's annotations in `.devlane.yaml services:`."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.inputs: list[dict] = []
        self.services: dict[str, dict] = {}
        self.expected: list[dict] = []  # what the tools build, run here and not by devlane

    def tree(self, src: Path) -> None:
        shutil.copytree(src, self.root, symlinks=True)

    def kustomize(self, rel: str) -> None:
        self.inputs.append({"kustomize": rel})
        self.expected += kubectl_kustomize(self.root / rel)

    def helm(self, rel: str, release: str, values: tuple[str, ...] = ()) -> None:
        self.inputs.append({"helm": rel, "releaseName": release, "values": list(values)})
        files = [arg for v in values for arg in ("--values", str(self.root / v))]
        self.expected += objects_of(helm("template", release, str(self.root / rel), *files, "--include-crds"))

    def _service(self, service: str, namespace: str | None) -> dict:
        return self.services.setdefault(f"{namespace}/{service}" if namespace else service, {})

    def depends(self, service: str, deps: str, namespace: str | None = None) -> None:
        self._service(service, namespace)["dependencies"] = deps.split(",")

    def stateful(self, service: str, namespace: str | None = None) -> None:
        self._service(service, namespace)["stateful"] = True

    def write(self) -> list[dict]:
        entries = super().write()
        self.inputs.append({"path": "entry/*.yaml"})
        config = {"apiVersion": "devlane.dev/v1alpha1", "kind": "Config", "inputs": self.inputs,
                  "services": self.services}
        (self.root / ".devlane.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        return self.annotated() + entries

    def annotated(self) -> list[dict]:
        """The built objects with the config's annotations on their Services, as the checker reads edges."""
        out = [copy.deepcopy(o) for o in self.expected]
        for ref, fields in self.services.items():
            ns, _, name = ref.rpartition("/")
            svc = next(o for o in out if o["kind"] == "Service" and o["metadata"]["name"] == name
                       and o["metadata"].get("namespace") == (ns or None))  # fmt: skip
            ann = svc["metadata"].setdefault("annotations", {})
            for key, value in fields.items():
                ann[f"kardinal.dev.service/{key}"] = ",".join(value) if isinstance(value, list) else str(value).lower()
        return out


# -- the apps -------------------------------------------------------------------------------------------------------


def bank_of_anthos(repo: Repo) -> None:
    """The plain `kubernetes-manifests/` set plus the JWT Secret from extras (not the cloudsql variant)."""
    src = source("bank-of-anthos")
    for f in sorted((src / "kubernetes-manifests").glob("*.yaml")):
        repo.copy(f, f"kubernetes-manifests/{f.name}")
    repo.copy(src / "extras/jwt/jwt-secret.yaml", "extras/jwt/jwt-secret.yaml")
    bank_of_anthos_annotations(repo)


def bank_of_anthos_annotations(repo: Repo) -> None:
    repo.depends("frontend", "userservice:http,contacts:http,ledgerwriter:http,balancereader:http,"
                             "transactionhistory:http")  # fmt: skip
    repo.depends("userservice", "accounts-db:tcp")
    repo.depends("contacts", "accounts-db:tcp")
    repo.depends("ledgerwriter", "ledger-db:tcp,balancereader:http")
    repo.depends("balancereader", "ledger-db:tcp")
    repo.depends("transactionhistory", "ledger-db:tcp")
    repo.stateful("accounts-db")
    repo.stateful("ledger-db")
    repo.entry("frontend", 80, "bank.preview.example.com")


def annotate_eks_retail(repo: Repo) -> None:
    repo.depends("ui", "catalog.catalog:http,carts.carts:http,checkout.checkout:http,orders.orders:http", "ui")
    repo.depends("catalog", "catalog-mysql:mysql", "catalog")
    repo.depends("carts", "carts-dynamodb:dynamodb", "carts")
    repo.depends("checkout", "checkout-redis:redis,orders.orders:http", "checkout")
    repo.depends("orders", "orders-postgresql:postgresql", "orders")
    for ns, svc in (("catalog", "catalog-mysql"), ("carts", "carts-dynamodb"), ("checkout", "checkout-redis"),
                    ("orders", "orders-postgresql")):  # fmt: skip
        repo.stateful(svc, ns)
    repo.entry("ui", 80, "shop.preview.example.com", "ui")


def eks_workshop_retail_store(repo: Repo) -> None:
    """The workshop's base application (one namespace per service), built with kubectl kustomize."""
    base = source("eks-workshop-retail-store") / "manifests/base-application"
    repo.add("manifests/base-application.yaml", kubectl_kustomize(base))
    annotate_eks_retail(repo)


def eks_workshop_retail_store_efs(repo: Repo) -> None:
    """The base application with the workshop's EFS module applied to ui (a PersistentVolumeClaim it mounts)."""
    manifests = source("eks-workshop-retail-store") / "manifests"
    for svc in ("catalog", "carts", "checkout", "orders", "other"):
        repo.add(f"manifests/{svc}.yaml", kubectl_kustomize(manifests / "base-application" / svc))
    repo.add("manifests/ui.yaml", kubectl_kustomize(manifests / "modules/fundamentals/storage/efs/deployment"))
    annotate_eks_retail(repo)


def gke_whereami(repo: Repo) -> None:
    """The documented two-service form: the frontend and backend overlays (nameSuffix over one base)."""
    src = source("gke-whereami") / "quickstarts/whereami"
    for overlay in ("k8s-frontend-overlay-example", "k8s-backend-overlay-example"):
        repo.add(f"whereami/{overlay}.yaml", kubectl_kustomize(src / overlay))
    repo.depends("whereami-frontend", "whereami-backend:http")
    repo.entry("whereami-frontend", 80, "whereami.preview.example.com")


def _guestbook(repo: Repo, src: Path, leader: str, follower: str) -> None:
    """The PHP guestbook: a frontend over a Redis leader and follower, addresses compiled into the images."""
    for f in sorted(src.glob("*-*.yaml")):
        repo.copy(f, f"guestbook/{f.name}")
    repo.name_port("frontend", "http")
    repo.name_port(leader, "redis")
    repo.name_port(follower, "redis")
    repo.depends("frontend", f"{leader}:redis,{follower}:redis")
    repo.depends(follower, f"{leader}:redis")
    repo.stateful(leader)
    repo.stateful(follower)
    repo.entry("frontend", 80, "guestbook.preview.example.com")


def k8s_guestbook(repo: Repo) -> None:
    _guestbook(repo, source("k8s-guestbook") / "web/guestbook", "redis-master", "redis-replica")


def k8s_guestbook_go(repo: Repo) -> None:
    src = source("k8s-guestbook-go") / "web/guestbook-go"
    for f in sorted(src.glob("*.yaml")):
        repo.copy(f, f"guestbook-go/{f.name}")
    for svc in ("guestbook", "redis-master", "redis-replica"):
        repo.name_port(svc, "http" if svc == "guestbook" else "redis")
    repo.depends("guestbook", "redis-master:redis,redis-replica:redis")
    repo.stateful("redis-master")
    repo.stateful("redis-replica")
    repo.entry("guestbook", 3000, "guestbook.preview.example.com")


def gke_guestbook(repo: Repo) -> None:
    _guestbook(repo, source("gke-guestbook") / "quickstarts/guestbook", "redis-leader", "redis-follower")


def skaffold_microservices(repo: Repo) -> None:
    """leeroy-web has no Service (upstream port-forwards to it), so its dependency sits on the Deployment."""
    src = source("skaffold-microservices") / "examples/microservices"
    for svc in ("leeroy-app", "leeroy-web"):
        repo.copy(src / svc / "kubernetes/deployment.yaml", f"{svc}/kubernetes/deployment.yaml")
    repo.annotate("Deployment", "leeroy-web", **{DEPS: "leeroy-app:leeroy-app"})


def skaffold_kustomize(repo: Repo) -> None:
    """skaffold's default render: the dev overlay (one Deployment, no Service)."""
    src = source("skaffold-kustomize") / "examples/getting-started-kustomize/overlays/dev"
    repo.add("k8s/dev.yaml", kubectl_kustomize(src))


def robot_shop(repo: Repo) -> None:
    chart = source("robot-shop") / "K8s/helm"
    repo.add("robot-shop.yaml", objects_of(helm("template", "rel", str(chart))))
    robot_shop_annotations(repo)


def robot_shop_annotations(repo: Repo) -> None:
    repo.depends("web", "catalogue:http,user:http,cart:http,shipping:http,payment:http,ratings:http")
    repo.depends("catalogue", "mongodb:mongo")
    repo.depends("user", "mongodb:mongo,redis:redis")
    repo.depends("cart", "redis:redis,catalogue:http")
    repo.depends("shipping", "mysql:mysql,cart:http")
    repo.depends("ratings", "mysql:mysql,catalogue:http")
    repo.depends("payment", "cart:http,user:http,rabbitmq:tcp-amqp")
    repo.depends("dispatch", "rabbitmq:tcp-amqp")
    for svc in ("mongodb", "mysql", "redis", "rabbitmq"):
        repo.stateful(svc)
    repo.entry("web", 8080, "robot-shop.preview.example.com")


def retail_store_sample_app(repo: Repo) -> None:
    """The umbrella chart with values-stateful.yaml; `helm dependency build` runs in a temporary copy."""
    src = source("retail-store-sample-app") / "src"
    work = repo.root.parent / "chart-build"
    shutil.copytree(src, work / "src")
    chart = work / "src/app/chart"
    helm("dependency", "build", str(chart))
    text = helm("template", "retail", str(chart), "-f", str(chart / "values-stateful.yaml"), "--skip-tests")
    repo.add("retail-store.yaml", objects_of(text))
    retail_store_annotations(repo)


def retail_store_annotations(repo: Repo) -> None:
    repo.depends("ui", "catalog:http,carts:http,checkout:http,orders:http")
    repo.depends("catalog", "catalog-mysql:mysql")
    repo.depends("carts", "carts-dynamodb:dynamodb")
    repo.depends("checkout", "checkout-redis:redis,orders:http")
    repo.depends("orders", "orders-postgresql:postgresql,orders-rabbitmq:amqp")
    for svc in ("catalog-mysql", "carts-dynamodb", "checkout-redis", "orders-postgresql", "orders-rabbitmq"):
        repo.stateful(svc)
    repo.entry("ui", 80, "retail.preview.example.com")


def booksapp(repo: Repo) -> None:
    """Buoyant's Books (the SQLite layout): authors and books call each other over HTTP (a cycle), the webapp both."""
    repo.copy(source("booksapp") / "booksapp.yml", "booksapp.yml")
    repo.depends("webapp", "authors:service,books:service")
    repo.depends("authors", "books:service")
    repo.depends("books", "authors:service")
    repo.entry("webapp", 7000, "books.preview.example.com")


def skaffold_helm_dependencies(repo: Repo) -> None:
    """The chart's own Ingress switched on and marked as the entry."""
    chart = source("skaffold-helm-dependencies") / "examples/helm-deployment-dependencies/skaffold-helm"
    text = helm("template", "rel", str(chart), "--set", "ingress.enabled=true",
                "--set", "ingress.hosts[0]=hello.preview.example.com")  # fmt: skip
    repo.add("skaffold-helm.yaml", objects_of(text))
    repo.annotate("Ingress", "rel-skaffold-helm", **{INGRESS: "true"})


# -- the same apps, read as upstream builds them -----------------------------------------------------------------------


def bank_of_anthos_kustomize(repo: BuiltRepo) -> None:
    """The development environment as skaffold deploys it: every service's overlay, plus the shared config."""
    src = source("bank-of-anthos")
    repo.tree(src)
    for kfile in sorted(src.glob("src/**/k8s/overlays/development/kustomization.yaml")):
        repo.kustomize(kfile.parent.relative_to(src).as_posix())
    repo.kustomize("iac/acm-multienv-cicd-anthos-autopilot/overlays/development")
    bank_of_anthos_annotations(repo)


def eks_workshop_retail_store_kustomize(repo: BuiltRepo) -> None:
    repo.tree(source("eks-workshop-retail-store"))
    repo.kustomize("manifests/base-application")
    annotate_eks_retail(repo)


def eks_workshop_retail_store_efs_kustomize(repo: BuiltRepo) -> None:
    repo.tree(source("eks-workshop-retail-store"))
    for svc in ("catalog", "carts", "checkout", "orders", "other"):
        repo.kustomize(f"manifests/base-application/{svc}")
    repo.kustomize("manifests/modules/fundamentals/storage/efs/deployment")
    annotate_eks_retail(repo)


def gke_whereami_kustomize(repo: BuiltRepo) -> None:
    repo.tree(source("gke-whereami"))
    for overlay in ("k8s-frontend-overlay-example", "k8s-backend-overlay-example"):
        repo.kustomize(f"quickstarts/whereami/{overlay}")
    repo.depends("whereami-frontend", "whereami-backend:http")
    repo.entry("whereami-frontend", 80, "whereami.preview.example.com")


def skaffold_kustomize_built(repo: BuiltRepo) -> None:
    repo.tree(source("skaffold-kustomize"))
    repo.kustomize("examples/getting-started-kustomize/overlays/dev")


def robot_shop_helm(repo: BuiltRepo) -> None:
    repo.tree(source("robot-shop"))
    repo.helm("K8s/helm", "rel")
    robot_shop_annotations(repo)


def retail_store_sample_app_helm(repo: BuiltRepo) -> None:
    """The umbrella chart's `file://` dependencies vendored with `helm dependency build`, as its README says."""
    repo.tree(source("retail-store-sample-app"))
    helm("dependency", "build", str(repo.root / "src/app/chart"))
    repo.helm("src/app/chart", "retail", ("src/app/chart/values-stateful.yaml",))
    retail_store_annotations(repo)


def skaffold_helm_dependencies_helm(repo: BuiltRepo) -> None:
    """The entry is the chart's own Ingress, switched on and marked by a values file of the adopter's."""
    chart = "examples/helm-deployment-dependencies/skaffold-helm"
    repo.tree(source("skaffold-helm-dependencies"))
    (repo.root / "preview-values.yaml").write_text(yaml.safe_dump({"ingress": {
        "enabled": True, "hosts": ["hello.preview.example.com"], "annotations": {INGRESS: "true"}}}))
    repo.helm(chart, "rel", ("preview-values.yaml",))


@dataclass(frozen=True)
class App:
    id: str
    build: Callable[[Repo], None]
    targets: tuple[str, ...]  # --service arguments: the flow
    wired: tuple[str, ...] = ()  # "a -> b" edges this flow must make dev->dev and wire
    unwired: tuple[str, ...] = ()  # "a -> b" edges hard-coded in images: dev->dev, unwired, warned
    built: bool = False  # the app's own tree read through `inputs:` (BuiltRepo), not flattened files
    notes: str = field(default="", compare=False)


def image(target: str) -> str:
    return f"ghcr.io/example/{target.rsplit('/', 1)[-1]}:{FLOW}"


def _same(app_id: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """targets, wired and unwired edges of the flattened form of an app: a built form must agree."""
    app = next(a for a in APPS if a.id == app_id)
    return app.targets, app.wired, app.unwired


APPS = [
    App("bank-of-anthos", bank_of_anthos, ("ledgerwriter", "userservice"),
        wired=("frontend -> ledgerwriter", "frontend -> userservice", "ledgerwriter -> ledger-db",
               "userservice -> accounts-db"),
        notes="ConfigMaps via envFrom, postgresql:// and jdbc: URIs, Postgres StatefulSets"),
    App("eks-workshop-retail-store", eks_workshop_retail_store, ("catalog", "orders"),
        wired=("ui/ui -> catalog/catalog", "ui/ui -> orders/orders", "catalog/catalog -> catalog/catalog-mysql",
               "orders/orders -> orders/orders-postgresql", "checkout/checkout -> orders/orders"),
        notes="one namespace per service, http://catalog.catalog.svc:80 across namespaces"),
    App("eks-workshop-retail-store-efs", eks_workshop_retail_store_efs, ("ui",),
        notes="ui mounts the PersistentVolumeClaim efs-claim"),
    App("gke-whereami", gke_whereami, ("whereami-backend",), wired=("whereami-frontend -> whereami-backend",),
        notes="configMapKeyRef BACKEND_SERVICE=http://whereami-backend after nameSuffix"),
    App("k8s-guestbook", k8s_guestbook, ("frontend",),
        unwired=("frontend -> redis-master", "frontend -> redis-replica", "redis-replica -> redis-master")),
    App("k8s-guestbook-go", k8s_guestbook_go, ("guestbook",),
        unwired=("guestbook -> redis-master", "guestbook -> redis-replica"),
        notes="ReplicationControllers"),
    App("gke-guestbook", gke_guestbook, ("frontend",),
        unwired=("frontend -> redis-leader", "frontend -> redis-follower", "redis-follower -> redis-leader")),
    App("skaffold-microservices", skaffold_microservices, ("leeroy-web", "leeroy-app"),
        unwired=("leeroy-web -> leeroy-app",), notes="a target no Service selects; headless leeroy-app"),
    App("skaffold-kustomize", skaffold_kustomize, ("skaffold-kustomize-dev",), notes="a lone Deployment"),
    App("robot-shop", robot_shop, ("cart",), unwired=("web -> cart", "cart -> redis")),
    App("retail-store-sample-app", retail_store_sample_app, ("orders",),
        wired=("ui -> orders", "orders -> orders-postgresql", "orders -> orders-rabbitmq"),
        unwired=("checkout -> orders",), notes="upstream values never set checkout's orders endpoint"),
    App("skaffold-helm-dependencies", skaffold_helm_dependencies, ("rel-skaffold-helm",)),
    App("booksapp", booksapp, ("books",),
        wired=("webapp -> authors", "webapp -> books", "authors -> books", "books -> authors"),
        notes="a cycle: routing none gives authors a copy, the dev books' calls come back through it"),
]  # fmt: skip
BUILT = [
    App("bank-of-anthos (kustomize)", bank_of_anthos_kustomize, *_same("bank-of-anthos"), built=True,
        notes="ten overlays/development builds: components, commonLabels, the shared config from iac/"),
    App("eks-workshop-retail-store (kustomize)", eks_workshop_retail_store_kustomize,
        *_same("eks-workshop-retail-store"), built=True),
    App("eks-workshop-retail-store-efs (kustomize)", eks_workshop_retail_store_efs_kustomize,
        *_same("eks-workshop-retail-store-efs"), built=True),
    App("gke-whereami (kustomize)", gke_whereami_kustomize, *_same("gke-whereami"), built=True),
    App("skaffold-kustomize (kustomize)", skaffold_kustomize_built, *_same("skaffold-kustomize"), built=True),
    App("robot-shop (helm)", robot_shop_helm, *_same("robot-shop"), built=True),
    App("retail-store-sample-app (helm)", retail_store_sample_app_helm, *_same("retail-store-sample-app"),
        built=True, notes="helm test Pods included, as devlane models what `helm template` renders"),
    App("skaffold-helm-dependencies (helm)", skaffold_helm_dependencies_helm, *_same("skaffold-helm-dependencies"),
        built=True),
]  # fmt: skip


def edge(text: str) -> tuple[Key, Key]:
    def key(part: str) -> Key:
        ns, _, name = part.strip().rpartition("/")
        return ns or None, name

    a, b = text.split("->")
    return key(a), key(b)


# -- rendering and checking -----------------------------------------------------------------------------------------


@dataclass
class Rendered:
    baseline: list[dict]
    objects: list[dict]
    flow_dir: Path
    returncode: int
    stderr: str


def render(app: App, tmp_path: Path, *extra: str, config: str | None = None, settings: dict | None = None) -> Rendered:
    """The app's flow; `settings` are merged into the repository's .devlane.yaml (the built forms have one)."""
    repo = (BuiltRepo if app.built else Repo)(tmp_path / "repo")
    app.build(repo)
    baseline = repo.write()
    if config is not None:
        (repo.root / ".devlane.yaml").write_text(config)
    if settings:
        path = repo.root / ".devlane.yaml"
        current = yamlc.safe_load(path.read_text()) if path.is_file() else {}
        path.write_text(yaml.safe_dump({**(current or {}), **settings}, sort_keys=False))
    out = tmp_path / "out"
    flags = [f"--service={t}={image(t)}" for t in app.targets]
    result = run_cli("render", str(repo.root), "--flow", FLOW, *flags, "--out", str(out), *extra, timeout=60)
    flow_dir = out / "flows" / FLOW
    objects = load_flow(flow_dir) if result.returncode == 0 else []
    return Rendered(baseline, objects, flow_dir, result.returncode, result.stderr)


def dev_service(objects: list[dict], key: Key) -> bool:
    ns, name = key
    return any(o["kind"] == "Service" and o["metadata"]["name"] == f"{name}-{FLOW}"
               and o["metadata"].get("namespace") == ns for o in objects)  # fmt: skip
