"""ReMax: each group's first env copy acts greedily; the others' advantage is their return
minus that greedy return; the greedy steps are a baseline, never trained on."""

from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.policy.ppo.advantages import AdvantageStep
from ding_lite.rl_utils import get_adv_estimator
from ding_lite.rl_utils.critic_free import remax
from ding_lite.worker.collector import SerialCollector


def test_remax_is_registered_as_a_greedy_grouped_estimator():
    est = get_adv_estimator("remax")
    assert est.episodic and est.grouped and est.greedy_baseline and not est.normalize


def test_remax_on_hand_built_groups():
    # Group 0: greedy episode (return 5), sampled ones (7 and 3). Group 1: no greedy one.
    lengths = [2, 3, 1, 2]
    rewards = torch.tensor([2.0, 3.0, 1.0, 3.0, 3.0, 3.0, 1.0, 1.0])
    dones = torch.zeros(8, dtype=torch.bool)
    dones[torch.tensor(lengths).cumsum(0) - 1] = True
    groups = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1])
    greedy = torch.tensor([True, True, False, False, False, False, False, False])
    adv, ret = remax(rewards, dones, groups, 1.0, greedy=greedy)
    assert adv.tolist() == [0.0, 0.0, 2.0, 2.0, 2.0, -2.0, 0.0, 0.0]
    assert ret.tolist() == [5.0, 3.0, 7.0, 6.0, 3.0, 3.0, 2.0, 1.0]


def test_the_advantage_step_drops_the_greedy_episodes():
    T, B = 4, 4  # groups of 2 copies: {0, 1} and {2, 3}; copies 0 and 2 act greedily
    done = torch.zeros(T, B, dtype=torch.bool)
    done[3] = True  # every copy ends an episode at step 3
    rows = lambda x: x.flatten(0, 1)  # noqa: E731
    rollout = {
        "obs": torch.arange(T * B, dtype=torch.float32).unsqueeze(1),
        "action": torch.zeros(T * B, dtype=torch.long),
        "logp": torch.zeros(T * B),
        "value": torch.zeros(T * B),
        "reward": rows(torch.tensor([1.0, 2.0, 3.0, 0.0]).expand(T, B)),  # per copy
        "next_value": torch.zeros(T * B),
        "terminated": rows(done),
        "done": rows(done),
        "episode": torch.zeros(T * B, dtype=torch.long),
        "group": rows(torch.tensor([0, 0, 1, 1]).expand(T, B)),
        "stream": torch.zeros(T * B, dtype=torch.long),
        "step": rows(torch.arange(T).unsqueeze(1).expand(T, B)),
    }
    step = AdvantageStep(get_adv_estimator("remax"), gamma=1.0, lam=1.0, n_steps=T, horizon=1)
    batch, _ = step(rollout, None)
    copies = (batch["obs"].squeeze(1).long() % B).tolist()
    assert sorted(set(copies)) == [1, 3] and len(copies) == 2 * T
    # Copy 1 returned 8 against its greedy copy 0's 4; copy 3 returned 0 against copy 2's 12.
    assert batch["adv"].tolist() == [4.0] * T + [-12.0] * T


@pytest.mark.parametrize("estimator", ["remax", "grpo"])
def test_only_each_groups_first_copy_acts_greedily(estimator):
    cfg = compile_config("cartpole_grpo", {"policy": {"learn": {"adv_estimator": estimator}}})
    env = build_env(cfg, cfg.env.num_envs, "cpu", 0)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    collector = SerialCollector.from_config(env, policy, cfg, seed=0)
    rollout = collector.collect()
    model, B = policy.model, cfg.env.num_envs
    with torch.no_grad():
        mode, _, _ = model.act(rollout["obs"], deterministic=True)
    greedy_rows = (torch.arange(rollout["obs"].shape[0]) % B) % cfg.env.reset_group_size == 0
    acted_mode = rollout["action"] == mode
    if estimator == "remax":
        assert acted_mode[greedy_rows].all()
    else:
        assert not acted_mode[greedy_rows].all()
    assert not acted_mode[~greedy_rows].all()  # the others sample
    collector.close()
