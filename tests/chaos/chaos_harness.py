"""The harness of the fault-matrix tests: real parallel runs on 127.0.0.1, and a teardown
that checks what a trustworthy run leaves behind.

Every test gets a :class:`ChaosRun` (the ``chaos`` fixture of conftest.py). At teardown it
checks, for every run the test started: no process of the run alive (launcher, or any worker
holding ``--coordinator ADDR``), the coordinator's port not listening, the ledger in
result.json balanced, and nothing outside the run dir touched (a sentinel file beside it,
the launcher's empty working dir, no stray entry in the test's folder). Whatever is still
alive is then killed, by pid, so one failing test never leaves processes to the next.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import port_is_free, processes_with, wait_for

# Short tolerances so a fault is noticed within seconds (acceptance: 5-8 s pauses).
FAST = [
    "system.heartbeat_period=0.2",
    "system.heartbeat_tolerance=3.0",
    "system.task_timeout=30",
    "system.stall_timeout=20",
]
# A run that only a limit ends (--max-train-iter), never "solved".
NEVER_SOLVED = ["evaluator.stop_value=none", "max_env_step=100000000"]
# Iterations of a run that a fault must land in the middle of: about 10 s of CartPole on 2
# cores (~0.15 s an iteration), several times what a process joining the run takes to start.
RUN_ITERS = 60
LIMITED_RUN = ["--max-train-iter", str(RUN_ITERS), *NEVER_SOLVED]
SENTINEL_TEXT = "a file beside the run dir: no run may touch it\n"


def ledger_problems(result: dict[str, Any]) -> list[str]:
    """What is wrong with a result's ledger (empty when it is balanced)."""
    ledger = result.get("ledger")
    if not isinstance(ledger, dict) or "written" not in ledger:
        return [f"result.json has no ledger: {ledger!r}"]
    accounted = sum(v for k, v in ledger.items() if k == "trained" or k.startswith("dropped_"))
    problems = []
    if ledger["written"] != accounted:
        problems.append(f"ledger unbalanced: written {ledger['written']} != {accounted}: {ledger}")
    if ledger.get("left_in_path_data") != 0:
        problems.append(f"rollouts left in path_data: {ledger}")
    return problems


def assert_ledger_balanced(result: dict[str, Any]) -> None:
    problems = ledger_problems(result)
    assert not problems, "; ".join(problems)


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


