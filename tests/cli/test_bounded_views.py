"""Review surfaces a person can read (issue 45, point 3): `plan` and `preview` show the lane, the baseline services
one hop from it (each with why) and a count of the rest, never every baseline service nor an unrolled tree; `--all`
lists everything. Lines are counted in the printed output (and the HTML page's drawn nodes), not taken from the
view's own record."""

from __future__ import annotations

import re

from support import yaml_doc

K = "kardinal.dev.service/"
WIDE = 120  # services that all call one hub: a lane on a leaf touches the hub, not its 119 siblings


def _svc(name: str, deps: list[str] = ()) -> str:
    meta: dict = {"name": name, **({"annotations": {K + "dependencies": ",".join(f"{d}:http" for d in deps)}}
                                   if deps else {})}
    return (yaml_doc({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                      "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}})
            + yaml_doc({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "main", "image": f"{name}:1"}]}}}}))


def wide(harness) -> None:
    """svc-000 .. svc-119 each call hub; hub calls store-x; the lane changes svc-007."""
    harness.write("app.yaml", _svc("hub", ["store-x"]) + _svc("store-x")
                  + "".join(_svc(f"svc-{i:03d}", ["hub"]) for i in range(WIDE)))


def test_plan_lists_the_lane_and_its_neighbours_and_counts_the_rest(harness):
    wide(harness)
    out = harness.cli("plan", "--flow", "pr-1", "--service", "svc-007=svc:2").stdout
    rows = [ln for ln in out.splitlines() if re.match(r"  \S+ +(dev|shared|baseline)", ln)]
    assert [r.split()[:2] for r in rows] == [["hub", "baseline"], ["svc-007", "dev"]]
    assert re.search(r"\n  hub +baseline +called by svc-007\n", out)
    assert f"  ... and {WIDE} other baseline services the lane does not touch (--all lists them)" in out
    every = harness.cli("plan", "--flow", "pr-1", "--service", "svc-007=svc:2", "--all").stdout
    assert len([ln for ln in every.splitlines() if re.match(r"  \S+ +(dev|shared|baseline)", ln)]) == WIDE + 2
    assert "--all lists them" not in every


def test_preview_shows_the_lane_not_the_cluster(harness, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    wide(harness)
    out = harness.cli("preview", "--flow", "pr-1", "--service", "svc-007=svc:2", env={"NO_COLOR": "1"}).stdout
    lines = [ln.lstrip(" │├└─") for ln in out.splitlines()]
    assert len(lines) < 15, out
    assert "svc-007 dev (target)" in lines and "hub baseline (called by svc-007)" in lines
    assert f"... and {WIDE} other baseline services the lane does not touch (--all shows them)" in lines
    assert not [ln for ln in lines if ln.startswith(("svc-008", "store-x"))]
    every = harness.cli("preview", "--flow", "pr-1", "--service", "svc-007=svc:2", "--all").stdout
    assert len(every.splitlines()) > WIDE


def test_the_html_page_draws_the_lane(harness, tmp_path):
    wide(harness)
    page = tmp_path / "lane.html"
    harness.cli("preview", "--flow", "pr-1", "--service", "svc-007=svc:2", "--html", str(page))
    text = page.read_text()
    assert "svc-007" in text and "hub" in text and "svc-008" not in text and "store-x" not in text


def test_a_lane_through_a_diamond_ladder_is_one_line_per_service_and_edge(harness, monkeypatch):
    """20 levels of two services, each calling both of the next: 2^20 paths from the top. The tree shows each
    service once with its calls, and a service already shown as `(above)`."""
    monkeypatch.delenv("COLUMNS", raising=False)
    levels = 20
    docs = [_svc(f"l{i}-{side}", [f"l{i + 1}-a", f"l{i + 1}-b"] if i + 1 < levels else [])
            for i in range(levels) for side in "ab"]
    harness.write("app.yaml", "".join(docs))
    flags = [f"--service=l{i}-{side}=x:2" for i in range(levels) for side in "ab"]
    out = harness.cli("preview", "--flow", "pr-1", *flags, env={"NO_COLOR": "1"}).stdout
    lines = out.splitlines()
    edges = 2 * 2 * (levels - 1)
    assert len(lines) <= 1 + 2 * levels + edges, len(lines)
    assert sum("(above)" in ln for ln in lines) == edges - (2 * levels - 2)


def test_a_pull_request_that_changes_every_service_names_twenty_targets_then_counts_the_rest(capsys) -> None:
    """A base-image bump targets every service: stderr names the first 20 with why, then how many more by origin;
    --debug names each."""
    from renderer.cli.common import SAID_TARGETS, say_targets
    from renderer.render.plan.targets import COMMITTED, NOT_BUILT, TEMPLATE, Change

    changes = [Change(f"svc-{i:03d}", f"Deployment/svc-{i:03d} changed in svc-{i:03d}.yaml", f"img:{i}",
                      [TEMPLATE, COMMITTED, NOT_BUILT][i % 3]) for i in range(50)]
    say_targets(changes)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == SAID_TARGETS + 1 == 21
    assert lines[0] == "devlane: target svc-000: Deployment/svc-000 changed in svc-000.yaml (image img:0, built by CI)"
    assert lines[2] == "devlane: not a target: svc-002: Deployment/svc-002 changed in svc-002.yaml"
    assert "svc-020" not in "\n".join(lines)
    assert lines[-1] == ("devlane: ... and 30 more changed services (10 image built by CI, 10 image committed, not "
                         "built by CI, 10 not targets); --debug lists each")
    say_targets(changes, every=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 50 and lines[-1].startswith("devlane: target svc-049: ")
