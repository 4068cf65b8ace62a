"""Settings and fixtures every test shares."""

import compileall
import signal
import sys
from pathlib import Path

import pytest

from ding_lite import serial_pipeline


def pytest_configure(config):
    # Where PYTHONDONTWRITEBYTECODE is set (CI's machine sets it), nothing writes ding_lite's
    # bytecode, and each of the hundreds of processes the tests start would compile its ~150
    # modules again (~0.35 s of CPU each). Compiled once here, they all read it.
    # (Once: in pytest-xdist's workers, which start after this ran in the controller.)
    if sys.flags.dont_write_bytecode and not hasattr(config, "workerinput"):
        compileall.compile_dir(Path(__file__).parents[1] / "ding_lite", quiet=1)
    # A shell without job control starts background commands with SIGINT ignored, and every
    # process the tests start would inherit that: the tests that press Ctrl-C on a run would
    # then test nothing. Handled here, SIGINT reaches the children with its default action.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Two workers share the two cores (``-n 2``): one torch thread each, what a run's
    # ``system.torch_threads=auto`` gives it, for the tests that use torch in-process. With
    # torch's default, a thread per core, work side by side waits at every op's barrier.
    if hasattr(config, "workerinput"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture
def no_box2d(monkeypatch):
    """Box2D as if it were not installed (it is a test dependency): importing it fails, and
    gymnasium's Box2D envs are imported afresh, so they raise DependencyNotInstalled."""

    monkeypatch.setitem(sys.modules, "Box2D", None)
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)


def _one_iteration_run(experiment: str, run: Path) -> Path:
    """``run``, a one-iteration run of ``experiment`` on 8 env copies (real checkpoints,
    cheaply)."""
    serial_pipeline(
        experiment,
        max_train_iter=1,
        overrides=[
            "env.num_envs=8",
            "policy.collect.n_steps=8",
            "evaluator.n_episodes=4",
            "policy.learn.batch_size=64",
        ],
        exp_dir=str(run),
    )
    return run


@pytest.fixture(scope="session")
def aircombat_ckpt(tmp_path_factory) -> Path:
    """The ``ckpt/`` folder of a one-iteration aircombat_ppo run."""
    run = tmp_path_factory.mktemp("aircombat") / "run"
    return _one_iteration_run("aircombat_ppo", run) / "ckpt"


@pytest.fixture(scope="session")
def selfplay_run(tmp_path_factory) -> Path:
    """A one-iteration aircombat_selfplay_ppo run dir (its draw reward included)."""
    run = tmp_path_factory.mktemp("selfplay") / "run"
    return _one_iteration_run("aircombat_selfplay_ppo", run)


@pytest.fixture(scope="session")
def league_run(tmp_path_factory) -> Path:
    """A one-iteration aircombat_league_ppo run dir (main player, two exploiters, a pool)."""
    run = tmp_path_factory.mktemp("league") / "run"
    return _one_iteration_run("aircombat_league_ppo", run)
