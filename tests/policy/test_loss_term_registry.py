"""A new loss term is one registration: summed into the loss, logged, and gone again when
unregistered; the settings read every key of their config sections."""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.config.defaults import DEFAULT_CONFIG
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo import PPOSettings, register_loss_term, unregister_loss_term
from ding_lite.policy.ppo.batches import minibatches
from ding_lite.policy.ppo.terms import (
    LOSS_TERM_REGISTRY,
    MinibatchPass,
    TermWeights,
    loss_terms,
    total_loss,
)

SMALL = ["policy.model.hidden_sizes=[8]", "policy.learn.batch_size=16", "policy.learn.n_epochs=1"]


def _policy() -> PPOPolicy:
    torch.manual_seed(0)
    cfg = compile_config("cartpole_ppo", SMALL)
    return PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))


def _batch(policy: PPOPolicy, n: int = 32) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(n, 4, generator=g)
    action, logp, value = policy.collect_mode.forward(obs)
    adv = torch.randn(n, generator=g)
    return {"obs": obs, "action": action, "logp": logp, "value": value, "adv": adv, "ret": adv}


def test_a_registered_term_is_summed_and_logged_until_unregistered():
    term = register_loss_term(
        "value_l2", lambda p: p.newvalue.square().mean(), weight=lambda w: 0.25
    )
    try:
        assert term.is_loss and term.log_as == "losses/value_l2"
        policy = _policy()
        data = _batch(policy)
        mb = next(minibatches(data, torch.arange(32), 16, normalize=False))
        p = MinibatchPass(
            policy.model,
            mb,
            clip=policy.settings.clip,
            v_clip=None,
            ref_model=None,
            policy_loss=policy.update.policy_loss,
        )
        terms = loss_terms(p)
        weights = TermWeights(policy.settings, value_only=False, entropy_weight=0.0, kl_coef=0.0)
        want = (
            terms["pg_loss"]
            - 0.0 * terms["entropy"]
            + policy.settings.value_weight * terms["v_loss"]
            + 0.25 * terms["value_l2"]
        )
        assert torch.equal(total_loss(terms, weights), want)
        assert policy.learn_mode.forward(data)["losses/value_l2"] > 0
    finally:
        unregister_loss_term("value_l2")
    assert "value_l2" not in LOSS_TERM_REGISTRY
    info = policy.learn_mode.forward(data)
    assert "losses/value_l2" not in info
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "kl_ref"):
        assert name in info


def test_a_term_without_a_weight_is_a_statistic():
    register_loss_term("value_sum", lambda p: p.newvalue.detach().sum())
    try:
        assert not LOSS_TERM_REGISTRY.get("value_sum").is_loss
        policy = _policy()
        data = _batch(policy)
        plain = _policy()
        torch.manual_seed(2)  # the minibatch order
        info = policy.learn_mode.forward(data)
        assert "losses/value_sum" in info
    finally:
        unregister_loss_term("value_sum")
    # Logged, never summed: the update is the one without it.
    torch.manual_seed(2)
    assert plain.learn_mode.forward(data)["policy_loss"] == info["policy_loss"]
    assert all(
        torch.equal(a, b)
        for a, b in zip(plain.model.parameters(), policy.model.parameters(), strict=True)
    )


def test_settings_read_every_key_of_their_sections():
    by_section: dict[str, set[str]] = {}
    for f in fields(PPOSettings):
        by_section.setdefault(f.metadata["section"], set()).add(f.name)
    for section, names in by_section.items():
        assert names == set(DEFAULT_CONFIG["policy"][section]), section


def test_a_partial_config_is_refused_by_name():
    cfg = compile_config("cartpole_ppo").policy
    del cfg.learn["clip_ratio_c"]
    with pytest.raises(KeyError, match="clip_ratio_c"):
        PPOSettings.from_cfg(cfg)
