"""Container image references, checked as registries parse them (the OCI distribution grammar and limits).

A flow's image comes from the command line, a flow file or an Argo CD Application's parameters: text a registry
and the kubelet must accept. A reference they would refuse (too long, upper case in the repository, a bad tag)
fails the render at once, naming where it came from, instead of reaching the cluster as a pod stuck in
ErrImagePull. The grammar is distribution/reference's: `[domain[:port]/]path[:tag][@digest]`, the name at most
255 characters, the tag at most 128.
"""

from __future__ import annotations

import re

MAX_NAME = 255  # distribution/reference NameTotalLengthMax: domain and path together
MAX_TAG = 128
MAX_REFERENCE = 4096  # anything longer is refused before the expression sees it

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:.]+\])"
_NAME = re.compile(rf"(?:{_DOMAIN}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # ASCII only: `\w` would take any script's letters and digits
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")


def shown(ref: str) -> str:
    """The reference as an error quotes it: whole when short, else its start and its length."""
    return repr(ref) if len(ref) <= 80 else f"{ref[:60]!r}... ({len(ref):,} characters)"


def image_problem(ref: str) -> str | None:
    """Why a registry would refuse the image reference `ref`, or None when it is well formed."""
    if len(ref) > MAX_REFERENCE:
        return f"is {len(ref):,} characters long; an image reference is at most a few hundred"
    rest, _, digest = ref.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        return f"has a malformed digest {digest[:80]!r} (expected ALGORITHM:HEX, e.g. sha256:...)"
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    name, tag = (rest[:colon], rest[colon + 1:]) if colon > slash else (rest, "")
    if not name:
        return "has no repository name"
    if len(name) > MAX_NAME:
        return f"has a repository name of {len(name)} characters; the OCI distribution limit is {MAX_NAME}"
    if not _NAME.fullmatch(name):
        return (f"has an invalid repository name {name[:80]!r} (lower-case letters, digits and . _ - separators "
                "in each path component, an optional registry host first)")
    if colon > slash and not tag and not digest:
        return "ends with ':' but has no tag"
    if tag and len(tag) > MAX_TAG:
        return f"has a tag of {len(tag)} characters; the OCI distribution limit is {MAX_TAG}"
    if tag and not _TAG.fullmatch(tag):
        return f"has an invalid tag {tag[:80]!r} (ASCII letters, digits, _ . -, not starting with . or -)"
    return None


DOCKER_HUB = "docker.io"
_HUB_ALIASES = ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")


def repository(ref: str) -> str:
    """The repository an image reference names, without tag or digest, as a runtime pulls it: Docker Hub's short
    names in full (`postgres:17` is `docker.io/library/postgres`), so two spellings of one repository compare equal."""
    name = ref.partition("@")[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        name = name[:colon]
    first, sep, rest = name.partition("/")
    if not sep or ("." not in first and ":" not in first and first != "localhost"):
        first, rest = DOCKER_HUB, name  # no registry host: Docker Hub
    elif first in _HUB_ALIASES:
        first = DOCKER_HUB
    if first == DOCKER_HUB and "/" not in rest:
        rest = f"library/{rest}"
    return f"{first}/{rest}"
