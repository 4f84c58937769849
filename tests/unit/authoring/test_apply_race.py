"""`init --write` never loses a concurrent edit (`renderer/authoring/yamledit.apply`): an edit that lands after
the plan was read, at any moment up to the swap, is kept, every file this command already wrote is put back, and
the command refuses; where the filesystem cannot swap, the file is read again right before the rename."""

from __future__ import annotations

import pytest

from renderer.authoring import yamledit
from renderer.errors import DevlaneError


def plan_for(tmp_path, files: dict[str, tuple[str, str]]) -> yamledit.EditPlan:
    for name, (before, _) in files.items():
        if before:
            (tmp_path / name).write_text(before)
    return yamledit.EditPlan(changes=dict(files))


@pytest.mark.parametrize("swap", [True, False], ids=["renameat2-exchange", "rename"])
def test_an_edit_landing_just_before_the_write_is_kept_and_nothing_is_written(tmp_path, monkeypatch, swap):
    plan = plan_for(tmp_path, {"a.yaml": ("a: 1\n", "a: 2\n"), "b.yaml": ("b: 1\n", "b: 2\n")})
    real = yamledit.exchange

    def racing(a, b):  # the user saves b.yaml in their editor at the last moment before devlane's swap
        if b.name == "b.yaml" and b.read_text() == "b: 1\n":
            b.write_text("b: edited\n")
        return real(a, b) if swap else False

    monkeypatch.setattr(yamledit, "exchange", racing)
    if not swap:  # no swap: the edit lands before the last read, which must see it
        real_unchanged = yamledit._unchanged

        def late(file, path, before):
            if path.name == "b.yaml" and path.read_text() == "b: 1\n" and getattr(late, "armed", False):
                path.write_text("b: edited\n")
            late.armed = True
            return real_unchanged(file, path, before)

        monkeypatch.setattr(yamledit, "_unchanged", late)
    with pytest.raises(DevlaneError, match=r"b\.yaml changed"):
        yamledit.apply(tmp_path, plan)
    assert (tmp_path / "b.yaml").read_text() == "b: edited\n"  # the user's edit, not devlane's
    assert (tmp_path / "a.yaml").read_text() == "a: 1\n"  # all or nothing: a.yaml put back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml"]  # no temporary file left


def test_without_a_race_every_file_is_written_and_new_files_are_created(tmp_path):
    plan = plan_for(tmp_path, {"a.yaml": ("a: 1\n", "a: 2\n"), "new.yaml": ("", "n: 1\n")})
    (tmp_path / "a.yaml").chmod(0o640)
    assert yamledit.apply(tmp_path, plan) == ["a.yaml", "new.yaml"]
    assert (tmp_path / "a.yaml").read_text() == "a: 2\n" and (tmp_path / "new.yaml").read_text() == "n: 1\n"
    assert (tmp_path / "a.yaml").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "new.yaml"]
