"""The mutation report's bookkeeping (tests/mutation/report.py): names, the CI subset's globs, and equivalents that
outlive mutmut's renumbering."""

from __future__ import annotations

import pytest
from mutation import report  # tests/ is on the path (pyproject.toml); mutmut itself is not needed here

DIFF = """--- renderer/core/fence.py
+++ renderer/core/fence.py
@@ -1,3 +1,3 @@
 def contains(self, real: str) -> bool:
-    return real == self.root or real.startswith(self.root + os.sep)
+    return real == self.root or real.startswith(self.root)
"""


@pytest.mark.parametrize(("name", "function", "glob"), [
    ("renderer.core.fence.x\u01c1Fence\u01c1contains__mutmut_3", "renderer.core.fence.Fence.contains",
     "renderer.core.fence.x\u01c1Fence\u01c1contains*"),
    ("renderer.core.fence.x_inside__mutmut_12", "renderer.core.fence.inside", "renderer.core.fence.x_inside*"),
    ("renderer.host.confine.x__binaries__mutmut_1", "renderer.host.confine._binaries",
     "renderer.host.confine.x__binaries*"),
])  # fmt: skip
def test_a_mutant_is_named_by_its_function_and_the_subset_finds_it_again(name, function, glob):
    mutant = report.Mutant(name, "renderer/x.py", "survived")
    assert mutant.function == function
    assert report.mangled_glob(function) == glob == mutant.glob()


def test_the_fingerprint_names_the_change_not_mutmuts_number():
    first = report.Mutant("renderer.core.fence.x\u01c1Fence\u01c1contains__mutmut_3", "renderer/core/fence.py", "")
    renumbered = report.Mutant("renderer.core.fence.x\u01c1Fence\u01c1contains__mutmut_9", first.path, "")
    moved = DIFF.replace("@@ -1,3 +1,3 @@", "@@ -40,3 +40,3 @@")
    assert report.fingerprint(first, DIFF) == report.fingerprint(renumbered, moved)
    other = DIFF.replace("real.startswith(self.root)\n", "real.startswith(os.sep)\n")
    assert report.fingerprint(first, DIFF) != report.fingerprint(first, other)


def test_the_lists_read_entries_and_skip_comments(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text("# a comment\n\nrenderer.core.fence.inside 0123abcd45  a reason # with a hash\nthreshold 95\n")
    assert report.entries(listed) == [("renderer.core.fence.inside", "0123abcd45  a reason # with a hash"),
                                      ("threshold", "95")]  # fmt: skip
