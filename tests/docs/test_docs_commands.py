"""Runs every ``ding-lite`` command the front pages show, as a new user would type it.

The commands of README.rst and of the quickstart, aircombat, gymnasium, hooks and config
pages are read from the pages themselves and run one by one in the pages' order, as a
reader going through them would: README.rst and then the air-combat page in one folder, the
other docs pages one after the other in another (so ``ding-lite eval cartpole_ppo`` finds the
run trained before it; a
command already run in that folder is not run again). The two folders run side by side,
one per core. Each command gets a small budget through documented options appended after
it: the ``--max-env-steps`` flag and the dotted overrides of ``helpers.TINY`` for
training runs, ``--episodes`` for ``eval``. The files a page tells the reader to write
(``wide_cartpole.py``, ``acrobot.yaml``, ``my_envs.py``) are written from the page's own
code blocks. A command that exits non-zero fails the test, with its output.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import DOCS, TINY, extract_blocks

ROOT = DOCS.parent
PAGES = [
    "README.rst",
    "docs/quickstart.rst",
    "docs/aircombat.rst",
    "docs/gymnasium.rst",
    "docs/hooks.rst",
    "docs/config.rst",
]
# Files a page asks the reader to write before its commands: name -> (page, marker, language).
FILES = {
    "docs/config.rst": {
        "wide_cartpole.py": ("config.rst", "python-config-example", "python"),
        "acrobot.yaml": ("config.rst", "yaml-config-example", "yaml"),
    },
    "docs/gymnasium.rst": {"my_envs.py": ("gymnasium.rst", "custom-gym-env", "python")},
    "docs/aircombat.rst": {"pursuit.py": ("aircombat.rst", "aircombat-reward-fn", "python")},
}
# A command starts a literal-block line, or follows ``&&`` (``pip install -e . && ding-lite
# ...``), after optional environment assignments (``PYTHONPATH=. ding-lite ...``).
COMMAND = re.compile(r"^ {4,}(?:.*&& )?((?:[A-Z_]+=\S+ )*ding-lite\s.*)$")
BUDGET = {
    "serial": ["--max-env-steps", "512", *TINY],
    "parallel": ["--max-env-steps", "1024", *TINY],
    "eval": ["--episodes", "2"],
}
# A command that takes longer than this is stuck, not slow.
COMMAND_TIMEOUT = 150


def documented_commands(page: str) -> list[str]:
    """The ``ding-lite`` command lines of ``page`` in order, continuation lines joined and
    repeats dropped (a command shown twice runs once)."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    commands: list[str] = []
    i = 0
    while i < len(lines):
        match = COMMAND.match(lines[i])
        i += 1
        if not match:
            continue
        command = match.group(1)
        while command.rstrip().endswith("\\") and i < len(lines):
            command = command.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        if _words(command) not in map(_words, commands):
            commands.append(command)
    return commands


def _words(command: str) -> str:
    """The command as the shell splits it, comments and spacing dropped."""
    return shlex.join(shlex.split(command, comments=True))


def _argv(command: str) -> tuple[dict[str, str], list[str]]:
    """(environment assignments, argv after ``ding-lite``) with the budget appended."""
    words = shlex.split(command, comments=True)
    env = {}
    while "=" in words[0] and words[0] != "ding-lite":
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    assert words[0] == "ding-lite", command
    args = words[1:]
    return env, args + BUDGET.get(args[0], [])


def _ding_lite() -> list[str]:
    """The installed console script (as the pages use it), else ``python -m ding_lite``."""
    script = shutil.which("ding-lite", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ding_lite"]


def _run_lane(pages: list[str], cwd: Path, base_env: dict[str, str]) -> list[str]:
    """Runs the commands of ``pages`` in order in ``cwd`` (a command already run there is
    not run again); returns a report of each that failed."""
    failures: list[str] = []
    ran: set[str] = set()
    cwd.mkdir()
    for page in pages:
        for name, (source, marker, language) in FILES.get(page, {}).items():
            (cwd / name).write_text("\n".join(extract_blocks(source, marker, language)))
        for command in documented_commands(page):
            if _words(command) in ran:
                continue
            ran.add(_words(command))
            env, args = _argv(command)
            start = time.monotonic()
            run = subprocess.run(
                [*_ding_lite(), *args],
                cwd=cwd,
                env={**base_env, **env},
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
            )
            print(f"{time.monotonic() - start:5.1f} s  rc {run.returncode}  {page}: {command}")
            if run.returncode != 0:
                output = (run.stdout[-1500:] + run.stderr[-1500:]).rstrip()
                failures.append(f"{page}:\n$ {command}\n(exit {run.returncode})\n{output}")
    return failures


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_command_of_the_pages_runs(tmp_path: Path) -> None:
    for page in PAGES:
        assert documented_commands(page), f"{page}: no ding-lite command found"
    # Two lanes, one per core, each in its own folder, of about equal length: README.rst and
    # the air-combat page (which trains the README's aircombat_ppo run again, skipped
    # there) beside the other pages.
    lanes = [["README.rst", "docs/aircombat.rst"], [p for p in PAGES[1:] if "aircombat" not in p]]
    # Ray (``--launcher ray``) keeps its session files under the temp dir; its socket paths
    # must stay under 108 bytes, so a short folder of /tmp, removed at the end.
    short_tmp = tempfile.mkdtemp(prefix="dl", dir="/tmp")
    base_env = {**os.environ, "TMPDIR": short_tmp, "RAY_TMPDIR": short_tmp}
    # The quickstart's offline W&B run: wandb's cache, settings and data stay in there too.
    for name in ("WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        base_env[name] = os.path.join(short_tmp, name.lower())
    try:
        with ThreadPoolExecutor(len(lanes)) as pool:
            reports = list(
                pool.map(
                    lambda n: _run_lane(lanes[n], tmp_path / f"lane{n}", base_env),
                    range(len(lanes)),
                )
            )
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)
    failures = [f for report in reports for f in report]
    assert not failures, "commands that failed:\n\n" + "\n\n".join(failures)


def test_the_aircombat_ppo_opponent_command_is_among_them() -> None:
    commands = documented_commands("docs/aircombat.rst")
    assert any("env.kwargs.opponent=ppo" in c for c in commands), commands


def test_continuations_are_joined_and_comments_dropped() -> None:
    commands = documented_commands("docs/hooks.rst")
    joined = [c for c in commands if "--exp-dir runs/fine_tune" in c]
    assert joined and "load_ckpt_before_run=cartpole_ppo/ckpt" in joined[0]
    env, args = _argv("PYTHONPATH=. ding-lite serial -c gym_ppo   # a comment")
    assert env == {"PYTHONPATH": "."}
    assert args[:3] == ["serial", "-c", "gym_ppo"] and "#" not in " ".join(args)
