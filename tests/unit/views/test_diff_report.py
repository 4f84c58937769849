"""The diff report's views, in-process: Secret values are masked before anything is compared or shown, and the
pull-request comment degrades under GitHub's size cap (marker kept, tables cut, picture shrunk) but never exceeds
it. `devlane diff` on real git histories is in tests/e2e/test_diff.py."""

from __future__ import annotations

import pytest

from renderer.errors import Problem
from renderer.views import diff, markdown
from renderer.views.markdown import MAX_COMMENT


def test_secret_values_never_reach_the_report():
    text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: c2VjcmV0\nstringData:\n  pw: hunter2\n"
    masked = diff._masked(text, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                 "data": {"key": "c2VjcmV0"}, "stringData": {"pw": "hunter2"}})  # fmt: skip
    assert "c2VjcmV0" not in masked and "hunter2" not in masked and "key: <redacted sha256:" in masked
    plain = "kind: ConfigMap\ndata:\n  a: b\n"
    assert diff._masked(plain, {"kind": "ConfigMap", "data": {"a": "b"}}) == plain


@pytest.mark.parametrize("cap", [MAX_COMMENT, 4_000, 1_500, 300])
def test_the_comment_never_exceeds_the_cap(cap):
    """Thousands of services, a diff of megabytes: the comment degrades, keeps the marker, and stays under the cap."""
    names = [f"service-with-a-long-name-{i:04d}" for i in range(3000)]
    rows = [{"service": n, "kind": "service", "version": "dev", "reasons": ["target"], "plugins": ["db"],
             "added": 0, "changed": 1, "removed": 0} for n in names]  # fmt: skip
    changes = [diff.ObjectChange(("apps/v1", "Deployment", "", f"{n}-pr-9"), "changed", f"flows/pr-9/{n}.yaml", n,
                                 "-a\n+b\n" * 200) for n in names]  # fmt: skip
    report = diff.Report("pr-9", "base", "head", changes, rows, [], problems=[Problem("refused `x` | y")],
                         versions={n: "dev" for n in names})  # fmt: skip
    body = markdown.render_markdown(report, ["pr-9.example.com"], [], None, cap=cap)
    assert len(body) <= cap and body.startswith("<!-- devlane:flow=pr-9 -->\n")
    assert "`devlane-diff` artifact" in body and "<details>" not in body
    if cap >= 4_000:
        assert "| service | change |" in body and "more services in the artifact" in body
        assert "```mermaid" in body and body.count("```") % 2 == 0
