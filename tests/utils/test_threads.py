"""``system.torch_threads``: one torch thread for a serial run, eval and render unless the
config or ``OMP_NUM_THREADS`` says otherwise; a number goes to every worker."""

from __future__ import annotations

import pytest
import torch
from easydict import EasyDict
from helpers import TINY, tiny

from ding_lite import serial_pipeline
from ding_lite.entry.pipelines.serial import SerialRun
from ding_lite.utils import threads


@pytest.fixture
def caller_threads():
    """The test's own torch threads set to 2 (what a 2-core machine starts with), and put
    back afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def test_auto_is_one_thread_unless_the_user_set_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.chosen_threads("auto") == 1
    assert threads.chosen_threads(3) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert threads.chosen_threads("auto") is None  # torch read it at start-up: it stands
    assert threads.chosen_threads(3) == 3


def test_the_block_runs_with_the_chosen_threads_and_the_callers_come_back(
    monkeypatch, caller_threads
):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with threads.torch_threads("auto") as used:
        assert used == torch.get_num_threads() == 1
    assert torch.get_num_threads() == caller_threads
    with pytest.raises(RuntimeError), threads.torch_threads(3):
        assert torch.get_num_threads() == 3
        raise RuntimeError("a run that fails gives the threads back too")
    assert torch.get_num_threads() == caller_threads
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    with threads.torch_threads("auto") as used:
        assert used == caller_threads


def test_a_serial_run_trains_on_one_thread_and_leaves_the_callers_torch_alone(
    monkeypatch, tmp_path, caller_threads
):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    seen = []
    run = SerialRun.run

    def recording(self, *args):
        seen.append(torch.get_num_threads())
        return run(self, *args)

    monkeypatch.setattr(SerialRun, "run", recording)
    for name, overrides in (("auto", TINY), ("three", tiny("system.torch_threads=3"))):
        serial_pipeline(
            "cartpole_ppo",
            max_train_iter=1,
            overrides=overrides,
            exp_dir=str(tmp_path / name),
            verbose=0,
        )
    assert seen == [1, 3]
    assert torch.get_num_threads() == caller_threads


@pytest.mark.parametrize(
    ("setting", "omp", "inherit", "cpus", "expected"),
    [
        (4, "2", True, 0.0, {"OMP_NUM_THREADS": "4"}),  # a number wins over the user's
        ("auto", "2", True, 0.0, {}),  # the launcher's OMP_NUM_THREADS is inherited
        ("auto", "2", False, 3.0, {"OMP_NUM_THREADS": "3"}),  # a Ray actor: its whole CPUs
        ("auto", None, True, 0.0, {"OMP_NUM_THREADS": "1"}),  # a collector: one
    ],
)
def test_the_threads_a_launched_worker_gets(monkeypatch, setting, omp, inherit, cpus, expected):
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    system = EasyDict(torch_threads=setting, collectors=2, learners=1)
    assert threads.worker_thread_env(system, "collector", cpus, inherit=inherit) == expected


def test_a_worker_takes_a_number_from_its_start_task_and_keeps_its_count_under_auto(
    caller_threads,
):
    threads.set_worker_threads("auto")
    assert torch.get_num_threads() == caller_threads
    threads.set_worker_threads(1)
    assert torch.get_num_threads() == 1
