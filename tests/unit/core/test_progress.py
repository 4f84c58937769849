"""Progress (issue 45, point 4): what the library reports while it works, seen through a recording reporter; the
CLI's display of it on a terminal is tests/e2e/test_progress_display.py."""

from __future__ import annotations

import pytest
from support import EXAMPLE

from renderer import api
from renderer.core import progress
from renderer.render.plan.flow_spec import FlowRequest


class Recorder:
    def __init__(self) -> None:
        self.stages: list[str] = []
        self.tasks: dict[int, list] = {}  # handle -> [label, total, advanced, finished]

    def stage(self, label: str) -> None:
        self.stages.append(label)

    def start(self, label: str, total: int | None) -> object:
        handle = len(self.tasks)
        self.tasks[handle] = [label, total, 0, False]
        return handle

    def advance(self, handle: object, steps: int) -> None:
        self.tasks[handle][2] += steps  # type: ignore[index]

    def finish(self, handle: object) -> None:
        self.tasks[handle][3] = True  # type: ignore[index]


@pytest.fixture
def recorder():
    rec = Recorder()
    previous = progress.install(rec)
    yield rec
    progress.install(previous)


def test_without_a_reporter_a_task_does_nothing():
    assert progress.install(None) is None
    with progress.task("x", 3) as step:
        step()
        step(2)
    progress.stage("nothing listens")


def test_a_render_reports_its_stages_and_counts_its_files_and_plugins(recorder):
    flow = api.resolve(FlowRequest(flow_id="pr-1", images={"orders": "ghcr.io/acme/orders:2"}))
    result = api.render(api.Options(repo=EXAMPLE, cache=False), flow)
    assert recorder.stages[:2] == ["loading the repository", "building the model"]
    assert recorder.stages[-1] == "emitting the flow" and "running the plugins" in recorder.stages
    by_label = {t[0]: t for t in recorder.tasks.values()}
    files = by_label["reading files"]
    assert files[1] == files[2] == len(result.loaded.files) > 0 and files[3]
    plugins = by_label["plugins"]
    assert plugins[1] == plugins[2] == len(result.plugins.results) == 2 and plugins[3]


def test_a_failing_step_still_finishes_its_task(recorder):
    with pytest.raises(RuntimeError), progress.task("doomed", 2) as step:
        step()
        raise RuntimeError
    [(label, total, advanced, finished)] = recorder.tasks.values()
    assert (label, total, advanced, finished) == ("doomed", 2, 1, True)


def test_lint_names_what_it_checks(recorder):
    api.lint(api.Options(repo=EXAMPLE, cache=False))
    assert recorder.stages[0] == "loading the repository" and recorder.stages[1] == "building the model"
    assert recorder.stages[2].startswith("checking ") and recorder.stages[2].endswith(" services")
