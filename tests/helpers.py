"""Helpers that tests in every folder share: waiting, ports, processes, tiny configs, and
the marked regions of the reST pages under docs/.

tests/ has no packages: pytest puts this folder on ``sys.path`` (tests/conftest.py lives
here), so any test imports these by name, ``from helpers import wait_for``.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import socket
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs"
TOKEN = "test-token-0123456789"

# Overrides that make a CartPole run take a fraction of a second an iteration, with no
# evaluation and no target (a run ends at its limit).
TINY = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]


def tiny(*overrides: str) -> list[str]:
    """:data:`TINY` with each ``key=value`` of ``overrides`` put in place of the same key's
    entry (or added)."""
    merged = {entry.split("=", 1)[0]: entry for entry in TINY}
    merged.update((entry.split("=", 1)[0], entry) for entry in overrides)
    return list(merged.values())


# One epoch an update and an evaluation after every iteration: for tests that need a real
# run's files (checkpoints, evaluations, curves).
TINY_CARTPOLE = tiny("policy.learn.n_epochs=1", "evaluator.eval_freq=1")

# ding-lite tune's tests: a CartPole experiment file whose trial trains for a second (an
# evaluation of 2 episodes after every iteration of 4 copies x 16 steps, no target), and a
# search space file of the learning rate alone.
TUNE_EXPERIMENT = """
exp_name: tiny_cartpole
max_env_step: 256
env: {name: cartpole, num_envs: 4}
policy:
  learn: {n_epochs: 1, batch_size: 32}
  collect: {n_steps: 16}
evaluator: {eval_freq: 1, n_episodes: 2, stop_value: null}
"""
TUNE_LR_SPACE = "policy.learn.learning_rate: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}\n"


def tiny_cfg(tmp_path: Path, *overrides: str, max_train_iter: int = 6) -> Any:
    """A compiled cartpole_ppo config of :data:`TINY` size in ``tmp_path``, one epoch an
    update and an evaluation every second iteration."""
    from ding_lite.config import compile_config  # torch loads only for tests that need it

    overrides = tiny("policy.learn.n_epochs=1", "evaluator.eval_freq=2", *overrides)
    return compile_config(
        "cartpole_ppo", overrides, exp_dir=str(tmp_path), max_train_iter=max_train_iter
    )


def wait_for(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float | None = None
) -> Any:
    """Polls ``predicate`` until it returns something true or ``timeout`` seconds pass.

    Args:
        predicate: called without arguments.
        timeout: seconds to wait at most.
        interval: seconds between polls; None lets the pause grow from 5 ms to 0.1 s, quick
            to see a fast change and cheap over a long wait (a predicate may scan /proc).
            A test that must act right after a change passes a short one.

    Returns:
        The first true value, or the last value once the time is up.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005 if interval is None else interval
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
        if interval is None:
            pause = min(2 * pause, 0.1)
    return predicate()


def port_is_free(address: str | int) -> bool:
    """Nothing listens at ``address`` (``host:port``, or a port of 127.0.0.1): a server that
    sets SO_REUSEADDR, as werkzeug and waitress do, could bind it again; connections in
    TIME_WAIT do not count."""
    host, port = ("127.0.0.1", address) if isinstance(address, int) else address.rsplit(":", 1)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, int(port)))
            sock.listen()
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound and released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def exit_codes(procs: list[Any], timeout: float) -> list[int]:
    """The exit codes of ``procs`` (``subprocess.Popen``), each waited for ``timeout``
    seconds at most; any still running after that (or after a failure) is killed."""
    try:
        return [proc.wait(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)


def slurm_stand_ins(folder: Path, srun: str, scontrol: str, **env: str) -> dict[str, str]:
    """Writes ``srun`` and ``scontrol`` stand-ins (their scripts) into ``folder/bin``;
    returns this process's environment with them first on PATH, plus ``env``."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", srun), ("scontrol", scontrol)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env}


def processes_with(text: str, root: int | None = None) -> list[int]:
    """Pids of the live processes of the test whose command line contains ``text`` (args
    joined by spaces, with a trailing space): the descendants of ``root``, and by default
    (no ``root``) of this process or started during the current test (a worker whose
    launcher a test killed is re-parented to init, but its environment still names the
    test: pytest's ``PYTEST_CURRENT_TEST``, which every child inherits).

    Only the test's own: tests that run side by side (pytest -n 2) never find each other's
    processes, whatever their command lines share (a worker id, a port reused). A zombie is
    dead, only not reaped yet: it does not count. (Making pytest the child subreaper would
    keep orphans in its tree, but it hides their parent's death from them: a Ray worker
    whose raylet was killed then never exits.)
    """
    test = _current_test() if root is None else None
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    matching = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            state, ppid = fields[0], int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
        pid = int(entry.name)
        parents[pid] = ppid
        if text in cmdline and state != "Z" and pid != root:
            matching.append(pid)
    return [pid for pid in matching if _descends(pid, root, parents) or _started_in(pid, test)]


def _current_test() -> bytes | None:
    """The current test's ``PYTEST_CURRENT_TEST`` without its phase (" (call)")."""
    current = os.environ.get("PYTEST_CURRENT_TEST")
    return current.rsplit(" ", 1)[0].encode() if current else None


def _started_in(pid: int, test: bytes | None) -> bool:
    """Whether ``pid`` was started during ``test`` (its environment names it)."""
    if test is None:
        return False
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    prefix = b"PYTEST_CURRENT_TEST="
    return any(v[len(prefix) :].rsplit(b" ", 1)[0] == test for v in environ if v.startswith(prefix))


def _descends(pid: int, root: int, parents: dict[int, int]) -> bool:
    """Whether ``root`` is an ancestor of ``pid`` in ``parents`` (pid -> parent pid)."""
    for _ in range(len(parents)):  # a chain is never longer; a pid reused mid-scan ends it
        pid = parents.get(pid, 0)
        if pid == root:
            return True
        if pid <= 1:
            return False
    return False


class FakeProc:
    """What the launcher needs of a ``subprocess.Popen``: a process that runs until a test
    sets its ``returncode`` or kills it."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env, self.returncode, self.killed = env, None, False

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        self.killed, self.returncode = True, -9

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode


# --- tensorboard event files ---------------------------------------------------------------


def tb_records(path: Path) -> list[tuple[int, int]]:
    """``(offset, length)`` of each record of an event file: its length field at ``offset``,
    its event at ``offset + 12``, its event's CRC after that."""
    data, pos, found = path.read_bytes(), 0, []
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos : pos + 8], "little")
        found.append((pos, length))
        pos += 16 + length
    return found


