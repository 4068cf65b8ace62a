"""``ding_lite.load_policy(...).predict`` and ``ckpt/best.pt``."""

import json
import re

import numpy as np
import pytest
import torch

import ding_lite
from ding_lite import serial_pipeline
from ding_lite.utils.errors import CheckpointError
from ding_lite.worker.learner import BestEval, read_checkpoint

SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=4",
    "evaluator.eval_freq=1",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("predict") / "cartpole"
    policy = serial_pipeline(
        "cartpole_ppo",
        seed=3,
        overrides=[*SMALL, "policy.model.obs_norm=true"],
        exp_dir=str(run),
        max_train_iter=5,
    )
    return run, policy


def eval_returns(run):
    """``{iteration: eval mean}`` from the run's log."""
    text = (run / "log.txt").read_text()
    return {
        int(i): float(r)
        for i, r in re.findall(r"eval at iter (\d+) envstep \d+: return (\S+)", text)
    }


def test_best_checkpoint_holds_the_best_evaluation(cartpole_run):
    run, _ = cartpole_run
    evals = eval_returns(run)
    assert len(evals) >= 5
    best_iter = max(evals, key=lambda i: (evals[i], -i))  # the first of equal bests
    _, state = read_checkpoint(run / "ckpt" / "best.pt")
    assert state["train_iter"] == best_iter
    assert state["extra"]["best_eval"]["return_mean"] == pytest.approx(evals[best_iter], abs=0.01)
    result = json.loads((run / "result.json").read_text())
    assert result["best_checkpoint"] == "ckpt/best.pt"
    assert result["best_eval_return"] == pytest.approx(evals[best_iter], abs=0.01)


def test_best_eval_books_only_improvements(tmp_path):
    best = BestEval(tmp_path)
    booked = [
        best.improves(v, i) for i, v in enumerate([10.0, 8.0, 10.0, float("nan"), None, 12.5])
    ]
    assert booked == [True, False, False, False, False, True]
    assert (best.return_mean, best.train_iter) == (12.5, 5)
    best.load_state_dict({"return_mean": 11.0, "train_iter": 2})  # an older checkpoint's
    assert best.return_mean == 12.5


def test_predict_numpy_and_torch_single_and_batched(cartpole_run):
    run, trained = cartpole_run
    policy = ding_lite.load_policy(run)
    assert policy.checkpoint.name == "best.pt" and policy.obs_shape == (4,)
    obs = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32) * 3 + 100
    batch = policy.predict(obs)
    assert isinstance(batch, np.ndarray) and batch.shape == (6,) and batch.dtype == np.int64
    single = policy.predict(obs[2])
    assert isinstance(single, np.ndarray) and single.shape == () and single == batch[2]
    as_torch = policy.predict(torch.from_numpy(obs))
    assert isinstance(as_torch, torch.Tensor) and as_torch.tolist() == batch.tolist()
    assert policy.predict(torch.from_numpy(obs[2])).item() == int(single)
    assert policy.predict(obs[0].tolist()).shape == ()
    # The saved normalization is applied: the same as the trained model's eval mode on
    # normalized observations.
    model = trained.model
    expected = model.act(model.normalize_obs(torch.from_numpy(obs)), deterministic=True)[0]
    ckpt_model = read_checkpoint(run / "ckpt" / "best.pt")[1]["policy"]["model"]
    assert torch.equal(ckpt_model["obs_rms.count"], policy.model.obs_rms.count)
    if policy.train_iter == trained.result["train_iter"]:
        assert batch.tolist() == expected.tolist()
    with pytest.raises(ValueError, match="neither one observation"):
        policy.predict(np.zeros((2, 5)))


def test_predict_box_actions_are_clipped(tmp_path):
    run = tmp_path / "pendulum"
    serial_pipeline(
        "pendulum_ppo",
        seed=0,
        overrides=[*SMALL, "evaluator.eval_freq=0", "policy.model.log_std_init=2.0"],
        exp_dir=str(run),
        max_train_iter=1,
    )
    (run / "ckpt" / "best.pt").unlink()  # the final evaluation wrote one
    policy = ding_lite.load_policy(run / "ckpt")  # no best.pt: the newest checkpoint
    assert policy.checkpoint.name == "ckpt_iter00000001.pt"
    obs = torch.randn(512, 3)
    sampled = policy.predict(obs, deterministic=False)
    assert sampled.shape == (512, 1)
    assert sampled.abs().max() <= 2.0 and (sampled.abs() == 2.0).any()  # max torque 2
    assert policy.predict(obs[0].numpy()).shape == (1,)


def test_load_policy_errors_are_one_line(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint file or run dir"):
        ding_lite.load_policy(tmp_path / "missing")
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        ding_lite.load_policy(tmp_path)
    (tmp_path / "ckpt" / "best.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        ding_lite.load_policy(tmp_path)  # a broken best.pt and nothing else
