"""One trial of a study: sample its settings, train each seed, report every evaluation to
Optuna, stop cleanly when pruned, and score it.

Evaluations reach Optuna through the run's own record of them, the ``charts/eval_return``
points of its tensorboard file. In the serial pipeline a ``before_iter`` learner hook
(:class:`TuneReportHook`, type ``tune_report``) reads the points the evaluation before that
iteration wrote; when the pruner says so it asks the learner to stop
(``learner.request_stop``), and the run ends as any stopped run does: a last evaluation,
its checkpoint and result.json. A trial of the parallel pipeline reports its evaluations
when its run has ended (it is never stopped early).
"""

from __future__ import annotations

import math
import os
import socket
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.entry.tune.space import Param, nested, sample
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.tb_tail import TbTail
from ding_lite.worker.learner.learner_hook import LearnerHook, register_learner_hook

EVAL_TAG = "charts/eval_return"
HOOK_TYPE = "tune_report"
GRID_POINTS = 50  # intermediate values are reported on this many points of a seed's budget
UNSOLVED_PENALTY = 2.0  # steps_to_target of a seed that never solved: budget x this
OBJECTIVES = ("final", "best", "steps_to_target")
PRUNED = "pruned by the tuner"  # the stop reason of a pruned trial's run

# Reporters of the trials running in this process, by id: the hook finds its own here.
_REPORTERS: dict[str, EvalReporter] = {}


