"""Bad inputs, one test each: one clear error naming what is wrong (exit 1, or 2 for usage), no traceback,
no "internal error", the previous output byte-identical and no temporary files left behind.

Each test first renders a good repository into `out`, then breaks one input and renders again. The
ones that used to crash the interpreter or hang (a segfault, a FIFO, `/dev/zero`, a closed pipe) run
the real CLI in a subprocess with a timeout, since only a process outside can see those; the rest
run in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import ROOT, Harness, app_yaml, run_cli, tree

from renderer.core import files, source
from renderer.core.yamlbounds import MAX_DEPTH

FLOW = ("--flow", "pr-1", "--service", "api=api:2")
K = "kardinal.dev.service/"


@pytest.fixture
def rendered(harness: Harness):
    """A repository with one service, rendered once into `out`; returns a check that a second render failed
    cleanly and left that output as it was."""
    harness.app("api")
    out = harness.tmp / "out"
    first = harness.cli("render", *FLOW, "--out", out)
    assert first.returncode == 0, first.stderr
    before = tree(out)

    def refused(result, *needles: str, code: int = 1) -> str:
        errors = [line for line in result.stderr.splitlines() if line.startswith("devlane: error:")]
        assert result.returncode == code, result.stderr
        assert len(errors) == 1, result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
        for needle in needles:
            assert needle in result.stderr, result.stderr
        assert tree(out) == before
        assert not [p for p in out.rglob(".devlane-*")]
        return result.stderr

    refused.out = out
    return refused


def render(harness: Harness, out) -> object:
    return harness.cli("render", *FLOW, "--out", out)


# -- the file system: only regular files, inside the repository, bounded ------------------------------------


def test_dangling_symlink_is_an_error_naming_the_link(harness, rendered):
    (harness.root / "gone.yaml").symlink_to("nowhere.yaml")
    rendered(render(harness, rendered.out), "gone.yaml", "dangling symlink", "nowhere.yaml")


def test_looping_symlink_is_an_error_naming_the_link(harness, rendered):
    (harness.root / "a.yaml").symlink_to("a.yaml")
    rendered(render(harness, rendered.out), "a.yaml", "symlink loop")


def test_symlinked_manifest_outside_the_repository_is_not_read(harness, rendered):
    outside = harness.tmp / "elsewhere.yaml"
    outside.write_text(app_yaml("intruder"))
    (harness.root / "intruder.yaml").symlink_to(outside)
    err = rendered(render(harness, rendered.out), "intruder.yaml", "points outside the repository")
    assert "hint:" in err


def test_symlink_inside_the_repository_is_followed(harness, rendered):
    harness.write("shared/db.yaml", app_yaml("db"))
    (harness.root / "db-link.yml").symlink_to("shared/db.yaml")
    harness.config({"exclude": ["shared/**"]})
    out = harness.cli("render", *FLOW, "--service", "db=db:2", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "name: db-pr-1" in out.stdout


def test_symlink_to_dev_zero_is_refused_without_reading(harness, rendered):
    (harness.root / "zero.yaml").symlink_to("/dev/zero")
    rendered(render(harness, rendered.out), "zero.yaml", "outside the repository")


def test_fifo_in_the_repository_is_refused_without_blocking(harness, rendered):
    os.mkfifo(harness.root / "pipe.yaml")  # nobody ever writes it: opening it to read would block forever
    rendered(render(harness, rendered.out), "pipe.yaml", "FIFO", "regular file")


def test_config_that_is_a_dangling_symlink_is_an_error(harness, rendered):
    (harness.root / ".devlane.yaml").symlink_to("missing-config.yaml")
    rendered(render(harness, rendered.out), ".devlane.yaml", "dangling symlink")


def test_file_over_the_size_limit_names_file_and_limit(harness, rendered, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    harness.write("big.yaml", "# " + "x" * 2000 + "\n")
    rendered(render(harness, rendered.out), "big.yaml", "1,000-byte limit")


def test_total_bytes_read_are_bounded(harness, rendered, monkeypatch):
    monkeypatch.setattr(source, "MAX_TOTAL_BYTES", 3000)
    for i in range(4):
        harness.write(f"part-{i}.yaml", "# " + "x" * 1000 + "\n")
    rendered(render(harness, rendered.out), "3,000-byte limit", "files read are")


def test_flow_file_that_is_a_fifo_is_refused(harness, rendered):
    fifo = harness.tmp / "flow.yaml"
    os.mkfifo(fifo)
    result = harness.cli("render", "--flow-file", fifo, "--out", rendered.out)
    rendered(result, "flow.yaml", "FIFO")


# -- YAML: nesting, size, keys, aliases -------------------------------------------------------------------


def test_deep_nesting_is_refused_before_parsing(harness, rendered):
    harness.write("deep.yaml", "x: " + "[" * 5000 + "]" * 5000 + "\n")
    rendered(render(harness, rendered.out), "deep.yaml:1", f"deeper than {MAX_DEPTH} levels")


def test_deep_block_nesting_names_the_line(harness, rendered):
    harness.write("deep.yaml", "".join(" " * i + "- \n" for i in range(MAX_DEPTH + 50)))
    rendered(render(harness, rendered.out), f"deep.yaml:{MAX_DEPTH + 1}", "deeper than")


def test_nesting_at_the_limit_renders(harness):
    """A value as deep as the limit allows, in the pod spec: copied, rewritten and dumped without a RecursionError."""
    nested: list = ["db"]
    for _ in range(MAX_DEPTH - 7):  # Deployment, spec, template, spec, containers, the container, then these
        nested = [nested]
    harness.app("api", containers=[{"name": "main", "image": "api:1", "x": nested}])
    out = harness.cli("render", *FLOW, "--stdout")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("- - - - -") > 0


def test_spec_of_the_wrong_type_is_a_clear_error(harness, rendered):
    harness.write("bad.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec: [1, 2]\n")
    rendered(render(harness, rendered.out), "bad.yaml", "Service/bad", "spec")


def test_duplicate_keys_are_an_error_naming_file_and_line(harness, rendered):
    harness.write("dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n")
    rendered(render(harness, rendered.out), "dup.yaml:5", "duplicate key 'name'", "line 4")


def test_duplicate_keys_in_the_config_are_an_error(harness, rendered):
    harness.write(".devlane.yaml", "apiVersion: devlane.dev/v1alpha1\nkind: Config\nrouting: none\nrouting: istio\n")
    rendered(render(harness, rendered.out), ".devlane.yaml:4", "duplicate key 'routing'")


def test_merge_keys_still_work_and_explicit_keys_win(harness, rendered):
    harness.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\n"
                             "base: &b {a: '1', b: '2'}\ndata: {<<: *b, b: '3'}\n")  # fmt: skip
    result = harness.render("pr-1", {"api": "api:2"})
    cm = next(d for d in result.loaded.documents if d.name == "m")
    assert cm.obj["data"] == {"a": "1", "b": "3"}


def test_recursive_alias_is_refused(harness, rendered):
    harness.write("rec.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata: &d {x: *d}\n")
    rendered(render(harness, rendered.out), "rec.yaml", "contains it")


# -- the dependency graph ------------------------------------------------------------------------------


def _chain(harness: Harness, n: int, cycle: bool) -> None:
    """Services s0 -> s1 -> ... -> s(n-1) (-> s0), s0 with a workload."""
    docs = [app_yaml("s0").split("---\n")[0]]
    for i in range(n):
        nxt = (i + 1) % n if cycle else i + 1
        deps = f"\n  annotations: {{{K}dependencies: 's{nxt}:http'}}" if cycle or nxt < n else ""
        selector = "\n  selector: {app: s0}" if i == 0 else ""
        docs.append(f"apiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}{deps}\nspec:{selector}\n"
                    "  ports: [{name: http, port: 80}]\n")
    harness.write("chain.yaml", "---\n".join(docs))


@pytest.mark.parametrize("n", [1_000, pytest.param(10_000, marks=pytest.mark.e2e)])
def test_deep_dependency_chain_renders(harness, n):
    _chain(harness, n, cycle=False)
    out = harness.cli("render", "--flow", "pr-1", "--service", "s0=s0:2", "--stdout")
    assert out.returncode == 0, out.stderr
    assert "name: s0-pr-1" in out.stdout


@pytest.mark.e2e  # 10,000 services: about a second in-process
def test_long_dependency_cycle_of_services_without_workloads_is_a_short_clear_error(harness, rendered):
    """Routing none: every member of the cycle needs a dev copy, and 9,999 of them have no workload to copy."""
    _chain(harness, 10_000, cycle=True)
    err = rendered(harness.cli("render", "--flow", "pr-1", "--service", "s0=s0:2", "--out", rendered.out),
                   "9,999 Services need a dev version but no Deployment or StatefulSet selects them: s1, s10, ",
                   "in cycle s0 -> s1", "(10,000 services)")
    assert len(err) < 2000  # one error that counts them, not 9,999 errors


# -- the output directory ----------------------------------------------------------------------------


def test_out_inside_the_inputs_is_a_usage_error(harness, rendered):
    result = harness.cli("render", *FLOW, "--out", harness.root / "out")
    rendered(result, "inside the repository", "exclude", code=2)
    assert not (harness.root / "out").exists()


def test_out_inside_the_repository_but_excluded_renders(harness, rendered):
    harness.config({"exclude": ["out/**"]})
    first = harness.cli("render", *FLOW, "--out", harness.root / "out")
    second = harness.cli("render", *FLOW, "--out", harness.root / "out")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "2 objects" in second.stderr  # not read back: the same objects again


def test_default_output_directory_is_never_read_back(harness, rendered):
    for _ in range(2):
        result = harness.cli("render", *FLOW)
        assert result.returncode == 0, result.stderr
    assert (harness.root / "rendered" / "flows" / "pr-1").is_dir()


# -- crashes and hangs, seen from outside: the real CLI in a subprocess ------------------------------------


@pytest.mark.e2e
def test_100k_level_nesting_does_not_crash_the_interpreter(harness, rendered):
    harness.write("deep.yaml", "x: " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = run_cli("render", str(harness.root), *FLOW, "--out", str(rendered.out), timeout=60)
    assert result.returncode == 1  # not -11 (SIGSEGV)
    rendered(result, "deep.yaml:1", "deeper than")


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["pipe.yaml", "zero.yaml"])
def test_fifo_or_dev_zero_neither_hangs_nor_exhausts_memory(harness, rendered, name):
    if name == "pipe.yaml":
        os.mkfifo(harness.root / name)
    else:
        (harness.root / name).symlink_to("/dev/zero")
    result = run_cli("render", str(harness.root), *FLOW, "--out", str(rendered.out), timeout=60)
    rendered(result, name)


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["reader gone", "closed"])
def test_closed_stdout_is_one_line_and_exit_1_a_reader_gone_is_quiet(harness, rendered, how):
    """`>&-` is the caller's mistake (one line, exit 1); a reader that went away (`| head`) ends the command
    quietly with 141, as git and kubectl (issue 46)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "renderer.cli", "render", str(harness.root), *FLOW, "--stdout"]
    if how == "closed":
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=60,
                              text=True, preexec_fn=lambda: os.close(1))
    else:
        read, write = os.pipe()
        os.close(read)  # the reader is gone before devlane writes a byte
        try:
            proc = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, env=env, timeout=60, text=True)
        finally:
            os.close(write)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("devlane: error")]
    if how == "closed":
        assert proc.returncode == 1, proc.stderr
        assert errors == ["devlane: error: cannot write to standard output: the pipe or file is closed"], proc.stderr
    else:
        assert (proc.returncode, errors) == (141, []), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


