"""bench/policy_lag.py's lagged serial run collects with the policy one update behind."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from ding_lite.entry import serial
from ding_lite.worker.collector import SerialCollector

BENCH = Path(__file__).resolve().parents[2] / "bench" / "policy_lag.py"


def _load_bench():
    spec = importlib.util.spec_from_file_location("policy_lag_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def test_lagged_serial_run_collects_with_the_previous_version(tmp_path, monkeypatch):
    monkeypatch.setattr(serial, "SerialRun", _load_bench().lagged_serial_run())
    collected_with: list[torch.Tensor] = []  # behaviour weights at each rollout
    trained_from: list[torch.Tensor] = []  # learner weights before each update
    collect = SerialCollector.collect

    def spy_collect(self):
        collected_with.append(_weights(self.policy._policy.model))
        return collect(self)

    monkeypatch.setattr(SerialCollector, "collect", spy_collect)
    train_from = serial.BaseLearner.train

    def spy_train(self, data, envstep):
        trained_from.append(_weights(self.policy.model))
        return train_from(self, data, envstep)

    monkeypatch.setattr(serial.BaseLearner, "train", spy_train)
    serial.serial_pipeline(
        "cartpole_ppo",
        seed=0,
        max_train_iter=4,
        exp_dir=str(tmp_path / "run"),
        overrides=["env.num_envs=4", "policy.collect.n_steps=16", "evaluator.n_episodes=2"],
    )
    assert len(collected_with) == len(trained_from) == 4
    # The first two rollouts use the initial policy; rollout k (k >= 1) uses the weights the
    # learner had before update k - 1, i.e. version k - 1 while the learner is at version k.
    torch.testing.assert_close(collected_with[0], trained_from[0])
    for k in range(1, 4):
        torch.testing.assert_close(collected_with[k], trained_from[k - 1])
        assert not torch.equal(collected_with[k], trained_from[k])
