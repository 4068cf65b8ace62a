"""The "ppo" agent: a checkpoint's policy flying one side of the air-combat env."""

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.trained.ppo_agent import PPOAgent
from ding_lite.envs import create_env
from ding_lite.envs.aircombat import create_agent
from ding_lite.envs.aircombat import physics as P
from ding_lite.policy import create_policy
from ding_lite.utils.errors import CheckpointError, ConfigError
from ding_lite.worker.learner import BaseLearner


def _checkpoint(folder, overrides=()):
    """Saves an untrained aircombat_ppo policy as the learner does; returns (file, cfg)."""
    cfg = compile_config("aircombat_ppo", list(overrides))
    env = create_env("aircombat", 1, **cfg.env.kwargs)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    learner = BaseLearner(cfg.learner, policy, exp_name="t", exp_dir=folder)
    return learner.save_checkpoint(), cfg


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("run"))[0]


def _obs(n, seed=0):
    env = create_env("aircombat", n, seed=seed, opponent="placeholder")
    obs, _ = env.reset()
    return obs


def test_deterministic_actions_are_the_policy_s_with_the_fixed_throttle(ckpt):
    default = create_agent("ppo", num_envs=6, ckpt=ckpt)
    assert default.deterministic is False  # as aircombat_ppo evaluates: sampled actions
    agent = create_agent("ppo", num_envs=6, ckpt=ckpt.parent, deterministic=True)  # a folder
    assert isinstance(agent, PPOAgent) and agent.checkpoint == ckpt and agent.train_iter == 0
    obs = _obs(6)
    out = agent.act(obs)
    assert set(out) == {"rudder", "throttle", "fire"}
    assert all(v.shape == (6,) for v in out.values())
    with torch.no_grad():
        expected, _, _ = agent.policy.model.act(obs, deterministic=True)
    assert torch.equal(out["rudder"], expected[:, 0]) and torch.equal(out["fire"], expected[:, 1])
    assert (out["throttle"] == 1.0).all()  # aircombat_ppo fixes the throttle at 1
    assert torch.equal(agent.act(obs)["rudder"], out["rudder"])
    assert agent.eval() is agent and agent.to("cpu") is agent
    agent.reset(torch.ones(6, dtype=torch.bool))


def test_three_column_policy_sets_the_throttle(tmp_path):
    path, cfg = _checkpoint(tmp_path, ["env.kwargs.throttle=none"])
    agent = create_agent("ppo", num_envs=3, ckpt=path, config=cfg, deterministic=True)
    obs = _obs(3)
    out = agent.act(obs)
    with torch.no_grad():
        expected, _, _ = agent.policy.model.act(obs, deterministic=True)
    assert expected.shape == (3, 3)
    assert torch.equal(out["throttle"], expected[:, 1]) and torch.equal(out["fire"], expected[:, 2])


def test_sampling_is_seeded_and_leaves_the_global_rng_alone(ckpt):
    obs = _obs(64)
    a, b = (create_agent("ppo", num_envs=64, seed=3, ckpt=ckpt, deterministic=False) for _ in "ab")
    rng = torch.get_rng_state()
    first = a.act(obs)
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(first["rudder"], b.act(obs)["rudder"])
    saved = a.state_dict()
    second = a.act(obs)
    assert not torch.equal(second["rudder"], first["rudder"])  # the stream moves on
    b.load_state_dict(saved)
    assert torch.equal(b.act(obs)["rudder"], second["rudder"])


def test_flies_p2_given_as_an_agent_or_by_name(ckpt):
    agent = create_agent("ppo", num_envs=4, ckpt=ckpt, deterministic=True)
    by_agent = create_env("aircombat", 4, seed=1, opponent=agent, throttle=1.0)
    by_name = create_env(
        "aircombat",
        4,
        seed=1,
        opponent="ppo",
        throttle=1.0,
        opponent_kwargs={"ckpt": str(ckpt), "deterministic": True},
    )
    assert isinstance(by_name.opponent, PPOAgent)
    by_agent.reset()
    by_name.reset()
    action = torch.tensor([[0.3, 0.0]] * 4)
    for _ in range(20):
        out_a = by_agent.step(action)
        out_n = by_name.step(action)
        assert torch.equal(out_a[0], out_n[0])
    assert (by_name.speed[:, 1] > P.START_SPEED).all()  # P2 flies at the policy's throttle 1


def test_a_recurrent_checkpoint_with_obs_norm_flies_with_its_memory_and_statistics(tmp_path):
    overrides = ["policy.model.core=gru", "policy.model.core_size=8", "policy.model.obs_norm=true"]
    cfg = compile_config("aircombat_ppo", overrides)
    env = create_env("aircombat", 1, **cfg.env.kwargs)
    torch.manual_seed(0)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    policy.collect_mode.obs_rms.merge(policy.collect_mode.obs_rms.summarize(_obs(64, seed=3) * 5))
    path = BaseLearner(cfg.learner, policy, exp_name="t", exp_dir=tmp_path).save_checkpoint()
    agent = create_agent("ppo", num_envs=4, ckpt=path, config=cfg, deterministic=True)
    model = agent.policy.model
    assert model.obs_rms.count > 0 and agent.memory.shape == (4, model.state_size)
    h = model.initial_state(4)
    starts = torch.ones(4, dtype=torch.bool)
    for step in range(3):  # the agent's actions are the model's on normalized obs, memory kept
        obs = _obs(4, seed=step)
        want, _, _, h = model.step(model.normalize_obs(obs), h, starts, deterministic=True)
        starts = torch.zeros(4, dtype=torch.bool)
        out = agent.act(obs)
        assert torch.equal(out["rudder"], want[:, 0]) and torch.equal(out["fire"], want[:, 1])
        assert torch.equal(agent.memory, h)
    saved = agent.state_dict()
    agent.reset(torch.tensor([True, False, False, True]))  # copies 0 and 3 start again
    obs = _obs(4, seed=9)
    starts = torch.tensor([True, False, False, True])
    want, _, _, _ = model.step(model.normalize_obs(obs), h, starts, deterministic=True)
    assert torch.equal(agent.act(obs)["rudder"], want[:, 0])
    agent.load_state_dict(saved)  # as an env's state restores its opponent
    assert torch.equal(agent.memory, h) and not agent.starts.any()


def test_clear_errors(ckpt, tmp_path):
    with pytest.raises(ValueError, match="agent 'ppo' needs ckpt=PATH"):
        create_agent("ppo", num_envs=2)
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        create_agent("ppo", num_envs=2, ckpt=tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        create_agent("ppo", num_envs=2, ckpt=tmp_path)
    with pytest.raises(ConfigError, match="needs an aircombat experiment"):
        create_agent("ppo", num_envs=2, ckpt=ckpt, config="cartpole_ppo")
    with pytest.raises(CheckpointError, match="does not fit"):  # trained with 2 action columns
        create_agent("ppo", num_envs=2, ckpt=ckpt, overrides=["env.kwargs.throttle=none"])


def test_serial_command_trains_against_a_ppo_opponent(aircombat_ckpt, tmp_path):
    """The documented command works in a fresh process: the serial pipeline itself
    registers the "ppo" agent (nothing imported it first)."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "aircombat_ppo", "-q",
           "--exp-dir", str(tmp_path / "run"), "--max-train-iter", "1", "env.num_envs=8",
           "policy.collect.n_steps=8", "evaluator.n_episodes=2", "policy.learn.batch_size=64",
           "env.kwargs.opponent=ppo",
           f"env.kwargs.opponent_kwargs.ckpt={aircombat_ckpt}"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "run" / "result.json").is_file()
