"""policy.learn.kickstart.teacher=agent:NAME: a scripted teacher acts in the collectors, its
actions travel with the rollout (``teacher_action``) and pull the student toward them, in
both pipelines; its state resumes with the collector's; bad settings are one line."""

from __future__ import annotations

import pytest
import torch

from ding_lite import load_policy, serial_pipeline
from ding_lite.config import compile_config
from ding_lite.data.spec import validate_rollout
from ding_lite.envs import create_env
from ding_lite.envs.teachers import build_teacher
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector import SerialCollector
from ding_lite.worker.learner.comm.intake import run_rollout_spec

TEACHER = "policy.learn.kickstart.teacher"


def _play(env_name, teacher, steps, num_envs=64, **kwargs):
    """Returns and lengths of the episodes ``agent:teacher`` finishes in ``steps`` steps."""
    env = create_env(env_name, num_envs, seed=5, **kwargs)
    agent = build_teacher(env_name, f"agent:{teacher}", env)
    obs, _ = env.reset(seed=5)
    returns, lengths = [], []
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(agent.act(obs))
        done = term | trunc
        agent.reset(done)
        returns += info["episode"]["return"][info["episode"]["mask"]].tolist()
        lengths += info["episode"]["length"][info["episode"]["mask"]].tolist()
    return returns, lengths


def test_the_bundled_teachers_play_their_envs_well():
    returns, _ = _play("pendulum", "energy", 400)
    assert len(returns) == 128 and sum(returns) / len(returns) > -200
    _, lengths = _play("cartpole", "balance", 600)
    assert lengths and min(lengths) == 500


def test_the_crank_teacher_gives_the_students_actions_and_keeps_its_state(tmp_path):
    cfg = compile_config("aircombat_ppo", [f"{TEACHER}=agent:rule_based", "env.num_envs=8"])
    env = create_env("aircombat", 8, seed=1)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)

    def collector():
        return SerialCollector.from_config(create_env("aircombat", 8, seed=1), policy, cfg, 1)

    straight = collector()
    data = straight.collect()
    action, taught = data["action"], data["teacher_action"]
    assert taught.shape == action.shape and taught.dtype == action.dtype
    rudder, fire = taught[:, 0], taught[:, -1]
    assert bool(((rudder >= -1) & (rudder <= 1)).all()) and set(fire.unique().tolist()) <= {0, 1}
    validate_rollout({"data": data}, run_rollout_spec(cfg, env, policy), data["obs"].shape[0])
    # Saved after one rollout, the teacher's per-copy state resumes with the collector's.
    state = straight.state_dict()
    assert "teacher" in state and state["teacher"]["mode"].shape == (8,)
    again = collector()
    again.load_state_dict(state)
    assert torch.equal(straight.collect()["teacher_action"], again.collect()["teacher_action"])


def test_a_scripted_kickstart_pulls_the_student_toward_the_teacher(tmp_path):
    common = dict(max_train_iter=3, seed=7, verbose=0)
    serial_pipeline("cartpole_ppo", exp_dir=str(tmp_path / "scratch"), **common)
    serial_pipeline(
        "cartpole_ppo",
        overrides=[f"{TEACHER}=agent:balance", "policy.learn.kickstart.coef=5"],
        exp_dir=str(tmp_path / "kicked"),
        **common,
    )
    obs = torch.randn(2048, 4, generator=torch.Generator().manual_seed(0)) * 0.3
    teacher = (obs[:, 2] + 0.5 * obs[:, 3] + 0.05 * obs[:, 0] + 0.1 * obs[:, 1] > 0).long()

    def nll(run):  # the student's negative log-likelihood of the teacher's actions
        with torch.no_grad():
            return float(-load_policy(run).model.get_dist(obs).log_prob(teacher).mean())

    assert nll(tmp_path / "kicked") < 0.7 * nll(tmp_path / "scratch")


@pytest.mark.parametrize(
    ("experiment", "overrides", "message"),
    [
        ("cartpole_ppo", [f"{TEACHER}=agent:nothing"], r"no scripted teacher 'nothing'.*balance"),
        (
            "cartpole_ppo",
            [f"{TEACHER}=agent:balance", "policy.learn.kickstart.value_coef=0.5"],
            "needs a trained teacher; agent:balance is a scripted one",
        ),
        (
            "cartpole_ppo",
            [f"{TEACHER}=agent:balance", "collector.async_factor=2"],
            "needs collector.async_factor=1",
        ),
        (
            "pendulum_ppo",
            [f"{TEACHER}=agent:energy", "env.kwargs.observe=position"],
            "needs env.kwargs.observe=full",
        ),
        ("aircombat_selfplay_ppo", [f"{TEACHER}=agent:rule_based"], "one agent per env copy"),
    ],
)
def test_bad_scripted_teachers_are_one_line_and_write_nothing(
    experiment, overrides, message, tmp_path
):
    with pytest.raises(ConfigError, match=message) as err:
        serial_pipeline(experiment, overrides=overrides, exp_dir=str(tmp_path / "r"), verbose=0)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "r" / "ckpt").exists()
