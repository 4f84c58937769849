"""Synthetic repositories of two flow shapes that stress the render's graph work, not its parsing.

Not a test (no `test_*` functions): the benchmark (`bench_render.py`) and the tests import it.

- **wide**: `n` HTTP services that all depend on one TCP store (a Postgres StatefulSet behind a
  headless Service, seeded by bench_render's stateful plugin). A flow giving one caller a new image
  gets a dev store (stateful downstream of the target), so every caller of that non-HTTP stateful
  store gets a dev copy too: `n + 1` dev services, each reading the store's address.
- **chain**: `n` HTTP services, each depending on the next (`cycle=True`: the last one on the first).
  A flow targeting the far end puts every service on the path from the ingress (routing `none`) in
  the flow: `n` dev services, as deep as the chain.

The documents come from bench_render's helpers (`deployment_doc`, `database_doc`, the ingress,
namespace and plugin), so both shapes look like the benchmark's repository; files are plain YAML
read through `.devlane.yaml` `inputs:` (one file per service, and a kustomization for kubectl).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

FLOW_ID = "pr-1"
STORE = 0  # the wide shape's store: bench_render's index of a database (a multiple of its BLOCK)


def _bench() -> ModuleType:
    """bench_render, imported on first use: it may import this module at its top, so importing it here at
    load time would be circular."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import bench_render

    return bench_render


def _write(repo: Path, services: dict[str, str], isolation: str, routing: str) -> None:
    """Write the services' files, the namespace, the ingress (to `svc-0001`), the seed plugin, a kustomization
    listing every file and a `.devlane.yaml` reading them as plain YAML."""
    bench = _bench()
    (repo / "plugins" / "seed").mkdir(parents=True)
    (repo / "plugins" / "seed" / "main.py").write_text(bench.PLUGIN_MAIN)
    files = {"namespace.yaml": bench.NAMESPACE_DOC, "ingress.yaml": bench.INGRESS_DOC, **services}
    for name, text in files.items():
        (repo / name).write_text(text)
    resources = "".join(f"  - {name}\n" for name in files)
    (repo / "kustomization.yaml").write_text(
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{resources}")
    mesh = "mesh: {gateway: gateways/public}\n" if routing != "none" else ""
    (repo / ".devlane.yaml").write_text(f"inputs: [{{path: '**/*.yaml'}}]\nisolation: {isolation}\n"
                                        f"routing: {routing}\n{mesh}")


def generate_wide(repo: Path, n: int, isolation: str = "suffix", routing: str = "none", plugin: bool = True) -> None:
    """Write the wide shape into `repo`: the store `svc-0000` and callers `svc-0001` ... `svc-{n}`, each with
    `kardinal.dev.service/dependencies: svc-0000:tcp` and the store's URL in its env. `plugin=False` leaves out
    the store's seed plugin (no plugin process runs: for in-process tests)."""
    if n < 1:
        raise ValueError("the wide shape needs at least one caller")
    bench = _bench()
    services = {f"{bench.svc(STORE)}.yaml": bench.database_doc(STORE) if plugin else _plain_store()}
    services.update({f"{bench.svc(i)}.yaml": bench.deployment_doc(i, [STORE]) for i in range(1, n + 1)})
    _write(repo, services, isolation, routing)


def _plain_store() -> str:
    """bench_render's database without its seed plugin: the StatefulSet and the Service, unannotated."""
    bench = _bench()
    name = bench.svc(STORE)
    statefulset, service, _seed = bench.database_doc(STORE).split("\n---\n")
    annotation = f'  annotations:\n    kardinal.dev.service/plugins: "seed-{name}"\n'
    if annotation not in service:
        raise RuntimeError(f"bench_render.database_doc changed: no plugin annotation {annotation!r} to leave out")
    return f"{statefulset}\n---\n{service.replace(annotation, '')}\n"


def wide_store() -> str:
    """The name of the wide shape's store Service (its dev copy is what every caller must reach)."""
    return _bench().svc(STORE)


def flow_for_wide(n: int) -> tuple[str, str, str]:
    """(flow id, target service, image) of the wide flow: a new image for `svc-0001`, the caller behind the
    ingress, which makes the store (stateful downstream) and so all `n` callers (its TCP parents) dev."""
    target = _bench().svc(1)
    return FLOW_ID, target, f"ghcr.io/acme/{target}:{FLOW_ID}"


def _chain_indices(n: int) -> list[int]:
    """bench_render's helpers call every service whose index is a multiple of its BLOCK a database
    (`svc-0050:tcp`), so the chain skips those indices."""
    bench = _bench()
    return [i for i in range(1, 2 * n + 2) if not bench.is_db(i)][:n]


def chain_services(n: int) -> list[str]:
    """The chain's service names in dependency order (`svc-0001` first)."""
    return [_bench().svc(i) for i in _chain_indices(n)]


def generate_chain(repo: Path, n: int, cycle: bool = False, isolation: str = "suffix", routing: str = "none") -> None:
    """Write the chain shape into `repo`: `chain_services(n)`, each depending on the next, the first one behind
    the ingress; with `cycle`, the last one depends on the first (a dependency cycle of `n` services)."""
    if n < 2:
        raise ValueError("a chain needs at least two services")
    bench = _bench()
    indices = _chain_indices(n)
    services = {}
    for k, i in enumerate(indices):
        deps = [indices[k + 1]] if k + 1 < n else [indices[0]] if cycle else []
        services[f"{bench.svc(i)}.yaml"] = bench.deployment_doc(i, deps)
    _write(repo, services, isolation, routing)


def flow_for_chain(n: int) -> tuple[str, str, str]:
    """(flow id, target service, image) of the chain flow: a new image for the far end, so (routing `none`)
    every service on the path from the ingress to it is dev."""
    target = chain_services(n)[-1]
    return FLOW_ID, target, f"ghcr.io/acme/{target}:{FLOW_ID}"
