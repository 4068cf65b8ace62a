"""A parallel run of docs/parallel.rst's per-role commands across test hosts.

:func:`documented_commands` reads the page's "Running on several machines" commands; a
:class:`RoleRun` starts them on the hosts of a :class:`~hosts.TestHosts` (coordinator
first, as the page says), follows the run through its status.json and collects what each
host printed, for the tests that check the layout and the ones that cut links.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers import DOCS, wait_for
from hosts import TestHosts

SECTION = ("Running on several machines", "A learner of several ranks")
TOKEN = "multihost-test-token-7c1e"


def documented_commands() -> dict[str, list[str]]:
    """The section's ``ding-lite`` commands, continuation lines joined: role -> argv."""
    text = (DOCS / "parallel.rst").read_text(encoding="utf-8")
    start = text.index(f"{SECTION[0]}\n---")
    section = text[start : text.index(SECTION[1], start)]
    joined = re.sub(r"\\\n\s*", "", section)
    commands = {}
    for line in joined.splitlines():
        if line.strip().startswith("ding-lite "):
            words = shlex.split(line.strip(), comments=True)
            commands[words[1]] = words
    return commands


def documented_torchrun() -> list[str]:
    """The page's two-machine ``torchrun --nnodes 2 ...`` learner command (node rank 0)."""
    text = (DOCS / "parallel.rst").read_text(encoding="utf-8")
    start = text.index(f"{SECTION[1]} (see")
    joined = re.sub(r"\\\n\s*", "", text[start : text.index("What to know about", start)])
    lines = [line.strip() for line in joined.splitlines()]
    return shlex.split(next(line for line in lines if line.startswith("torchrun --nnodes 2")))


def substituted(argv: list[str], run_dir: Path, **changes: str) -> list[str]:
    """``argv`` with the page's run dir replaced by ``run_dir`` and each word in
    ``changes`` replaced by its value."""
    out = []
    for word in argv:
        word = re.sub(r"^/shared/runs/\S+", str(run_dir), word)
        out.append(changes.get(word, word))
    return out


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def layout(run_dir: Path, collectors: int = 2, extra: tuple[str, ...] = ()) -> dict[str, list]:
    """The page's commands per host (``coordinator``, ``learner``, ``collector``,
    ``collector2``, ...), changed only where a test machine must: the run dir, each further
    collector's address and id, ``--device cuda`` without a GPU. ``extra`` (dotted config
    overrides) goes to the coordinator, which sends the config to every worker."""
    commands = documented_commands()
    device = {} if _cuda() else {"cuda": "cpu"}
    collector = substituted(commands["collector"], run_dir, **device)
    argv = {
        "coordinator": [*substituted(commands["coordinator"], run_dir), *extra],
        "learner": substituted(commands["learner"], run_dir),
        "collector": collector,
    }
    for n in range(2, collectors + 1):
        changes = {"10.0.0.3": f"10.0.0.{n + 2}", "collector-gpu-a": f"collector-gpu-{n}"}
        argv[f"collector{n}"] = substituted(collector, run_dir, **changes)
    return argv


class RoleRun:
    """The commands of :func:`layout` running on hosts of the same names.

    Args:
        net: the hosts (one per role, named as in :func:`layout`).
        folder: where each host's output goes (``<host>.out``); the processes run there.
        argv: host -> the ``ding-lite ...`` command to run in it.
        run_dir: the run's folder (status.json, result.json).
        hosts_of: role -> the host it runs in, where that is not the host of its name
            (several roles in one host).
        private: the hosts have folders of their own (``TestHosts.own_folder``): the
            run dir is read as the coordinator's host sees it.
    """

    def __init__(
        self,
        net: TestHosts,
        folder: Path,
        argv: dict[str, list[str]],
        run_dir: Path,
        hosts_of: dict[str, str] | None = None,
        private: bool = False,
    ):
        self.net, self.folder, self.argv, self.run_dir = net, folder, argv, run_dir
        self.private = private
        self.hosts_of = {role: role for role in argv} | (hosts_of or {})
        self.procs: dict[str, subprocess.Popen] = {}
        self._logs: list[Any] = []

    def start(self, hosts: list[str] | None = None) -> RoleRun:
        """Starts the coordinator, waits until it serves, then the other roles."""
        env = {**os.environ, "DING_LITE_TOKEN": TOKEN}
        for host in hosts or list(self.argv):
            log = open(self.folder / f"{host}.out", "w")  # noqa: SIM115 (closed in finish)
            self._logs.append(log)
            module = {"ding-lite": "ding_lite", "torchrun": "torch.distributed.run"}
            argv = [sys.executable, "-m", module[self.argv[host][0]], *self.argv[host][1:]]
            self.procs[host] = self.net.start(
                self.hosts_of[host],
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.folder,
            )
            if host == "coordinator":  # the workers keep trying for master_timeout only
                assert wait_for(lambda: "coordinator at" in self.out("coordinator"), 60), (
                    self.report()
                )
        return self

    def out(self, host: str) -> str:
        path = self.folder / f"{host}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def report(self, tail: int = 3000) -> str:
        return "\n".join(f"--- {h}\n{self.out(h)[-tail:]}" for h in self.argv)

    def iteration(self) -> int:
        """The run's iteration as its status.json says (0 before the first)."""
        try:
            status = json.loads(self.read("status.json") or "")
        except ValueError:
            return 0
        return int(status.get("iteration") or 0)

    def wait_iteration(self, n: int, timeout: float = 120.0) -> None:
        reached = wait_for(lambda: self.iteration() >= n, timeout, interval=0.2)
        assert reached, f"iteration {self.iteration()} after {timeout:g} s\n{self.report()}"

    def cut_for(self, host: str, seconds: float) -> None:
        """Cuts ``host``'s link for ``seconds``, then restores it."""
        self.net.cut(host)
        try:
            time.sleep(seconds)
        finally:
            self.net.restore(host)

    def finish(self, timeout: float, workers_s: float = 30.0) -> dict[str, int]:
        """Waits for the coordinator, then for the workers (``workers_s`` more); their exit
        codes by host."""
        try:
            codes = {"coordinator": self.procs["coordinator"].wait(timeout=timeout)}
            deadline = time.monotonic() + workers_s
            for host, proc in self.procs.items():
                if host != "coordinator":
                    codes[host] = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            for log in self._logs:
                log.close()
        return codes

    def read(self, name: str) -> str | None:
        """A file of the run dir, as the coordinator's host sees it (None: none)."""
        if self.private:
            return self.net.read(self.hosts_of["coordinator"], self.run_dir / name)
        path = self.run_dir / name
        return path.read_text() if path.is_file() else None

    def result(self) -> dict[str, Any]:
        return json.loads(self.read("result.json") or "null")

    def nothing_running(self) -> dict[str, list[int]]:
        """Processes still running in each host (empty lists when the run left nothing)."""
        hosts = set(self.hosts_of.values())
        return {h: self.net.pids(h) for h in sorted(hosts) if self.net.pids(h)}


def balanced(ledger: dict[str, int]) -> bool:
    """Every rollout written is trained on or dropped with a reason, none left over."""
    dropped = sum(v for k, v in ledger.items() if k.startswith("dropped_"))
    return ledger["written"] == ledger["trained"] + dropped and ledger["left_in_path_data"] == 0
