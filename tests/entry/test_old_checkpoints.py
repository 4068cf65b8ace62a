"""A checkpoint written before the policy recorded its arch and the run its best evaluation
(issue 13) still resumes, and ding-lite eval still reads it."""

import torch

from ding_lite import serial_pipeline
from ding_lite.entry.trained.evaluate import evaluate_checkpoint
from ding_lite.utils.file_io import safe_torch_load

SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
    "evaluator.min_train_return=none",
]


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
