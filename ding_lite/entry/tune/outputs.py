"""What a study leaves: a progress line per trial, the best trial as an experiment file
(``best.py``), and the study's history and parameter importances as PNG images."""

from __future__ import annotations

import pprint
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.config.config import deep_merge_dicts, load_experiment
from ding_lite.entry.tune.space import BATCH_KEY, MINIBATCHES, Param, nested
from ding_lite.utils.file_io import atomic_write_text

BEST_FILE = "best.py"
HISTORY_PNG = "history.png"
IMPORTANCES_PNG = "importances.png"


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "x".join(str(v) for v in value)
    return str(value)


def progress_line(trial: Any, space: tuple[Param, ...]) -> str:
    """``trial 7 COMPLETE value 487.3 in 12.4 s: learning_rate=0.0021 n_steps=64 ...``:
    one finished trial (a pruned one says at which step; a failed one why)."""
    state = trial.state.name
    seconds = trial.duration.total_seconds() if trial.duration is not None else 0.0
    line = f"trial {trial.number} {state}"
    if state == "PRUNED" and trial.intermediate_values:  # (its value: the last reported)
        line += f" at step {max(trial.intermediate_values)}"
    elif trial.value is not None:
        line += f" value {trial.value:.6g}"
    line += f" in {seconds:.1f} s"
    values = trial.user_attrs.get("overrides", {})
    shown = []
    for param in space:
        key = BATCH_KEY if param.key == MINIBATCHES else param.key
        if key in values:
            shown.append(f"{key.rsplit('.', 1)[-1]}={_short(values[key])}")
    if shown:
        line += ": " + " ".join(shown)
    if "error" in trial.user_attrs:
        line += f" ({trial.user_attrs['error']})"
    return line


def best_config(experiment: str | Mapping, exp_name: str, overrides: Mapping[str, Any]) -> dict:
    """The experiment's own config with the best trial's settings, renamed
    ``<exp_name>_tuned``."""
    config = deep_merge_dicts(load_experiment(experiment), nested(overrides))
    config["exp_name"] = f"{exp_name}_tuned"
    return config


def write_best(study: Any, setup: Any) -> Path | None:
    """Writes the best completed trial as ``best.py`` in the study's folder (the format of
    the bundled experiments: ``config = {...}``); returns its path (None: no trial
    completed)."""
    try:
        best = study.best_trial
    except ValueError:  # no completed trial
        return None
    config = best_config(setup.experiment, setup.exp_name, best.user_attrs["overrides"])
    seeds = ", ".join(str(s) for s in setup.seeds)
    text = (
        f'"""{setup.exp_name}, tuned: trial {best.number} of study {setup.study_name!r}.\n\n'
        f"Objective {setup.objective} = {best.value:.6g} over seeds {seeds}, "
        f"{setup.max_env_step:,} env steps each.\n"
        f'Run it: ding-lite serial -c {BEST_FILE}\n"""\n\n'
        f"config = {pprint.pformat(config, indent=4, sort_dicts=False)}\n"
    )
    path = Path(setup.study_dir) / BEST_FILE
    atomic_write_text(text, path)
    return path


def write_plots(study: Any, study_dir: Path) -> list[str]:
    """Draws the optimization history and the parameter importances as PNG files; returns
    one line per image, written or skipped with the reason (never raises for too few
    trials or a missing matplotlib)."""
    from ding_lite.entry.tune.study import import_optuna

    optuna = import_optuna()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["plots skipped: matplotlib is not installed (pip install 'ding-lite[tune]')"]
    from optuna.trial import TrialState

    lines = []
    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    vis = optuna.visualization.matplotlib
    if completed:
        lines.append(_save(plt, vis.plot_optimization_history(study), study_dir / HISTORY_PNG))
    else:
        lines.append(f"{HISTORY_PNG} skipped: no trial completed")
    varied = {k for t in completed for k in t.params if _varies(completed, k)}
    if len(completed) < 2 or not varied:
        lines.append(f"{IMPORTANCES_PNG} skipped: needs 2 completed trials with different settings")
        return lines
    # PED-ANOVA needs no scikit-learn (fANOVA, Optuna's default, does); with few trials it
    # warns that its quantiles coincide, which says nothing the user can act on.
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            axes = vis.plot_param_importances(study, evaluator=evaluator)
    except (ValueError, RuntimeError, ZeroDivisionError) as err:
        lines.append(f"{IMPORTANCES_PNG} skipped: {err}".splitlines()[0])
        return lines
    lines.append(_save(plt, axes, study_dir / IMPORTANCES_PNG))
    return lines


def _varies(trials: list[Any], key: str) -> bool:
    return len({repr(t.params.get(key)) for t in trials}) > 1


def _save(plt: Any, axes: Any, path: Path) -> str:
    figure = axes.figure if hasattr(axes, "figure") else axes[0].figure
    figure.set_size_inches(10, 6)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return f"wrote {path}"


def summary_lines(study: Any, started: int) -> list[str]:
    """The study's counts by state (the trials from number ``started`` on are this
    command's), and the best trial."""
    trials = study.get_trials(deepcopy=False)
    mine = [t for t in trials if t.number >= started]
    counts: dict[str, int] = {}
    for trial in mine:
        counts[trial.state.name] = counts.get(trial.state.name, 0) + 1
    shown = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
    lines = [f"study {study.study_name}: {len(trials)} trials, {len(mine)} new ({shown or 'none'})"]
    try:
        best = study.best_trial
        lines.append(f"best: trial {best.number}, value {best.value:.6g}")
    except ValueError:
        lines.append("best: none (no trial completed)")
    return lines
