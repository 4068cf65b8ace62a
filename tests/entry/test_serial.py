import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from ding_lite import serial_pipeline
from ding_lite.entry.pipelines.serial import _log_train, _SpsMeter
from ding_lite.utils.errors import CheckpointError, ConfigError

SMALL = [
    "env.num_envs=4",
    "policy.collect.n_steps=16",
    "policy.learn.batch_size=32",
    "policy.learn.n_epochs=2",
    "evaluator.n_episodes=2",
    "evaluator.eval_freq=0",
    "evaluator.stop_value=none",
]


def params(policy):
    return torch.cat([p.detach().flatten() for p in policy.model.parameters()])


def test_run_writes_experiment_dir(tmp_path):
    policy = serial_pipeline(
        "cartpole_ppo", seed=1, overrides=SMALL, exp_dir=str(tmp_path / "run"), max_train_iter=3
    )
    run = tmp_path / "run"
    result = json.loads((run / "result.json").read_text())
    for key in ("solved", "eval_return_mean", "envstep", "train_iter", "wall_s"):
        assert key in result
    assert result["train_iter"] == 3 and result["envstep"] == 3 * 4 * 16
    assert result["stop_reason"] == "max_train_iter"
    assert json.loads((run / "config.json").read_text())["seed"] == 1
    assert list((run / "tb").iterdir())
    assert (run / "log.txt").read_text()
    assert (run / "ckpt" / "ckpt_iter00000003.pt").exists()
    assert policy.result == result


def test_explicit_exp_dir_holding_a_run_is_refused(tmp_path):
    serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(tmp_path), max_train_iter=1)
    with pytest.raises(ConfigError, match="already holds a run"):
        serial_pipeline("cartpole_ppo", overrides=SMALL, exp_dir=str(tmp_path), max_train_iter=1)


def test_same_seed_same_parameters(tmp_path):
    a = serial_pipeline(
        "cartpole_ppo", seed=5, overrides=SMALL, exp_dir=str(tmp_path / "a"), max_train_iter=3
    )
    b = serial_pipeline(
        "cartpole_ppo", seed=5, overrides=SMALL, exp_dir=str(tmp_path / "b"), max_train_iter=3
    )
    assert torch.equal(params(a), params(b))


@pytest.mark.slow
@pytest.mark.parametrize(
    "env,norm,core",
    [
        ("cartpole", False, "none"),
        ("pendulum", False, "none"),
        ("pendulum", True, "none"),
        ("cartpole", True, "lstm"),
    ],
)
def test_resume_in_a_new_process_is_bit_exact(tmp_path, env, norm, core):
    """k iterations straight == j iterations, then a new process resuming to k; with
    observation normalization and reward scaling too (statistics, running returns), and
    with an LSTM policy on 8-step segments (the collector's per-copy state resumes too)."""
    k, j = 6, 2
    memory = [] if core == "none" else [
        f"policy.model.core={core}",
        "policy.model.core_size=16",
        "policy.learn.bptt_horizon=8",
        "env.kwargs.observe=position",
    ]  # fmt: skip
    extra = (
        SMALL
        + memory
        + [
            f"policy.model.obs_norm={norm}",
            f"policy.learn.reward_scale={norm}",
            f"env.name={env}",
            "policy.learn.lr_anneal=true",
            "max_env_step=4096",
            "policy.learn.kl_coef=0.1",
            # sampled eval actions must not disturb the training RNG stream
            "policy.eval.deterministic=false",
        ]
    )
    straight = serial_pipeline(
        "cartpole_ppo",
        seed=3,
        overrides=extra,
        exp_dir=str(tmp_path / "straight"),
        max_train_iter=k,
    )
    run = tmp_path / "resumed"
    cmd = [
        sys.executable,
        "-m",
        "ding_lite",
        "serial",
        "-c",
        "cartpole_ppo",
        "--seed",
        "3",
        "-q",
        "--exp-dir",
        str(run),
        "--max-train-iter",
        str(j),
        *extra,
    ]
    subprocess.run(cmd, check=True, timeout=120, capture_output=True)
    resumed = serial_pipeline(resume=str(run), max_train_iter=k)
    assert resumed.result["train_iter"] == k
    assert resumed.result["envstep"] == straight.result["envstep"]
    assert torch.equal(params(straight), params(resumed))
    state_a, state_b = straight.model.state_dict(), resumed.model.state_dict()
    assert state_a.keys() == state_b.keys()
    assert all(torch.equal(state_a[key], state_b[key]) for key in state_a)  # buffers too
    if norm:
        assert straight.model.obs_rms.count == k * 4 * 16 == straight.model.ret_rms.count
    opt_a = straight.optimizer.state_dict()["state"]
    opt_b = resumed.optimizer.state_dict()["state"]
    assert all(torch.equal(opt_a[i]["exp_avg"], opt_b[i]["exp_avg"]) for i in opt_a)


