"""A real cyclic call graph plans: Buoyant's Books (../shared/realworld/booksapp, copied to a temporary directory),
where authors and books call each other. Routing none copies the cycle (test_realworld_isolation checks that flow
with the independent checker); on a mesh only the changed service is copied and the mesh brings the lane's
requests back to it, which `support.mesh_model` computes from the rendered routes; the one ambiguous case, a
shared member calling a dev member no header routes, is refused naming the edge, by render, plan and lint."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import CRDS, kubectl_kustomize, validate_strict
from support.harness import run_cli
from support.mesh_model import check_mesh_flow, entry_adds_member
from support.realworld_apps import FLOW, App, Repo, booksapp, image, render

CYCLE = "authors -> books -> authors"


def http_booksapp(repo: Repo) -> None:
    """Books as annotated for routing (test_realworld_isolation), its three HTTP ports declared as HTTP (upstream
    names them `service`, which a mesh reads as TCP)."""
    booksapp(repo)
    for name in ("webapp", "authors", "books"):
        for port in repo.find("Service", name)["spec"]["ports"]:
            port["appProtocol"] = "http"


def shared_authors(repo: Repo) -> None:
    booksapp(repo)
    repo.annotate("Service", "authors", **{"kardinal.dev.service/shared": "true"})


def plan_text(tmp_path: Path, build, routing: str) -> tuple[int, str, str]:
    repo = Repo(tmp_path / "repo")
    build(repo)
    repo.write()
    if routing != "none":
        (repo.root / ".devlane.yaml").write_text(f"routing: {routing}\nmesh: {{gateway: gateways/public}}\n")
    r = run_cli("plan", str(repo.root), "--flow", FLOW, f"--service=books={image('books')}", "--routing", routing)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("routing", ["gateway-api", "istio"])
def test_on_a_mesh_a_cycle_copies_only_the_changed_member(routing: str, tmp_path: Path):
    if not (CRDS / "gateway-api").is_dir() or not (CRDS / "istio").is_dir():
        pytest.skip("upstream Gateway API / Istio CRDs not available")
    app = App("booksapp-http", http_booksapp, ("books",))
    crds = ["--validate", "strict", "--crds", str(CRDS / "gateway-api"), "--crds", str(CRDS / "istio")]
    r = render(app, tmp_path, *crds, settings={"routing": routing, "mesh": {"gateway": "gateways/public"}})
    assert r.returncode == 0, r.stderr
    copies = sorted(o["metadata"]["name"] for o in r.objects if o["kind"] == "Deployment")
    assert copies == [f"books-{FLOW}"]  # authors stays baseline: its calls to books are routed by the header
    shared = kubectl_kustomize(r.flow_dir.parent / "_mesh") if routing == "istio" else []
    violations = check_mesh_flow(r.baseline, [*r.objects, *shared], FLOW)
    assert not violations, "\n".join(violations)  # baseline authors -> books with the baggage: the dev books
    assert entry_adds_member(r.objects, FLOW)
    for obj in [*kubectl_kustomize(r.flow_dir), *shared]:
        validate_strict(obj)
    rc, out, err = plan_text(tmp_path / "plan", http_booksapp, routing)
    assert rc == 0, err
    authors = next(line for line in out.splitlines() if line.split()[:1] == ["authors"])
    assert authors.split()[1] == "baseline" and f"in cycle {CYCLE} with dev books: stays baseline, the mesh routes " \
        "its calls to it by the flow header" in authors


def test_without_a_mesh_the_plan_says_why_the_cycle_is_copied(tmp_path: Path):
    rc, out, err = plan_text(tmp_path, booksapp, "none")
    assert rc == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[1:] if line.startswith(" ")}
    assert {name for name, line in rows.items() if line.split()[1] == "dev"} == {"authors", "books", "webapp"}
    assert f"in cycle {CYCLE}" in rows["authors"] and f"in cycle {CYCLE}" in rows["books"]
    assert "in cycle" not in rows["webapp"]  # on the entry's path, not in the cycle


def test_a_shared_member_calling_a_dev_one_is_refused_naming_the_edge(tmp_path: Path):
    """authors shared: one copy for every flow cannot call this flow's dev books without a header to route by."""
    app = App("booksapp-shared", shared_authors, ("books",))
    r = render(app, tmp_path)
    assert r.returncode == 1 and not r.flow_dir.exists()
    [error] = [line for line in r.stderr.splitlines() if line.startswith("devlane: error:")]
    assert "booksapp.yml (document 4), Service/authors" in error and f"dependency cycle {CYCLE} is ambiguous" in error
    assert "its call authors -> books cannot reach this flow's dev books" in error
    assert "hint: drop kardinal.dev.service/shared from authors" in r.stderr and "Traceback" not in r.stderr
    rc, _, err = plan_text(tmp_path / "plan", shared_authors, "none")
    assert rc == 1 and "its call authors -> books" in err
    lint = run_cli("lint", str(tmp_path / "repo"))
    assert lint.returncode == 0, lint.stdout  # lint renders no flow: a warning for the flows that would fail
    assert f"warning: booksapp.yml (document 4), Service/authors: dependency cycle {CYCLE}: authors is shared and " \
        "calls books, which no flow header routes to" in lint.stdout
    note = f"info: booksapp.yml (document 4), Service/authors: dependency cycle: {CYCLE}; a flow plans it"
    assert note in lint.stdout
