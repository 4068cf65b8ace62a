"""The learner's refresh of a rollout before the advantages (``ding_lite.policy.ppo.prepare``):
values recomputed with its own critic, the proximal log-probs for off-policy corrections."""

from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.run.options import RunOptions, compile_run_config
from ding_lite.envs import create_env
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector import SerialCollector


def _setup(*overrides: str):
    small = ["env.num_envs=3", "policy.collect.n_steps=16"]
    cfg = compile_config("pendulum_ppo", overrides=[*small, *overrides])
    env = create_env("pendulum", 3, seed=0)
    torch.manual_seed(0)
    policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
    return cfg, policy, SerialCollector.from_config(env, policy, cfg, seed=0)


def test_recomputed_values_are_the_learner_critics():
    _, policy, collector = _setup("policy.learn.recompute_values=true")
    rollout = collector.collect()
    assert rollout["next_obs"].shape == rollout["obs"].shape
    prep = policy._prep
    same = prep.refresh(rollout)  # the collector acted with these very weights
    assert "next_obs" not in same
    torch.testing.assert_close(same["value"], rollout["value"], rtol=0, atol=1e-6)
    torch.testing.assert_close(same["next_value"], rollout["next_value"], rtol=0, atol=1e-6)
    with torch.no_grad():  # a newer critic: its values, not the collector's
        for p in policy.model.parameters():
            p.add_(0.1)
    newer = prep.refresh(rollout)
    with torch.no_grad():
        want = policy.model.get_value(rollout["obs"])
        want_next = policy.model.get_value(rollout["next_obs"])
    assert torch.equal(newer["value"], want) and torch.equal(newer["next_value"], want_next)
    assert not torch.allclose(newer["value"], rollout["value"])


def test_nothing_asked_nothing_recomputed():
    _, policy, collector = _setup()
    rollout = collector.collect()
    assert "next_obs" not in rollout
    refreshed = policy._prep.refresh(rollout)
    assert refreshed.keys() == rollout.keys()
    assert all(refreshed[k] is rollout[k] for k in rollout)
    batch, _ = policy._prep(rollout)
    assert "logp_prox" not in batch


def test_recompute_values_needs_a_feed_forward_policy_with_a_critic():
    opts = RunOptions(overrides=["policy.learn.recompute_values=true", "policy.model.core=lstm"])
    with pytest.raises(ConfigError, match="recompute_values needs a feed-forward policy"):
        compile_run_config("pendulum_ppo", opts)
    ok = compile_run_config(
        "pendulum_ppo", RunOptions(overrides=["policy.learn.recompute_values=true"])
    )
    assert ok.policy.learn.recompute_values is True


@pytest.mark.parametrize(
    "corrections",
    [
        ["policy.learn.adv_estimator=vtrace"],
        ["policy.learn.policy_loss=decoupled"],
        ["policy.learn.adv_estimator=vtrace", "policy.learn.policy_loss=decoupled"],
    ],
)
def test_corrections_on_the_behaviour_policys_own_data_change_nothing(corrections):
    """Collected by the very weights being updated, a rollout gives vtrace's and decoupled's
    updates what GAE's and ppo_clip's give (the learner's log-probs equal the collector's
    up to float rounding)."""
    _, plain, collector = _setup()
    rollout = collector.collect()
    _, corrected, _ = _setup(*corrections)
    corrected.model.load_state_dict(plain.model.state_dict())
    batch, _ = corrected._prep(rollout)
    assert ("logp_prox" in batch) == ("policy.learn.policy_loss=decoupled" in corrections)
    if "logp_prox" in batch:
        torch.testing.assert_close(batch["logp_prox"], rollout["logp"], rtol=0, atol=1e-6)
    want_batch, _ = plain._prep(rollout)
    # Unnormalized advantages reach tens (float32's step there is ~1e-5): relative too.
    torch.testing.assert_close(batch["adv"], want_batch["adv"], rtol=1e-6, atol=1e-5)
    torch.manual_seed(1)
    want = plain.learn_mode.forward(rollout)
    torch.manual_seed(1)
    got = corrected.learn_mode.forward(rollout)
    for key in ("policy_loss", "value_loss", "approx_kl", "grad_norm", "entropy"):
        assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), key