def tb_frame(payload: bytes) -> bytes:
    """``payload`` framed as a record of an event file, with good CRCs: its length, the
    length's masked CRC-32C, the payload, the payload's masked CRC-32C."""
    from tensorboardX.record_writer import masked_crc32c

    header = len(payload).to_bytes(8, "little")
    crc = masked_crc32c
    return header + crc(header).to_bytes(4, "little") + payload + crc(payload).to_bytes(4, "little")


# --- the pages under docs/ ---------------------------------------------------------------


def extract_blocks(page: str, name: str, language: str = "python") -> list[str]:
    """Returns the ``code-block:: <language>`` bodies between ``.. begin <name>`` and
    ``.. end <name>`` comments of ``docs/<page>``, dedented, in page order."""
    lines = marked_region(page, name).splitlines()
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != f".. code-block:: {language}":
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
            body.append(lines[i])
            i += 1
        blocks.append(textwrap.dedent("\n".join(body)).strip("\n") + "\n")
    assert blocks, f"docs/{page}: no {language} code block between the '{name}' markers"
    return blocks


def marked_region(page: str, name: str) -> str:
    """The text between ``.. begin <name>`` and ``.. end <name>`` of ``docs/<page>``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1, f"docs/{page}: expected one '.. begin {name}' marker"
    assert text.count(end) == 1, f"docs/{page}: expected one '.. end {name}' marker"
    return text.split(begin, 1)[1].split(end, 1)[0]


ROW_KEY = re.compile(r"^\s*\* - ``([A-Za-z0-9_.]+)``\s*$")
ROW_VALUE = re.compile(r"^\s*- ``(.*)``\s*$")


def key_value_rows(page: str, name: str) -> dict[str, Any]:
    """``{dotted key: documented value}`` of the two-column list-table in a marked region
    (each row ``* - ``key``  - ``value``; values are Python literals)."""
    rows: dict[str, Any] = {}
    lines = marked_region(page, name).splitlines()
    for i, line in enumerate(lines):
        m = ROW_KEY.match(line)
        if not m or m.group(1) == "Key":
            continue
        key = m.group(1)
        assert key not in rows, f"{key} is documented twice in '{name}'"
        value = ROW_VALUE.match(lines[i + 1]) if i + 1 < len(lines) else None
        assert value, f"row {key} in '{name}' has no ``value`` in its second column"
        rows[key] = ast.literal_eval(value.group(1))
    return rows


def folded_page(page: str) -> str:
    """``docs/<page>`` with its line breaks folded, so phrases can be searched across lines."""
    return folded((DOCS / page).read_text(encoding="utf-8"))


def folded(text: str) -> str:
    """``text`` with every run of white space made one space."""
    return " ".join(text.split())


def list_table_rows(page: str, name: str) -> list[list[str]]:
    """The cells of each body row of the list-table in the marked region ``name`` of
    ``docs/<page>`` (its first row is the header)."""
    rows = re.split(r"^   \* - ", marked_region(page, name), flags=re.M)[2:]  # preamble, header
    return [re.split(r"^     - ", row, flags=re.M) for row in rows]


BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> Any:
    """The script ``bench/<name>.py`` imported as a module (bench/ is no package), with
    bench/ first on the import path while it loads, as when it runs as a script (its
    imports of other bench scripts resolve)."""
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH_DIR))
    return module


def json_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path and list index into a parsed JSON document (the root's ``()`` left
    out), for tests that mutate a real file."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += json_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += json_paths(value, (*prefix, i))
    return found
