"""Git plugin locations: what `devlane plugins lock` pins.

A `plugins.sources` entry ``{git: URL, ref: REF}``, a URL used as the name (``https://``,
``ssh://``, ``git://``, ``file://``, ``git@host:path``), or a name such as
``github.com/org/repo[/sub/dir]`` that nothing else maps (-> ``https://github.com/org/repo``, the
plugin in ``sub/dir``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ...errors import Where, fail

_URL = re.compile(r"(https?|ssh|git|git\+ssh|file)://\S+\Z")
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!/)\S+\Z")
_HOSTED = re.compile(
    r"(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::[0-9]+)?)/(?P<org>[A-Za-z0-9_.~-]+)/(?P<repo>[A-Za-z0-9_.~-]+)"
    r"(?P<sub>(?:/[A-Za-z0-9_.~-]+)*)/?\Z"
)
DEFAULT_REF = "HEAD"  # the remote's default branch


@dataclass(frozen=True)
class GitSpec:
    """A plugin that comes from a git repository."""

    name: str
    url: str
    ref: str = DEFAULT_REF  # branch, tag, full ref or commit; HEAD: the remote's default branch
    subdir: str = ""  # the plugin's directory inside the repository
    origin: Literal["config", "name"] = "name"  # plugins.sources.NAME.git | the name is the URL

    @property
    def given_by(self) -> str:
        if self.origin == "config":
            return f"plugins.sources.{self.name!r}.git in .devlane.yaml"
        return "the plugin name"


def is_url(name: str) -> bool:
    return bool(_URL.match(name) or _SCP.match(name))


def git_url_for(name: str) -> tuple[str, str] | None:
    """(URL, subdir) when the plugin name itself is a git location, else None.

    ``github.com/org/repo/sub`` -> (``https://github.com/org/repo``, ``sub``); full URLs and
    ``git@host:path`` are used as written.
    """
    if is_url(name):
        return name, ""
    m = _HOSTED.match(name)
    if m is None:
        return None
    segments = [m["org"], m["repo"], *m["sub"].strip("/").split("/")]
    if any(seg in (".", "..") for seg in segments if seg):
        return None
    return f"https://{m['host']}/{m['org']}/{m['repo']}", m["sub"].strip("/")


def config_git_spec(name: str, entry: dict) -> GitSpec:
    """The git source a `plugins.sources` entry with `git:` names."""
    url = entry.get("git")
    if not isinstance(url, str) or not url.strip():
        raise fail(f"plugins.sources.{name}.git in .devlane.yaml is empty", Where(plugin=name, file=".devlane.yaml"),
                   "set it to the plugin repository's URL (https://..., ssh://..., git@host:path or a local path)",
                   code="plugin-source")
    return GitSpec(name, url.strip(), str(entry.get("ref") or DEFAULT_REF), "", "config")
