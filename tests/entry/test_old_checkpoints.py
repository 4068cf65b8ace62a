"""A checkpoint written before the policy recorded its arch and the run its best evaluation
(issue 13) still resumes, and ding-lite eval still reads it."""

import numpy as np
import pytest
import torch
from helpers import tiny

from ding_lite import load_policy, serial_pipeline
from ding_lite.entry.trained.evaluate import evaluate_checkpoint
from ding_lite.utils.errors import CheckpointError
from ding_lite.utils.file_io import safe_torch_load

SMALL = tiny("policy.learn.n_epochs=2")


def test_a_checkpoint_without_the_new_fields_resumes(tmp_path):
    run = tmp_path / "run"
    serial_pipeline("cartpole_ppo", seed=2, overrides=SMALL, exp_dir=str(run), max_train_iter=2)
    path = run / "ckpt" / "ckpt_iter00000002.pt"
    state = safe_torch_load(path)
    del state["policy"]["arch"], state["extra"]["best_eval"]
    torch.save(state, path)
    (run / "ckpt" / "best.pt").unlink()
    resumed = serial_pipeline(resume=str(run), max_train_iter=3)
    assert resumed.result["train_iter"] == 3 and resumed.result["stop_reason"] == "max_train_iter"
    figures = evaluate_checkpoint("cartpole_ppo", path, episodes=2, overrides=SMALL)
    assert figures["train_iter"] == 2


def test_a_recurrent_checkpoint_from_before_the_critic_had_its_own_core(tmp_path):
    """Recurrent policies used to share one trunk whatever share_encoder said: load_policy
    rebuilds such a file as it was; a config without share_encoder=true gets one line
    naming the fix, and works with it."""
    run = tmp_path / "run"
    lstm = [*SMALL, "policy.model.core=lstm", "policy.model.core_size=8"]
    serial_pipeline(
        "cartpole_ppo",
        seed=2,
        overrides=[*lstm, "policy.model.share_encoder=true"],
        exp_dir=str(run),
        max_train_iter=2,
    )
    path = run / "ckpt" / "ckpt_iter00000002.pt"
    state = safe_torch_load(path)
    state["policy"]["arch"]["options"]["share_encoder"] = False  # as such files recorded it
    torch.save(state, path)
    policy = load_policy(path)
    action, hidden = policy.predict(np.zeros(4, dtype=np.float32))
    assert hidden.shape == (16,)  # one core's h and c
    with pytest.raises(CheckpointError) as err:
        evaluate_checkpoint("cartpole_ppo", path, episodes=1, overrides=lstm)
    message = str(err.value)
    assert "\n" not in message and "missing critic_encoder.0.weight" in message
    assert "load it with policy.model.share_encoder=true" in message
    overrides = [*lstm, "policy.model.share_encoder=true"]
    assert (
        evaluate_checkpoint("cartpole_ppo", path, episodes=1, overrides=overrides)["train_iter"]
        == 2
    )