def test_resume_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot resume"):
        serial_pipeline("cartpole_ppo", resume=str(tmp_path))
    with pytest.raises(ConfigError, match="cannot resume"):
        serial_pipeline(resume=str(tmp_path / "nothing"))
    serial_pipeline(
        "cartpole_ppo",
        overrides=SMALL + ["learner.hook.save_ckpt_after_run=false"],
        exp_dir=str(tmp_path / "r"),
        max_train_iter=1,
    )
    with pytest.raises(CheckpointError, match="no checkpoint"):
        serial_pipeline(resume=str(tmp_path / "r"), max_train_iter=2)


def test_unknown_env_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown env 'cartpol'"):
        serial_pipeline("cartpole_ppo", overrides=["env.name=cartpol"], exp_dir=str(tmp_path))


def test_missing_checkpoint_path_is_clear(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        serial_pipeline(
            "cartpole_ppo",
            overrides=SMALL + [f"learner.hook.load_ckpt_before_run={tmp_path}/x.pt"],
            exp_dir=str(tmp_path / "run"),
            max_train_iter=1,
        )
    assert not (tmp_path / "run").exists()


def test_hook_can_stop_the_run(tmp_path):
    from ding_lite.worker.learner import LearnerHook, register_learner_hook

    class StopAtTwo(LearnerHook):
        def __call__(self, engine):
            if engine.train_iter == 2:
                engine.request_stop("enough")

    register_learner_hook("stop_at_two_test", StopAtTwo, force=True)
    hook = "learner.hook.stopper={type: stop_at_two_test, position: after_iter}"
    policy = serial_pipeline("cartpole_ppo", overrides=SMALL + [hook], exp_dir=str(tmp_path))
    assert policy.result["train_iter"] == 2
    assert policy.result["stop_reason"] == "enough"


class _Scalars:
    """Records ``add_scalar`` calls like a tensorboard writer."""

    def __init__(self):
        self.values = {}

    def add_scalar(self, tag, value, step):
        self.values.setdefault(tag, []).append((value, step))


def test_log_train_writes_outcome_rates_when_the_env_reports_them():
    collector = SimpleNamespace(
        envstep=64,
        last_returns=[1.0, -1.0],
        last_lengths=[10, 20],
        outcome_rates=lambda: {"win_rate": 0.5, "loss_rate": 0.25, "draw_rate": 0.25},
    )
    tb = _Scalars()
    _log_train(tb, collector, _SpsMeter(0))
    assert tb.values["charts/win_rate"] == [(0.5, 64)]
    assert tb.values["charts/loss_rate"] == [(0.25, 64)]
    assert tb.values["charts/draw_rate"] == [(0.25, 64)]
    # One point an iteration, the mean of its episodes (a one-move game ends hundreds an
    # iteration; one point each cost more than the update).
    assert tb.values["charts/episodic_return"] == [(0.0, 64)]
    assert tb.values["charts/episodic_length"] == [(15.0, 64)]
    collector.outcome_rates = lambda: None
    tb = _Scalars()
    _log_train(tb, collector, _SpsMeter(0))
    assert not any("rate" in tag for tag in tb.values)


def test_aircombat_run_reports_the_eval_win_rate(tmp_path):
    overrides = [
        "env.num_envs=4",
        "env.kwargs.max_episode_steps=8",  # every episode a quick draw
        "policy.collect.n_steps=8",
        "policy.learn.batch_size=32",
        "evaluator.n_episodes=3",
    ]
    policy = serial_pipeline(
        "aircombat_ppo", overrides=overrides, exp_dir=str(tmp_path / "r"), max_train_iter=1
    )
    assert policy.result["eval_win_rate"] == 0.0
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["eval_win_rate"] == 0.0
    assert "win rate 0.0%" in (tmp_path / "r" / "log.txt").read_text()