# -- a git ref: symlink blobs follow the same rules ----------------------------------------------------------


@pytest.mark.e2e  # git
def test_symlink_blob_leaving_the_repository_at_a_ref_is_refused(harness, rendered):
    (harness.tmp / "secret.yaml").write_text(app_yaml("intruder"))
    (harness.root / "intruder.yaml").symlink_to("../secret.yaml")
    harness.commit()
    (harness.root / "intruder.yaml").unlink()  # the work tree is clean: only the ref holds the link
    result = harness.cli("render", *FLOW, "--ref", "HEAD", "--out", rendered.out)
    rendered(result, "intruder.yaml", "points outside the repository", "HEAD")


@pytest.mark.e2e  # git
def test_symlink_blobs_inside_the_repository_are_followed_at_a_ref(harness, rendered):
    harness.write("shared/db.yaml", app_yaml("db"))
    harness.config({"exclude": ["shared/**", "out/**"]})
    (harness.root / "db.yaml").symlink_to("shared/db.yaml")
    (harness.root / "self.yaml").symlink_to("self.yaml")
    harness.commit()
    result = harness.cli("render", *FLOW, "--service", "db=db:2", "--ref", "HEAD", "--stdout")
    assert result.returncode == 1 and "self.yaml" in result.stderr and "symlink loop" in result.stderr
    (harness.root / "self.yaml").unlink()
    harness.commit("drop the loop")
    result = harness.cli("render", *FLOW, "--service", "db=db:2", "--ref", "HEAD", "--stdout")
    assert result.returncode == 0, result.stderr
    assert "name: db-pr-1" in result.stdout


def test_cmp_parameters_nested_too_deeply_are_a_clear_error(harness):
    harness.app("api")
    env = {"ARGOCD_ENV_FLOW_ID": "pr-1", "ARGOCD_APP_PARAMETERS": "[" * 100_000 + "]" * 100_000}
    result = harness.cli("cmp", "generate", cwd=harness.root, env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert "ARGOCD_APP_PARAMETERS is nested too deeply" in result.stderr and "Traceback" not in result.stderr


def test_lock_file_nested_too_deeply_is_a_clear_error(harness):
    harness.app("api")
    harness.write("devlane.lock", "plugins: " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = harness.cli("plugins", "lock", str(harness.root))
    assert result.returncode == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "devlane.lock" in result.stderr and "deeper than" in result.stderr
