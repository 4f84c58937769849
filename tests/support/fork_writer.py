"""A fork server for the output-directory concurrency tests (tests/robustness/test_output_dir.py).

    python -m support.fork_writer REPO OUT LOG      # PYTHONPATH: the checkout and tests/

A whole `devlane` process per render costs ~0.4 s of interpreter start and imports, too much for hundreds of
rounds on two cores. This process imports devlane once, then forks one child per operation of a round, so
every child is a real, separate process (its own lock, its own `kill -9`) that renders and writes in a few
milliseconds. It reads one JSON round per line on stdin, `{"ops": [...], "fallback": bool}`, and answers one
line: `{"codes": [exit code of each op]}` (-9: killed). Each op is `{"id", "op", "flow", "variant", "kill"}`:

- `render`: hold the output lock (`write.Output`), write the flow (rendered once by this server with
  `api.render`, image `api:<variant>`), and append the op id to LOG while still holding the lock (so LOG
  lists the ops in the order their effects happened);
- `delete`: under the lock, remove the flow directory, and log;
- `api-render`, `api-delete`: `api.render_and_write` (a whole render under the lock) and `api.delete`, the
  CLI's own calls (not logged);
- `sweep`: take the lock (which reclaims what dead runs left) and let go.

`kill`: seconds after the round starts at which this server sends the child SIGKILL. `fallback`: the children
cannot use `renameat2(RENAME_EXCHANGE)` and swap with two renames, as on a filesystem without it.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from renderer import api
from renderer.core import files
from renderer.errors import DevlaneError
from renderer.render.output.write import Output
from renderer.render.plan.flow_spec import FlowRequest

NOT_RENDERED = 4  # api-delete of a flow that is not there: a DevlaneError, as the CLI would report


def flow(flow_id: str, variant: int) -> api.FlowSpec:
    return api.resolve(FlowRequest(flow_id=flow_id, images={"api": f"api:{variant}"}))


class Server:
    def __init__(self, repo: Path, out: Path, log: Path):
        self.options = api.Options(repo=repo)
        self.out = out
        self.log = log
        self.rendered: dict[tuple[str, int], list] = {}

    def flows(self, flow_id: str, variant: int) -> list:
        """The rendered flow, rendered once: a child spends its time on the write, where the races are."""
        key = (flow_id, variant)
        if key not in self.rendered:
            self.rendered[key] = api.render(self.options, flow(flow_id, variant)).flows
        return self.rendered[key]

    def run_round(self, ops: list[dict], fallback: bool) -> dict:
        started = time.monotonic()
        for op in ops:
            if op["op"] == "render":
                self.flows(op["flow"], op["variant"])
        pids = [self.spawn(op, fallback) for op in ops]
        kills = sorted((op["kill"], pid) for op, pid in zip(ops, pids, strict=True) if op.get("kill") is not None)
        for at, pid in kills:
            time.sleep(max(0.0, started + at - time.monotonic()))
            os.kill(pid, signal.SIGKILL)  # an unreaped child stays a zombie: its pid cannot be reused meanwhile
        return {"codes": [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]}

    def spawn(self, op: dict, fallback: bool) -> int:
        pid = os.fork()
        if pid:
            return pid
        code = 0
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stdout is this server's reply channel
            if fallback:
                files.exchange = lambda a, b: False
            self.do(op)
        except DevlaneError as exc:
            print(f"op {op}: {exc}", file=sys.stderr)
            code = NOT_RENDERED if op["op"] == "api-delete" and "no rendered flow" in str(exc) else 3
        except BaseException:
            traceback.print_exc()
            code = 3
        os._exit(code)

    def do(self, op: dict) -> None:
        kind = op["op"]
        if kind == "render":
            with Output(self.out) as out:
                out.write(self.flows(op["flow"], op["variant"]))
                self.note(op)
        elif kind == "delete":
            with Output(self.out, create=False) as out:
                out.remove(op["flow"])
                self.note(op)
        elif kind == "api-render":
            api.render_and_write(self.options, flow(op["flow"], op["variant"]), self.out)
        elif kind == "api-delete":
            api.delete(self.options, op["flow"], self.out)
        elif kind == "sweep":
            with Output(self.out):
                pass
        else:
            raise ValueError(f"unknown op {kind}")

    def note(self, op: dict) -> None:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{op['id']}\n".encode())
        finally:
            os.close(fd)


def main() -> None:
    repo, out, log = (Path(a) for a in sys.argv[1:4])
    server = Server(repo, out, log)
    server.flows("pr-a", 1)  # import and warm everything once, before any fork
    gc.freeze()  # children share the parent's objects without copying the pages the collector would touch
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(server.run_round(request["ops"], request.get("fallback", False))), flush=True)


if __name__ == "__main__":
    main()
