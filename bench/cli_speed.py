"""How long the command line takes to answer --help, --version and each subcommand's --help.

Each command runs ``--repeat`` times (default 5) in a fresh process, as a user types it
(``ding-lite ...`` when it is on PATH, else ``python -m ding_lite ...``); the script prints
min / median / max wall seconds per command. The target is a median under 0.5 s. Nothing is
asserted.

    python bench/cli_speed.py
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["--help"],
    ["--version"],
    ["list"],
    *[
        [sub, "--help"]
        for sub in ("serial", "parallel", "eval", "render", "coordinator", "learner", "collector")
    ],
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exe = shutil.which("ding-lite")
    base = [exe] if exe else [sys.executable, "-m", "ding_lite"]
    print(f"{' '.join(base)}, {args.repeat} runs each")
    print(f"{'command':<28} {'min s':>6} {'median s':>9} {'max s':>6}")
    for cmd in COMMANDS:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([*base, *cmd], capture_output=True, check=True, timeout=60)
            times.append(time.perf_counter() - start)
        print(
            f"{' '.join(cmd):<28} {min(times):>6.3f} {statistics.median(times):>9.3f} "
            f"{max(times):>6.3f}"
        )


if __name__ == "__main__":
    main()