@dataclass(frozen=True)
class TuneSetup:
    """Everything a worker process needs to run trials of one study.

    Attributes:
        experiment: a bundled experiment name or a config file's absolute path.
        exp_name: the experiment's ``exp_name`` (trial runs are named after it).
        study_name: the Optuna study.
        storage: its storage URL (see :mod:`.study`).
        study_dir: the folder of trial run dirs, ``best.py`` and the plots.
        space: the search space.
        objective: one of :data:`OBJECTIVES`.
        seeds: the seeds each trial trains, one after another.
        max_env_step: each seed's budget.
        num_envs: the experiment's env copies (derives batch sizes).
        n_steps: the experiment's rollout length (when the space does not search it).
        eval_freq: iterations between evaluations.
        sampler: "tpe" or "random".
        pruner: "median", "hyperband" or "none".
        pipeline: "serial" or "parallel".
    """

    experiment: str
    exp_name: str
    study_name: str
    storage: str
    study_dir: str
    space: tuple[Param, ...]
    objective: str
    seeds: tuple[int, ...]
    max_env_step: int
    num_envs: int
    n_steps: int
    eval_freq: int
    sampler: str = "tpe"
    pruner: str = "median"
    pipeline: str = "serial"

    @property
    def direction(self) -> str:
        return "minimize" if self.objective == "steps_to_target" else "maximize"

    @property
    def grid(self) -> int:
        """Env steps between two points that intermediate values are reported at."""
        return max(1, self.max_env_step // GRID_POINTS)

    @property
    def max_step(self) -> int:
        """The last step a trial reports at: every seed's budget, one after another."""
        return self.max_env_step * len(self.seeds)


class EvalReporter:
    """Reports a trial's evaluations to Optuna as they appear in its runs' event files.

    Each evaluation (mean return; its negative when the study minimizes) is reported at the
    first point of a grid (every ``setup.grid`` env steps) at or after its env step, and at
    grid points skipped since the previous one, so that trials with different rollout sizes
    report at the same steps and the pruner can compare them. Seed ``i`` reports at steps
    offset by ``i * max_env_step``.
    """

    def __init__(self, trial: Any, setup: TuneSetup) -> None:
        self.trial = trial
        self.setup = setup
        self.sign = -1.0 if setup.direction == "minimize" else 1.0
        self.offset = 0
        self.last_step = -1
        self.pruned = False
        self.tail: TbTail | None = None

    def start_seed(self, index: int, run_dir: Path) -> None:
        self.offset = index * self.setup.max_env_step
        self.last_step = -1  # this seed's first evaluation fills no grid points before it
        self.tail = TbTail(run_dir / "tb", warn=lambda line: None)

    def poll(self) -> bool:
        """Reports the evaluations written since the last call; True if there were any."""
        if self.tail is None:
            return False
        grid, reported = self.setup.grid, False
        for _, envstep, tag, value in self.tail.read_new():
            if tag != EVAL_TAG or not math.isfinite(value):
                continue
            # A run may end a little past its budget: its seed's steps end there.
            target = self.offset + min(math.ceil(envstep / grid) * grid, self.setup.max_env_step)
            first = self.last_step + grid if self.last_step >= 0 else target
            for step in range(max(first, self.offset), target + 1, grid):
                self.trial.report(self.sign * value, step)
                reported = True
            self.last_step = max(self.last_step, target)
        return reported

    def should_prune(self) -> bool:
        self.pruned = self.pruned or self.trial.should_prune()
        return self.pruned


@register_learner_hook(HOOK_TYPE)
class TuneReportHook(LearnerHook):
    """Before each iteration of a trial's serial run: reports the evaluation that came
    before it (the tensorboard file is flushed first) and stops the run when the trial is
    pruned.

    Args:
        reporter: the id of the trial's :class:`EvalReporter` in this process.
        eval_freq: iterations between evaluations (others have nothing to report).
    """

    default_priority = 90

    def __init__(
        self,
        name: str,
        priority: float | None = None,
        *,
        position: str,
        reporter: str = "",
        eval_freq: int = 1,
    ) -> None:
        super().__init__(name, priority, position=position)
        self.reporter = reporter
        self.eval_freq = max(1, int(eval_freq))

    def __call__(self, engine: Any) -> None:
        reporter = _REPORTERS.get(self.reporter)
        if reporter is None or engine.train_iter % self.eval_freq:
            return
        if engine.tb_logger is not None:
            engine.tb_logger.flush()
        if reporter.poll() and reporter.should_prune():
            engine.request_stop(PRUNED)


class TrialRunner:
    """The objective Optuna calls: one trial, every seed.

    Args:
        setup: the study's setup.
    """

    def __init__(self, setup: TuneSetup) -> None:
        self.setup = setup

    def __call__(self, trial: Any) -> float:
        try:
            return self._trial(trial)
        except DingLiteError as err:  # the progress line shows it; the trial fails
            trial.set_user_attr("error", str(err))
            raise

    def _trial(self, trial: Any) -> float:
        from ding_lite.entry.tune.study import import_optuna

        optuna = import_optuna()
        setup = self.setup
        values = sample(trial, setup.space, setup.num_envs, setup.n_steps)
        trial.set_user_attr("overrides", values)
        trial.set_user_attr("host", f"{socket.gethostname()}:{os.getpid()}")
        reporter = EvalReporter(trial, setup)
        scores: list[float] = []
        run_dirs: list[str] = []
        for index, seed in enumerate(setup.seeds):
            run_dir = trial_dir(setup, trial.number, seed)
            run_dirs.append(str(run_dir))
            trial.set_user_attr("run_dirs", run_dirs)
            reporter.start_seed(index, run_dir)
            result = self._run_seed(trial.number, values, seed, run_dir, reporter)
            if reporter.pruned:
                raise optuna.TrialPruned(f"pruned at env step {result['envstep']} of seed {seed}")
            scores.append(score(result, setup))
        trial.set_user_attr("scores", scores)
        return statistics.mean(scores)

    def _run_seed(
        self, number: int, values: dict[str, Any], seed: int, run_dir: Path, reporter: Any
    ) -> dict[str, Any]:
        setup = self.setup
        fixed: dict[str, Any] = {
            # Every evaluation is due on schedule: the pruner needs them all.
            "evaluator.min_train_return": None,
            "system.torch_threads": 1,
            "exp_name": f"{setup.exp_name}_t{number}",
        }
        options: dict[str, Any] = {
            "seed": seed,
            "max_env_step": setup.max_env_step,
            "exp_dir": str(run_dir),
            "verbose": 0,
        }
        if setup.pipeline == "parallel":
            from ding_lite.entry.pipelines.parallel import parallel_pipeline

            result = parallel_pipeline(
                setup.experiment, overrides=nested({**values, **fixed}), **options
            )
            reporter.poll()
            return result
        from ding_lite.entry.pipelines.serial import serial_pipeline

        key = f"{number}-{seed}-{os.getpid()}"
        fixed[f"learner.hook.{HOOK_TYPE}"] = {
            "type": HOOK_TYPE,
            "position": "before_iter",
            "ext_args": {"reporter": key, "eval_freq": setup.eval_freq},
        }
        _REPORTERS[key] = reporter
        try:
            run = serial_pipeline(
                setup.experiment, overrides=nested({**values, **fixed}), **options
            )
        finally:
            _REPORTERS.pop(key, None)
        reporter.poll()  # the last evaluation, after the last iteration
        return run.result


def trial_dir(setup: TuneSetup, number: int, seed: int) -> Path:
    """The run dir of one seed of one trial, under the study's folder."""
    return Path(setup.study_dir) / "trials" / f"{number:04d}_seed{seed}"


def score(result: dict[str, Any], setup: TuneSetup) -> float:
    """One seed's score: the last or best evaluation's mean return, or the env steps it
    took to solve (``UNSOLVED_PENALTY`` x the budget when it did not).

    Raises:
        DingLiteError: the run ended with no evaluation to score.
    """
    if setup.objective == "steps_to_target":
        if result["solved"]:
            return float(result["envstep"])
        return UNSOLVED_PENALTY * setup.max_env_step
    key = "eval_return_mean" if setup.objective == "final" else "best_eval_return"
    value = result[key]
    if value is None or not math.isfinite(value):
        raise DingLiteError(f"the run ended with no evaluation ({result['stop_reason']})")
    return float(value)
