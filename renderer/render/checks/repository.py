"""lint's checks of a whole repository, in the order it reports them: what loading and the model found, then the
flow risks, unwirable edges and mesh problems beside every service's reach (`lint_shares`), then the cycle risks.

A module of its own so that `renderer.linting` imports it (and, through it, every check) only when its stored
findings do not hold: an unchanged repository's lint loads none of this.
"""

from __future__ import annotations

from ...core import deadline
from ...errors import Problem
from ..inputs.load import Loaded
from ..model.topology import build_model
from ..plan.planner import cycle_risks
from ..settings.render_settings import lane_of
from ..settings.repo_config import Isolation, RepoConfig, Routing
from ..stored.lint_entry import Findings
from . import invariants, lint_shares
from .mesh_lint import mesh_problems


def findings(loaded: Loaded, config: RepoConfig, routing: Routing | None, isolation: Isolation | None) -> Findings:
    """Every finding of lint on `loaded` under `config` (as the trusted policy left it) and the routing and
    isolation asked for on the command line (None: the config's)."""
    deadline.stage("building the model")
    model = build_model(loaded.documents, config.namespace)
    routed = routing or config.routing
    on_mesh = routed != "none"
    deadline.stage(f"checking {len(model.services)} services")

    def others() -> list[Problem]:
        wiring = [] if lane_of(config, isolation).by_namespace else invariants.unwirable_edges(model, on_mesh)
        return invariants.flow_risks(model) + wiring + mesh_problems(model, config, routing, isolation)

    undeclared, before = lint_shares.undeclared_beside(model, frozenset(config.shared_stores), others)
    plugins = [(pdef.instance_where, [str(c["name"]) for c in pdef.candidates]) for pdef in model.plugin_defs.values()]
    return Findings(loaded.problems + model.problems, plugins, before + undeclared + cycle_risks(model, routed))