class ChaosRun:
    """Runs of ``python -m ding_lite`` in one test's folder, and what they leave.

    Layout of ``base`` (the test's tmp_path): ``run/`` (the experiment dir), ``cwd/`` (the
    children's working dir, must stay empty), ``sentinel.txt`` (must stay untouched) and
    ``<name>.out`` / ``<name>.err`` (the output of each command started here).
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.dir = base / "run"
        self.cwd = base / "cwd"
        self.cwd.mkdir()
        self.sentinel = base / "sentinel.txt"
        self.sentinel.write_text(SENTINEL_TEXT)
        self._sentinel_stat = self.sentinel.stat()
        self.procs: dict[str, subprocess.Popen] = {}
        self.addresses: list[str] = []
        self.allowed = {"run", "cwd", "sentinel.txt"}  # entries expected in ``base``
        self.after_teardown: list[Any] = []  # callables run after the teardown checks

    # --- starting things -----------------------------------------------------------------
    def command(
        self, name: str, args: list[str], env: dict[str, str] | None = None, split: bool = False
    ) -> subprocess.Popen:
        """Starts ``python -m ding_lite *args`` in its own session, output to ``<name>.out``
        (stderr to ``<name>.err`` when ``split``)."""
        out = open(self.base / f"{name}.out", "w")  # noqa: SIM115 (the child owns it)
        err = open(self.base / f"{name}.err", "w") if split else subprocess.STDOUT  # noqa: SIM115
        self.allowed |= {f"{name}.out", f"{name}.err"}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "ding_lite", *args],
                stdout=out,
                stderr=err,
                text=True,
                cwd=self.cwd,
                env=dict(os.environ, **(env or {})),
                start_new_session=True,
            )
        finally:
            out.close()
            if split:
                err.close()
        self.procs[name] = proc
        return proc

    def launch(self, *args: str, name: str = "launcher", **kw: Any) -> subprocess.Popen:
        """``ding_lite parallel --exp-dir <run> *args``."""
        return self.command(name, ["parallel", "--exp-dir", str(self.dir), *args], **kw)

    def output(self, name: str = "launcher") -> str:
        path = self.base / f"{name}.out"
        return path.read_text() if path.exists() else ""

    def errors(self, name: str) -> str:
        path = self.base / f"{name}.err"
        return path.read_text() if path.exists() else ""

    def address(self, name: str = "launcher", timeout: float = 60.0) -> str:
        """The coordinator's ``HOST:PORT`` the launcher printed."""
        found: list[str] = []

        def printed() -> bool:
            m = re.search(r"coordinator at (\S+);", self.output(name))
            if m:
                found.append(m.group(1))
            return bool(m) or self.procs[name].poll() is not None

        wait_for(printed, timeout, interval=0.05)
        assert found, f"{name} printed no address:\n{self.output(name)}"
        if found[0] not in self.addresses:
            self.addresses.append(found[0])
        return found[0]

    def finish(self, proc: subprocess.Popen, timeout: float, name: str = "launcher") -> int:
        """The exit code of ``proc``; a run still going after ``timeout`` fails the test."""
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{name} still running after {timeout} s\n{self.report(name)}"
            ) from None

    # --- looking at the run --------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        return json.loads((self.dir / "result.json").read_text())

    def log(self, worker: str) -> str:
        path = self.dir / "logs" / f"{worker}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def files(self, folder: str, pattern: str = "*") -> list[Path]:
        return sorted((self.dir / folder).glob(pattern))

    def newest_policy(self) -> int:
        """The highest published policy version (-1 before the first); v1 and later mean
        the learner has completed iterations."""
        names = (p.name for p in self.files("policy", "policy_v*.pt"))
        return max(
            (int(m.group(1)) for n in names if (m := re.match(r"policy_v(\d+)\.pt$", n))),
            default=-1,
        )

    def coordinator_pids(self) -> list[int]:
        """The live coordinator process of a ``ding-lite parallel`` run (the supervisor's
        child), or of ``ding-lite coordinator --resume`` on the run dir."""
        return processes_with(f"coordinator --resume {self.dir} ")

    def worker_pids(self, address: str, worker_id: str) -> list[int]:
        """The live process of worker ``worker_id`` (not its replacements ``<id>.r<n>``)."""
        return processes_with(f"--coordinator {address} --worker-id {worker_id} ")

    def report(self, name: str = "launcher", tail: int = 4000) -> str:
        """The launcher's output and the tail of every log, for assertion messages."""
        parts = [f"--- {name} output:\n{self.output(name)[-tail:]}"]
        for log in sorted((self.dir / "logs").glob("*.log")) if self.dir.exists() else []:
            text = log.read_text(errors="replace")
            parts.append(f"--- {log.name} (last {tail} chars):\n{text[-tail:]}")
        return "\n".join(parts)

    # --- the teardown checks -------------------------------------------------------------
    def run_pids(self) -> set[int]:
        pids = set(processes_with(f"--exp-dir {self.dir} ")) | set(
            processes_with(f"--resume {self.dir} ")
        )
        for address in self.addresses:
            pids |= set(processes_with(f"--coordinator {address} "))
        pids |= {p.pid for p in self.procs.values() if p.poll() is None}
        return pids

    def teardown_problems(self) -> list[str]:
        problems = []
        if not wait_for(lambda: not self.run_pids(), 12.0, interval=0.2):
            problems.append(f"processes of the run still alive: {self._describe(self.run_pids())}")
        self.kill_all()
        for address in self.addresses:
            if not wait_for(lambda a=address: port_is_free(a), 5.0, interval=0.2):
                problems.append(f"the coordinator port {address} is still listening")
        if (self.dir / "result.json").exists():
            try:
                problems += ledger_problems(self.result())
            except (ValueError, OSError) as err:
                problems.append(f"result.json unreadable: {err}")
        if not self.sentinel.exists() or self.sentinel.read_text() != SENTINEL_TEXT:
            problems.append("the sentinel file beside the run dir was changed or removed")
        elif self.sentinel.stat().st_mtime_ns != self._sentinel_stat.st_mtime_ns:
            problems.append("the sentinel file beside the run dir was written")
        if any(self.cwd.iterdir()):
            problems.append(f"the run wrote into its working dir: {list(self.cwd.iterdir())}")
        stray = sorted(p.name for p in self.base.iterdir() if p.name not in self.allowed)
        if stray:
            problems.append(f"entries created beside the run dir: {stray}")
        for action in self.after_teardown:
            action()
        return problems

    def kill_all(self) -> None:
        """SIGKILLs every live process of this test's runs (by pid) and reaps its own."""
        for pid in self.run_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    @staticmethod
    def _describe(pids: set[int]) -> str:
        lines = []
        for pid in sorted(pids):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                cmd = "?"
            lines.append(f"{pid}: {cmd[:200]}")
        return "; ".join(lines)


def send(pid: int, sig: int) -> bool:
    """Sends ``sig`` to ``pid``; False when the process is gone already."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True
