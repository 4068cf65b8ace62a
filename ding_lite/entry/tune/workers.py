"""The processes that run a study's trials.

``--jobs J`` starts J worker processes (``python -m ding_lite.entry.tune.workers``), each
with one torch thread, each running trials of the same study through its storage: Optuna
hands every trial it creates to the one process that asked for it, so no trial runs twice.
The processes take the command's ``--trials N`` between them one trial at a time from a
counter file locked with ``flock`` (:class:`TrialClaims`), so exactly N trials start
however long each takes. With ``--jobs 1`` the trials run in the command's own process.

Ctrl-C or SIGTERM stops every worker: the signal reaches them (the terminal sends Ctrl-C
to all; the command passes either on), each ends its run as an interrupted run does, its
trial is booked as failed, and a worker still running after that is terminated, then
killed, as the parallel launcher's children are.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ding_lite.entry.tune.space import Param
from ding_lite.entry.tune.trial import TrialRunner, TuneSetup
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.stop import RunInterrupted, exit_code, signals_held, sigterm_interrupts

PASS_ON_AFTER_S = 1.0  # a worker not stopped by the terminal's Ctrl-C by then gets the signal
# A stopped worker ends its run's iteration, writes the run's last files and books its
# trial as failed; only one that takes longer than this is terminated, then killed.
WORKER_STOP_S = 30.0


class TrialClaims:
    """A count of started trials in a file, shared by the processes of one command.

    Args:
        path: the counter file (created empty).
        total: trials the command runs.
    """

    def __init__(self, path: str | Path, total: int) -> None:
        self.path = Path(path)
        self.total = total

    def claim(self) -> bool:
        """Takes the next trial; False when all ``total`` are taken."""
        with open(self.path, "a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            taken = int(f.read().strip() or 0)
            if taken >= self.total:
                return False
            f.seek(0)
            f.truncate()
            f.write(str(taken + 1))
            f.flush()
            return True


def run_trials(setup: TuneSetup, claims: TrialClaims) -> None:
    """Runs trials of the study until ``claims`` has none left (this process's share)."""
    from ding_lite.entry.cli.interrupts import import_for
    from ding_lite.entry.tune.study import import_optuna, make_pruner, make_sampler, open_storage

    optuna = import_optuna()
    import_for(setup.pipeline)  # torch and the pipeline, with a Ctrl-C held back meanwhile
    study = optuna.load_study(
        study_name=setup.study_name,
        storage=open_storage(setup.storage),
        sampler=make_sampler(setup.sampler),
        pruner=make_pruner(setup.pruner, setup.max_step, setup.grid),
    )
    runner = TrialRunner(setup)
    while _run_one(study, runner, claims, setup.space):
        pass


def _run_one(study: Any, runner: TrialRunner, claims: TrialClaims, space: Any) -> bool:
    """Runs one trial if ``claims`` has one left (False: none left).

    Optuna's own bookkeeping (a trial created, its end booked) is never cut by a signal:
    held back, it stops the worker right after. The run itself meets a signal as every run
    does (at the end of an iteration). A trial that does not end normally (a signal, a bug)
    is booked as failed, never left running in the study.
    """
    from ding_lite.entry.tune.outputs import progress_line
    from ding_lite.entry.tune.study import import_optuna

    optuna = import_optuna()
    states = optuna.trial.TrialState
    trial, told = None, False
    try:
        with signals_held() as arrived:
            trial = study.ask() if claims.claim() else None
        _raise_held(arrived)
        if trial is None:
            return False
        state, value = states.COMPLETE, None
        try:
            value = runner(trial)
        except optuna.TrialPruned:
            state = states.PRUNED
        except DingLiteError:  # the run's own one-line error, kept on the trial
            state = states.FAIL
        with signals_held() as arrived:
            frozen = study.tell(trial, value, state=state)
            told = True
            sys.stdout.write(progress_line(frozen, space) + "\n")
            sys.stdout.flush()
        _raise_held(arrived)
        return True
    except BaseException:
        if trial is not None and not told:
            with signals_held():
                study.tell(trial, state=states.FAIL)
        raise


def _raise_held(arrived: list[int]) -> None:
    if arrived:
        raise RunInterrupted(signal.Signals(arrived[0]).name)


def setup_to_json(setup: TuneSetup) -> str:
    data = dataclasses.asdict(setup)
    return json.dumps(data)


def setup_from_json(text: str) -> TuneSetup:
    data = json.loads(text)
    space = []
    for p in data.pop("space"):
        p["choices"] = tuple(p["choices"])
        space.append(Param(**p))
    data["seeds"] = tuple(data["seeds"])
    return TuneSetup(space=tuple(space), **data)


def run_jobs(setup: TuneSetup, jobs: int, trials: int, work_dir: Path) -> None:
    """Runs ``trials`` trials of the study on ``jobs`` processes; returns when all ended.

    Raises:
        RunInterrupted: Ctrl-C or SIGTERM (every worker has ended first).
        DingLiteError: a worker failed (its exit code; its own error line is on stderr).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    counter = work_dir / f".claims-{os.getpid()}"
    counter.write_text("0", encoding="utf-8")
    try:
        if jobs == 1:
            with sigterm_interrupts():
                run_trials(setup, TrialClaims(counter, trials))
            return
        setup_file = work_dir / f".setup-{os.getpid()}.json"
        setup_file.write_text(setup_to_json(setup), encoding="utf-8")
        try:
            _supervise(setup_file, counter, trials, jobs)
        finally:
            setup_file.unlink(missing_ok=True)
    finally:
        counter.unlink(missing_ok=True)


def _supervise(setup_file: Path, counter: Path, trials: int, jobs: int) -> None:
    from ding_lite.entry.launch.local import stop_children

    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # one torch thread per worker
    argv = [sys.executable, "-m", "ding_lite.entry.tune.workers", str(setup_file), str(counter)]
    children: list[subprocess.Popen] = []
    try:
        with sigterm_interrupts():
            for _ in range(jobs):
                # A signal inside Popen would leave a child in no list: held until recorded.
                with signals_held() as arrived:
                    children.append(subprocess.Popen([*argv, str(trials)], env=env))
                _raise_held(arrived)
            codes = [child.wait() for child in children]
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM's RunInterrupted
        name = getattr(err, "signal_name", "SIGINT")
        _pass_on(children, signal.SIGTERM if name == "SIGTERM" else signal.SIGINT)
        raise RunInterrupted(name) from None
    finally:  # whatever ended the wait, no worker outlives the command
        stop_children(children)
    failed = [code for code in codes if code != 0]
    if failed:
        raise DingLiteError(f"{len(failed)} of {jobs} tune workers failed (exit {failed[0]})")


def _pass_on(children: list[subprocess.Popen], signum: int) -> None:
    """Gives the terminal's Ctrl-C a moment to stop the workers, sends ``signum`` to any
    still running (a signal sent to this process alone), and waits for them to end (at
    most :data:`WORKER_STOP_S`)."""
    for child in children:
        try:
            child.wait(timeout=PASS_ON_AFTER_S)
        except subprocess.TimeoutExpired:
            child.send_signal(signum)
    deadline = time.monotonic() + WORKER_STOP_S
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            pass  # stop_children terminates it


def main(argv: list[str]) -> int:
    """A worker process: ``SETUP_JSON COUNTER_FILE TRIALS``."""
    try:
        with sigterm_interrupts():
            setup = setup_from_json(Path(argv[0]).read_text(encoding="utf-8"))
            run_trials(setup, TrialClaims(argv[1], int(argv[2])))
    except RunInterrupted as stop:
        return exit_code("interrupted", stop.signal_name)
    except KeyboardInterrupt:
        return exit_code("interrupted")
    except DingLiteError as err:
        print(f"ding-lite tune: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
