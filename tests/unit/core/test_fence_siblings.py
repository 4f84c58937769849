"""The fence around what a repository may name (`renderer/core/fence.py`), each shape of path on its own case
(issue 41, points 2-3): a sibling directory whose name merely starts like the repository's (`/builds/app-secrets`
beside `/builds/app`), a symlink inside the repository to a file outside (a fake `~/.kube/config`), a relative link
climbing out (`../../..`), an absolute link, a symlinked directory on the way, the repository itself reached
through a link, and the operator's allowed directories (`--allow-path`, `$DEVLANE_ALLOW_PATHS`). Every refusal is
the error itself (`outside-repository`, naming the field and the path); real files and links in a temp dir.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from renderer.core.fence import ALLOW_ENV, Fence, inside, operator_dirs
from renderer.errors import DevlaneError, Where

WHERE = Where(file=".devlane.yaml")


@pytest.fixture
def scene(tmp_path) -> dict[str, Path]:
    """`builds/app` (the repository, with a file and a subdirectory), `builds/app-secrets` and `builds/appx` beside
    it (each name starts with the repository's), a fake `home/.kube/config`, and `shared/` (the operator's bases)."""
    builds = tmp_path / "builds"
    app = builds / "app"
    (app / "env").mkdir(parents=True)
    (app / "env" / "dev.yaml").write_text("image: api:2\n")
    (app / "kustomization.yaml").write_text("resources: []\n")
    for sibling in ("app-secrets", "appx", "app.d"):
        (builds / sibling).mkdir()
        (builds / sibling / "values.yaml").write_text("token: PLANTED\n")
    (tmp_path / "home" / ".kube").mkdir(parents=True)
    (tmp_path / "home" / ".kube" / "config").write_text("users: [{user: {token: PLANTED}}]\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "base.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "shared-evil").mkdir()
    return {
        "tmp": tmp_path,
        "builds": builds,
        "app": app,
        "kube": tmp_path / "home" / ".kube" / "config",
        "shared": tmp_path / "shared",
    }


def refused(fence: Fence, path: str | Path, what: str = "the values file v.yaml") -> DevlaneError:
    with pytest.raises(DevlaneError) as info:
        fence.resolve(path, what, WHERE)
    [problem] = info.value.problems
    assert problem.code == "outside-repository" and problem.where == WHERE
    assert (
        problem.message.startswith(f"{what} resolves to ")
        and f"outside the repository ({fence.repository})" in problem.message
    )
    assert "--allow-path" in problem.hint and ALLOW_ENV in problem.hint
    return info.value


# -- contains: the lexical test on real paths ------------------------------------------------------------------


@pytest.mark.parametrize(("roots", "path", "inside_"), [
    (("/builds/app",), "/builds/app", True),  # the root itself
    (("/builds/app",), "/builds/app/env/dev.yaml", True),
    (("/builds/app",), "/builds/app-secrets", False),  # a sibling whose name starts with the root's
    (("/builds/app",), "/builds/app-secrets/values.yaml", False),
    (("/builds/app",), "/builds/appx", False),
    (("/builds/app",), "/builds/app.d/x", False),
    (("/builds/app",), "/builds", False),  # the parent
    (("/builds/app",), "/", False),
    (("/builds/app",), "/etc/passwd", False),
    (("/builds/app/",), "/builds/app/x", True),  # a root written with its trailing slash
    (("/builds/app/",), "/builds/app-secrets", False),
    (("/builds/TeX",), "/builds/TeX/k.yaml", True),  # a root whose name ends in X (or any letter) is no different
    (("/builds/TeX",), "/builds/TeX-secrets", False),
    (("/builds/app", "/shared/bases"), "/shared/bases/web/k.yaml", True),  # the operator's directory
    (("/builds/app", "/shared/bases"), "/shared/bases", True),
    (("/builds/app", "/shared/bases"), "/shared/bases-evil/k.yaml", False),
    (("/builds/app", "/shared/bases"), "/shared", False),
    (("/",), "/etc/passwd", True),  # a repository at / holds everything
])  # fmt: skip
def test_contains_is_a_path_prefix_never_a_string_prefix(roots, path, inside_):
    assert Fence(roots).contains(path) is inside_


def test_around_takes_the_real_path_of_the_repository_and_drops_empty_allowed_entries(scene):
    link = scene["tmp"] / "checkout"
    link.symlink_to(scene["app"])
    fence = Fence.around(link, ["", str(scene["shared"]), ""])
    assert fence.roots == (str(scene["app"]), str(scene["shared"]))  # an empty entry would allow every path
    assert fence.repository == str(scene["app"])
    assert not Fence.around(scene["app"], [""]).contains("/etc/passwd")
    # a path given through the link the operator made is inside, and comes back as its real path
    assert fence.resolve(link / "env" / "dev.yaml", "v", WHERE) == str(scene["app"] / "env" / "dev.yaml")
    assert Fence.around(str(link)).repository == str(scene["app"])  # a str as well as a Path


# -- resolve: every way a path may lead out ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape", ["sibling-prefix", "sibling-appx", "sibling-dot", "dotdot-home", "absolute-home", "parent", "absolute-etc"]
)
def test_a_path_outside_is_refused_naming_the_field_and_the_real_path(scene, shape):
    app = scene["app"]
    path = {
        "sibling-prefix": app / ".." / "app-secrets" / "values.yaml",
        "sibling-appx": app / ".." / "appx" / "values.yaml",
        "sibling-dot": app / ".." / "app.d" / "values.yaml",
        "dotdot-home": app / ".." / ".." / "home" / ".kube" / "config",
        "absolute-home": scene["kube"],
        "parent": app / "..",
        "absolute-etc": Path("/etc/passwd"),
    }[shape]
    err = refused(Fence.around(app), path)
    assert f"resolves to {os.path.realpath(path)}," in err.problems[0].message


@pytest.mark.parametrize("target", ["absolute", "relative"])
def test_a_symlinked_file_in_the_repository_leading_out_is_refused(scene, target):
    """The link's own path is inside; only following it (realpath, never abspath) shows where it leads."""
    link = scene["app"] / "env" / "kubeconfig.yaml"
    link.symlink_to(scene["kube"] if target == "absolute" else Path("..", "..", "..", "home", ".kube", "config"))
    err = refused(Fence.around(scene["app"]), link)
    assert f"resolves to {scene['kube']}," in err.problems[0].message


