"""`exclude:` is read as `.gitignore` lines (issue 44, point 8): whether devlane lists a file is what
`git check-ignore` says of it, for hundreds of pattern sets over paths at every depth; and a render skips
`k8s/scratch/junk.draft.yaml` for `exclude: ["*.draft.yaml"]`, as git would."""

from __future__ import annotations

import random
import subprocess

import pytest

from renderer.core.source import listed

pytestmark = pytest.mark.e2e

PATTERNS = ["*.draft.yaml", "scratch/", "/top.yaml", "build", "!keep/x.draft.yaml", "k8s/*.tmp.yaml", "**/b/*.yaml",
            "a/**", "x.yaml", "/a/b", "!b/x.yaml", "*.yaml", "!*.draft.yaml", "[ab]/x.yaml", "k8s/**/z.tmp.yaml",
            "./k8s/top.yaml", "b/", "!scratch/x.yaml", "?.yaml", "**/scratch", "\\!odd.yaml", "#comment", "",
            "k8s/scratch/**", "*.YAML"]
DIRS = ["", "a/", "b/", "k8s/", "k8s/scratch/", "a/b/", "build/", "keep/", "k8s/b/", "x/scratch/deep/", "a/buildx/"]
FILES = ["x.yaml", "top.yaml", "y.draft.yaml", "z.tmp.yaml", "x.draft.yaml", "c.yaml", "!odd.yaml", "X.YAML"]


def git_ignored(tmp_path, patterns: list[str], paths: list[str]) -> set[str]:
    (tmp_path / ".gitignore").write_text("".join(p + "\n" for p in patterns))
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-v", "-n"], cwd=tmp_path, text=True,
                          input="".join(p + "\n" for p in paths), capture_output=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    ignored = set()
    for line in done.stdout.splitlines():
        source, _, path = line.partition("\t")
        pattern = source.split(":", 2)[2] if source != "::" else ""
        if source != "::" and not pattern.startswith("!"):
            ignored.add(path)
    return ignored


def test_devlane_lists_what_git_does_not_ignore(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    rng = random.Random(44)
    paths = sorted({d + f for d in DIRS for f in FILES})
    for _ in range(200):
        patterns = [p.replace("./", "/", 1) if p.startswith("./") else p
                    for p in rng.sample(PATTERNS, rng.randint(1, 5))]
        ignored = git_ignored(tmp_path, patterns, paths)
        ours = {p for p in paths if not listed(p, ["**"], patterns)}
        assert ours == ignored, (patterns, sorted(ours ^ ignored))


def test_a_draft_file_at_any_depth_is_left_out_of_the_render(harness):
    harness.write("k8s/app.yaml", (
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\n"
        "spec:\n  selector: {app: api}\n  ports: [{port: 80}]\n---\napiVersion: apps/v1\nkind: Deployment\n"
        "metadata: {name: api}\nspec:\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: "
        "{app: api}}\n    spec: {containers: [{name: api, image: 'api:1'}]}\n"))
    harness.write("k8s/scratch/junk.draft.yaml", "kind: [this is not a manifest\n")
    harness.config({"exclude": ["*.draft.yaml"]})
    done = harness.cli("render", "--flow", "pr-1", "--service", "api=api:2")
    assert done.returncode == 0 and "junk.draft.yaml" not in done.stderr, done.stderr
