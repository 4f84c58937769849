"""A stand-in for the GitHub CLI, `gh`, answering exactly the calls pr.sh makes, from a JSON file (`$FAKE_GH_STORE`):
the pull request comments (listed with the marker filter pr.sh writes, made, replaced), the open pull requests with
a label, and a pull request's head. Any other call exits 2 naming it, so a new call in pr.sh fails the test until
this file learns it. Installed as an executable `gh` on PATH by `install`."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

SCRIPT = f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n" \
         "import fake_gh\nsys.exit(fake_gh.main(sys.argv[1:]))\n"


def install(bin_dir: Path, store: Path, repository: str) -> dict:
    """`gh` in `bin_dir`; returns the environment pr.sh needs to find it and its store."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(SCRIPT)
    gh.chmod(0o755)
    if not store.exists():
        store.write_text(json.dumps({"comments": [], "open": [], "heads": {}, "calls": []}))
    return {"FAKE_GH_STORE": str(store), "GITHUB_REPOSITORY": repository}


def load(store: Path) -> dict:
    return json.loads(store.read_text())


def main(argv: list[str]) -> int:
    store = Path(os.environ["FAKE_GH_STORE"])
    data = load(store)
    data["calls"].append(argv)
    repo = os.environ["GITHUB_REPOSITORY"]
    try:
        out = _answer(argv, data, repo)
    except _Refused as exc:
        print(f"fake gh: {exc}: {' '.join(argv)}", file=sys.stderr)
        return 2
    store.write_text(json.dumps(data, indent=1))
    if out:
        print(out)
    return 0


class _Refused(Exception):
    pass


def _answer(argv: list[str], data: dict, repo: str) -> str:
    if argv[:2] == ["pr", "list"]:
        opts = dict(zip(argv[2::2], argv[3::2], strict=False))
        if opts.get("--repo") != repo or opts.get("--state") != "open" or opts.get("--json") != "number" or \
                opts.get("--jq") != '.[] | "pr-\\(.number)"':
            raise _Refused("unexpected pr list")
        return "\n".join(f"pr-{p['number']}" for p in data["open"] if opts.get("--label") in p["labels"])
    if argv[:1] != ["api"]:
        raise _Refused("unknown call")
    args = argv[1:]
    method = "GET"
    if args[:1] == ["-X"]:
        method, args = args[1], args[2:]
    path = args[0]
    opts = args[1:]
    listing = re.fullmatch(rf"repos/{re.escape(repo)}/issues/(\d+)/comments", path)
    if method == "GET" and listing and opts[:1] == ["--paginate"] and opts[1:2] == ["--jq"]:
        marker = re.fullmatch(r'\.\[\] \| select\(\.body \| startswith\("(.*)"\)\) \| \.id', opts[2])
        if marker is None:
            raise _Refused("unexpected --jq")
        return "\n".join(str(c["id"]) for c in data["comments"]
                         if c["pr"] == int(listing[1]) and c["body"].startswith(marker[1]))
    body = _body(opts)
    if method == "POST" and listing:
        data["comments"].append({"id": 1000 + len(data["comments"]), "pr": int(listing[1]), "body": body})
        return "{}"
    one = re.fullmatch(rf"repos/{re.escape(repo)}/issues/comments/(\d+)", path)
    if method == "PATCH" and one:
        (comment,) = [c for c in data["comments"] if c["id"] == int(one[1])]
        comment["body"] = body
        return "{}"
    pull = re.fullmatch(rf"repos/{re.escape(repo)}/pulls/(\d+)", path)
    if method == "GET" and pull and opts == ["--jq", ".head.sha"]:
        return data["heads"][pull[1]]
    raise _Refused("unknown api call")


def _body(opts: list[str]) -> str:
    if opts[:1] != ["-F"] or not opts[1].startswith("body=@"):
        return ""
    return Path(opts[1][len("body=@"):]).read_text()
