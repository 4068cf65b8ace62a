"""``ding-lite tune``: a tiny study from the command line, two processes sharing one study,
pruning that stops a run, best.py that trains, the one-line errors, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

from helpers import TUNE_EXPERIMENT, TUNE_LR_SPACE, processes_with, wait_for  # noqa: E402

from ding_lite.entry.cli.command import main  # noqa: E402
from ding_lite.entry.tune.command import TUNE_SEED_BASE, parse_seeds  # noqa: E402
from ding_lite.entry.tune.space import (  # noqa: E402
    CONTINUOUS_SPACE,
    DISCRETE_SPACE,
    check_space,
    load_space,
)
from ding_lite.entry.tune.trial import PRUNED, TuneSetup  # noqa: E402
from ding_lite.entry.tune.workers import TrialClaims, run_trials  # noqa: E402
from ding_lite.utils.errors import ConfigError, DingLiteError  # noqa: E402

# The learning rate and three more keys.
SPACE = (
    TUNE_LR_SPACE
    + """policy.learn.n_epochs: {type: int, low: 1, high: 2}
minibatches: [1, 2]
policy.model.hidden_sizes: [[16], [32, 32]]
"""
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "tiny.yaml").write_text(TUNE_EXPERIMENT)
    (tmp_path / "space.yaml").write_text(SPACE)
    return tmp_path / "tiny.yaml", tmp_path / "space.yaml"


def _setup(tmp_path: Path, experiment: Path, space: Path, **changes) -> TuneSetup:
    settings = dict(
        experiment=str(experiment),
        exp_name="tiny_cartpole",
        study_name="api",
        storage=f"sqlite:///{tmp_path / 'study.db'}",
        study_dir=str(tmp_path),
        space=load_space(space),
        objective="final",
        seeds=(5,),
        max_env_step=1024,
        num_envs=4,
        n_steps=16,
        eval_freq=1,
    )
    return TuneSetup(**{**settings, **changes})


def _trials(storage: str, study: str) -> list:
    return optuna.load_study(study_name=study, storage=storage).get_trials(deepcopy=False)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_processes_share_a_study_until_ctrl_c_and_best_py_trains(files, tmp_path):
    """Two worker processes run trials of one study (each trial once, numbered once, in a
    run dir of its own); Ctrl-C to the command stops both, leaves no trial running, and
    still writes the best so far as best.py, which trains."""
    experiment, space = files
    out = tmp_path / "studies"
    argv = [sys.executable, "-m", "ding_lite", "tune", "-c", str(experiment), "--space"]
    argv += [str(space), "--trials", "60", "--jobs", "2", "--out", str(out), "--seeds", "1"]
    argv += ["--objective", "final", "--sampler", "random", "--pruner", "none"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    study_dir = out / "tiny_cartpole_tune"
    storage = f"sqlite:///{study_dir / 'study.db'}"
    try:

        def both_workers() -> list[int]:
            found = processes_with("ding_lite.entry.tune.workers", proc.pid)
            return found if len(found) == 2 else []

        workers = wait_for(both_workers, timeout=60)
        assert len(workers) == 2, workers

        def both_finished_trials() -> bool:  # four trials or more, from both workers
            if not (study_dir / "study.db").is_file():
                return False
            try:
                done = [t for t in _trials(storage, "tiny_cartpole_tune") if t.value is not None]
            except KeyError:  # the study is not created yet
                return False
            return len(done) >= 4 and len({t.user_attrs["host"] for t in done}) == 2

        wait_for(both_finished_trials, timeout=120, interval=0.5)
        proc.send_signal(signal.SIGINT)  # to the command alone: it passes it on
        printed, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("ding-lite: interrupted (SIGINT)"), err
    assert not [pid for pid in workers if os.path.exists(f"/proc/{pid}")]  # no orphan
    trials = _trials(storage, "tiny_cartpole_tune")
    assert "RUNNING" not in {t.state.name for t in trials}
    done = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(done) >= 4 and len({t.user_attrs["host"] for t in done}) == 2
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    assert len({json.dumps(t.params, sort_keys=True) for t in trials}) == len(trials)
    # A run dir per trial that began training (one Ctrl-C stopped before it may have none).
    dirs = {p.name for p in (study_dir / "trials").iterdir()}
    assert dirs <= {f"{t.number:04d}_seed{TUNE_SEED_BASE}" for t in trials}
    assert {f"{t.number:04d}_seed{TUNE_SEED_BASE}" for t in done} <= dirs
    for trial in done:  # one progress line each: "trial N COMPLETE value V in S s: ..."
        assert printed.count(f"trial {trial.number} COMPLETE value ") == 1
    assert "learning_rate=" in printed and "batch_size=" in printed
    assert (study_dir / "history.png").stat().st_size > 0
    assert (study_dir / "importances.png").is_file()
    best = study_dir / "best.py"
    assert f"best settings: {best}" in printed
    # best.py is an experiment file: the best trial's settings on the experiment's own.
    best_trial = max(done, key=lambda t: t.value)
    run = tmp_path / "best_run"
    argv = ["serial", "-c", str(best), "-q", "--max-train-iter", "2", "--exp-dir", str(run)]
    assert main(argv) == 0
    saved = json.loads((run / "config.json").read_text())
    lr = best_trial.user_attrs["overrides"]["policy.learn.learning_rate"]
    assert saved["policy"]["learn"]["learning_rate"] == pytest.approx(lr)
    assert saved["exp_name"] == "tiny_cartpole_tuned" and saved["env"]["num_envs"] == 4
    assert saved["evaluator"]["min_train_return"] is None  # the experiment's, not tune's


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_hopeless_trial_is_pruned_and_its_run_stops_cleanly(files, tmp_path):
    experiment, _ = files
    (tmp_path / "hopeless.json").write_text(
        json.dumps({"policy.learn.learning_rate": {"type": "float", "low": 1e-9, "high": 2e-9}})
    )
    setup = _setup(tmp_path, experiment, tmp_path / "hopeless.json", study_name="prune")
    storage = setup.storage
    study = optuna.create_study(study_name="prune", storage=storage, direction="maximize")
    grid = setup.grid
    for _ in range(4):  # four finished trials that scored the maximum at every grid point
        study.add_trial(
            optuna.trial.create_trial(
                value=500.0,
                intermediate_values={step: 500.0 for step in range(0, 1025, grid)},
            )
        )
    run_trials(setup, TrialClaims(tmp_path / "claims", 1))
    trial = _trials(storage, "prune")[-1]
    assert trial.state.name == "PRUNED"
    result = json.loads((tmp_path / "trials" / "0004_seed5" / "result.json").read_text())
    assert result["stop_reason"] == PRUNED and result["envstep"] < 1024
    assert max(trial.intermediate_values) >= setup.grid  # nothing pruned before the warm-up


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_trial_in_the_parallel_pipeline(files, tmp_path):
    experiment, space = files
    setup = _setup(tmp_path, experiment, space, max_env_step=256, pipeline="parallel")
    optuna.create_study(study_name="api", storage=setup.storage, direction="maximize")
    run_trials(setup, TrialClaims(tmp_path / "claims", 1))
    (trial,) = _trials(setup.storage, "api")
    assert trial.state.name == "COMPLETE" and trial.intermediate_values
    assert max(trial.intermediate_values) <= 256  # at most its budget
    result = json.loads((tmp_path / "trials" / "0000_seed5" / "result.json").read_text())
    assert result["eval_return_mean"] == trial.value
    assert (tmp_path / "trials" / "0000_seed5" / "coordinator_state.json").is_file()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-c", "cartpol"], "unknown experiment 'cartpol'"),
        (["-c", "cartpole_ppo", "--jobs", "0"], "--jobs must be at least 1, got 0"),
        (["-c", "cartpole_ppo", "--storage", "nowhere"], "is not a storage URL"),
        (["-c", "cartpole_ppo", "--storage", "nosuchdb://x/y"], "--storage nosuchdb://x/y: "),
        (["-c", "cartpole_ppo", "--space", "{space}"], "type must be one of float, int"),
        (["-c", "cartpole_ppo", "--seeds", "x"], "--seeds x: give a count"),
        (["-c", "mujoco_ppo", "--objective", "steps_to_target"], "has no evaluator.stop_value"),
    ],
)
def test_bad_requests_are_one_line(argv, message, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy.learn.learning_rate: {type: normal}\n")
    argv = [a.replace("{space}", str(bad)) for a in argv]
    assert main(["tune", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_without_optuna_it_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna raises ImportError
    assert main(["tune", "-c", "cartpole_ppo"]) == 2
    assert "pip install 'ding-lite[tune]'" in capsys.readouterr().err


def test_the_bundled_spaces_give_valid_configs_only(tmp_path):
    check_space("cartpole_ppo", DISCRETE_SPACE)
    check_space("pendulum_ppo", CONTINUOUS_SPACE)
    # A space that could sample a config the run would refuse is refused before any trial.
    bad = tmp_path / "bad.py"
    bad.write_text('space = {"policy.collect.n_steps": [16, 20], "policy.learn.bptt_horizon": [8]}')
    with pytest.raises(ConfigError, match="invalid config .*n_steps=20 is not a multiple"):
        check_space("cartpole_ppo", load_space(bad))
    assert parse_seeds("3") == (TUNE_SEED_BASE, TUNE_SEED_BASE + 1, TUNE_SEED_BASE + 2)
    assert parse_seeds("11,12") == (11, 12)
    with pytest.raises(DingLiteError):
        parse_seeds("4,4")
