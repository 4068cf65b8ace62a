"""The bundled mujoco_ppo experiment trains on gymnasium's MuJoCo envs (the mujoco extra)."""

import importlib.util
import json

import pytest

from ding_lite import serial_pipeline

if importlib.util.find_spec("mujoco") is None:
    pytest.skip(
        "the mujoco extra is not installed: pip install -e '.[mujoco]'", allow_module_level=True
    )

TINY = [
    "env.num_envs=2",
    "policy.collect.n_steps=64",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_mujoco_ppo_trains_and_evaluates(tmp_path, monkeypatch, env_id):
    monkeypatch.chdir(tmp_path)  # MuJoCo's default handler would write MUJOCO_LOG.TXT here
    policy = serial_pipeline(
        "mujoco_ppo",
        seed=0,
        overrides=[f"env.name=gym:{env_id}", *TINY],
        exp_dir=str(tmp_path / "run"),
        max_train_iter=2,
    )
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["train_iter"] == 2 and result["envstep"] == 2 * 2 * 64
    assert result["eval_episodes"] == 2 and result["stop_reason"] == "max_train_iter"
    # Normalization is on in this experiment: the statistics saw every raw observation.
    assert policy.model.obs_rms.count == 2 * 2 * 64 == policy.model.ret_rms.count
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no MUJOCO_LOG.TXT