def test_a_symlinked_directory_on_the_way_is_followed(scene):
    (scene["app"] / "vendor").symlink_to(scene["builds"] / "app-secrets")
    refused(Fence.around(scene["app"]), scene["app"] / "vendor" / "values.yaml")
    (scene["app"] / "deep").symlink_to(Path("env"))  # a link that stays inside is fine
    got = Fence.around(scene["app"]).resolve(scene["app"] / "deep" / "dev.yaml", "v", WHERE)
    assert got == str(scene["app"] / "env" / "dev.yaml")


def test_a_link_to_a_sibling_with_the_same_prefix_is_refused(scene):
    (scene["app"] / "secrets.yaml").symlink_to(Path("..", "app-secrets", "values.yaml"))
    refused(Fence.around(scene["app"]), scene["app"] / "secrets.yaml")


def test_a_path_inside_comes_back_as_its_real_path(scene):
    app = scene["app"]
    fence = Fence.around(app)
    assert fence.resolve(app / "env" / ".." / "env" / "dev.yaml", "v", WHERE) == str(app / "env" / "dev.yaml")
    assert fence.resolve(app, "the repository", WHERE) == str(app)
    assert fence.resolve(app / "missing.yaml", "v", WHERE) == str(app / "missing.yaml")  # existence is the caller's


def test_a_relative_path_is_relative_to_the_current_directory(scene, monkeypatch):
    monkeypatch.chdir(scene["app"] / "env")
    fence = Fence.around(scene["app"])
    assert fence.resolve("dev.yaml", "v", WHERE) == str(scene["app"] / "env" / "dev.yaml")
    refused(fence, "../../app-secrets/values.yaml")
    refused(fence, "../../../home/.kube/config")


def test_the_operator_may_allow_a_directory_beside_the_repository_and_no_other(scene):
    fence = Fence.around(scene["app"], operator_dirs([str(scene["shared"])]))
    assert fence.resolve(scene["shared"] / "base.yaml", "v", WHERE) == str(scene["shared"] / "base.yaml")
    refused(fence, scene["tmp"] / "shared-evil")  # a sibling of the allowed directory with its name as prefix
    refused(fence, scene["kube"])
    assert "outside the repository (" + str(scene["app"]) + ")" in str(refused(fence, scene["kube"]))


# -- escaping links in a directory ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "target", "escapes"), [
    ("leak.yaml", "../../../home/.kube/config", True),  # a relative link climbing out
    ("leak.yaml", "ABS:home/.kube/config", True),  # an absolute one
    ("leak", "../../app-secrets", True),  # a directory link to the sibling with the same prefix
    ("leak", "ABS:builds/appx", True),
    ("sub/leak.yaml", "../../../../home/.kube/config", True),  # deeper in the tree
    ("sub/deeper/leak.yaml", "ABS:builds/app-secrets/values.yaml", True),
    ("dangling.yaml", "../../../nowhere/x.yaml", True),  # dangling, outside: still refused
    ("ok.yaml", "dev.yaml", False),  # a link that stays inside
    ("ok.yaml", "../kustomization.yaml", False),  # relative, climbing within the repository
    ("sub/ok.yaml", "../../env/dev.yaml", False),
    ("ok", "..", False),  # a directory link to the repository's own directory
    ("dangling.yaml", "missing.yaml", False),  # dangling, inside
])  # fmt: skip
def test_each_link_shape_in_a_directory(scene, rel, target, escapes):
    env = scene["app"] / "env"
    link = env / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(scene["tmp"] / target[4:] if target.startswith("ABS:") else Path(target))
    fence = Fence.around(scene["app"])
    found = fence.escaping_link(env)
    if not escapes:
        assert found is None
        fence.check_links(env, "its directory", WHERE)
        return
    assert found == (str(link), os.path.realpath(link))
    with pytest.raises(DevlaneError) as info:
        fence.check_links(env, "its directory", WHERE)
    [problem] = info.value.problems
    assert problem.code == "outside-repository" and problem.where == WHERE
    assert problem.message == (
        f"its directory: the symlink env/{rel} resolves to {os.path.realpath(link)}, outside "
        f"the repository ({scene['app']})"
    )
    assert problem.hint == "replace the link by the file it names, or point it inside the repository"


def test_a_link_into_an_allowed_directory_is_fine_and_one_beside_it_is_not(scene):
    env = scene["app"] / "env"
    (env / "base.yaml").symlink_to(scene["shared"] / "base.yaml")
    assert Fence.around(scene["app"], [str(scene["shared"])]).escaping_link(env) is None
    assert Fence.around(scene["app"]).escaping_link(env) == (str(env / "base.yaml"), str(scene["shared"] / "base.yaml"))
    (env / "evil").symlink_to(scene["tmp"] / "shared-evil")
    assert Fence.around(scene["app"], [str(scene["shared"])]).escaping_link(env) == (
        str(env / "evil"),
        str(scene["tmp"] / "shared-evil"),
    )


def test_the_first_escaping_link_is_found_in_a_stable_order(scene):
    """Files before directories in each directory, names sorted, directories walked in sorted order: the same
    link is named on every machine, whatever order the file system lists them in."""
    top = scene["app"] / "tree"
    for sub in ("b", "a"):  # made in reverse order
        (top / sub).mkdir(parents=True)
        (top / sub / "z.yaml").symlink_to(scene["kube"])
    fence = Fence.around(scene["app"])
    assert fence.escaping_link(top) == (str(top / "a" / "z.yaml"), str(scene["kube"]))
    for name in ("y.yaml", "w.yaml", "x.yaml"):  # files of the top directory come before its subdirectories
        (top / name).symlink_to(scene["kube"])
    (top / "c").symlink_to(scene["builds"] / "appx")  # and before a directory link beside them
    assert fence.escaping_link(top) == (str(top / "w.yaml"), str(scene["kube"]))
    for name in ("y.yaml", "w.yaml", "x.yaml"):
        (top / name).unlink()
    assert fence.escaping_link(top) == (str(top / "c"), str(scene["builds"] / "appx"))  # before what a/ holds
    (top / "c").unlink()
    (top / "a" / "z.yaml").unlink()
    assert fence.escaping_link(top) == (str(top / "b" / "z.yaml"), str(scene["kube"]))


def test_a_linked_directory_is_not_walked_into(scene):
    """os.walk does not follow a link: a link to a directory inside is judged by where it leads, once."""
    (scene["app"] / "env" / "again").symlink_to(scene["app"] / "env")
    assert Fence.around(scene["app"]).escaping_link(scene["app"]) is None


def test_inside_joins_the_entry_to_its_base(scene):
    fence = Fence.around(scene["app"])
    assert inside(fence, scene["app"] / "env", "dev.yaml", "resources entry", WHERE) == str(
        scene["app"] / "env" / "dev.yaml"
    )
    assert inside(fence, scene["app"] / "env", "../kustomization.yaml", "r", WHERE) == str(
        scene["app"] / "kustomization.yaml"
    )
    for entry in ("../../app-secrets/values.yaml", str(scene["kube"]), "../../../home/.kube/config"):
        with pytest.raises(DevlaneError, match=r"resources entry .* resolves to .* outside the repository") as info:
            inside(fence, scene["app"] / "env", entry, f"resources entry {entry!r}", WHERE)
        assert info.value.problems[0].where == WHERE  # the file that names the entry


# -- the operator's directories ------------------------------------------------------------------------------------


def test_operator_dirs_are_the_flags_then_the_environment_real_existing_and_once(scene, monkeypatch):
    tmp = scene["tmp"]
    (tmp / "linked-shared").symlink_to(scene["shared"])
    (tmp / "a-file").write_text("")
    monkeypatch.setenv("HOME", str(tmp / "home"))
    monkeypatch.setenv(
        ALLOW_ENV,
        os.pathsep.join(["", str(tmp / "linked-shared"), str(tmp / "missing"), "~/.kube", "", str(scene["builds"])]),
    )
    got = operator_dirs([str(scene["builds"] / "appx"), str(tmp / "a-file"), str(scene["shared"]), ""])
    assert got == (
        str(scene["builds"] / "appx"),
        str(scene["shared"]),
        str(tmp / "home" / ".kube"),
        str(scene["builds"]),
    )
    monkeypatch.delenv(ALLOW_ENV)
    assert operator_dirs() == ()
    assert operator_dirs([str(tmp / "linked-shared")]) == (str(scene["shared"]),)
