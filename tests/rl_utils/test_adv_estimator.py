"""The advantage-estimator registry, a ding_lite.utils.registry.Registry."""

import pytest
import torch

from ding_lite.rl_utils import (
    AdvEstimator,
    gae_with_returns,
    get_adv_estimator,
    list_adv_estimators,
    register_adv_estimator,
)
from ding_lite.rl_utils import adv_estimator as module
from ding_lite.utils.registry import Registry


@pytest.fixture
def clean_registry(monkeypatch):
    """A copy of the registry, so what a test registers goes away with it."""
    monkeypatch.setattr(module, "ADV_ESTIMATOR_REGISTRY", module.ADV_ESTIMATOR_REGISTRY.copy())


def td0(rewards, values, next_values, terminated, dones, gamma, lam):
    adv = rewards + gamma * next_values * (1 - terminated.float()) - values
    return adv, adv + values


def test_builtins():
    assert isinstance(module.ADV_ESTIMATOR_REGISTRY, Registry)
    assert list_adv_estimators()[:2] == ["gae", "gae_no_norm"]
    assert get_adv_estimator("gae").normalize is True
    assert get_adv_estimator("gae_no_norm").normalize is False
    assert get_adv_estimator("gae").fn is gae_with_returns
    x = torch.ones(3, 2)
    adv, ret = get_adv_estimator("gae_no_norm").fn(x, x, x, x.bool(), x.bool(), 0.99, 0.95)
    assert adv.shape == ret.shape == (3, 2)


def test_unknown_name_suggests_the_closest_and_lists_known_names():
    with pytest.raises(KeyError) as err:
        get_adv_estimator("gae_no_nrom")
    assert isinstance(err.value, ValueError)  # the CLI reports it as a config error
    message = str(err.value)
    assert message.startswith("unknown advantage estimator 'gae_no_nrom'")
    assert "(did you mean 'gae_no_norm'?)" in message and "known: gae, gae_no_norm" in message


def test_call_form_duplicate_needs_force(clean_registry):
    est = register_adv_estimator("td0", td0, normalize=False)
    assert get_adv_estimator("td0") is est
    assert (est.name, est.fn, est.normalize) == ("td0", td0, False)
    with pytest.raises(KeyError, match="'td0' is already registered"):
        register_adv_estimator("td0", td0, normalize=True)
    assert get_adv_estimator("td0") is est  # the failed call changed nothing
    replaced = register_adv_estimator("td0", td0, normalize=True, force=True)
    assert get_adv_estimator("td0") is replaced and replaced.normalize is True


def test_decorator_form_registers_and_returns_the_function(clean_registry):
    @register_adv_estimator("td0_dec", normalize=False)
    def td0_dec(rewards, values, next_values, terminated, dones, gamma, lam):
        return td0(rewards, values, next_values, terminated, dones, gamma, lam)

    assert callable(td0_dec) and not isinstance(td0_dec, AdvEstimator)
    est = get_adv_estimator("td0_dec")
    assert est.fn is td0_dec and est.normalize is False and est.name == "td0_dec"
    assert "td0_dec" in list_adv_estimators()
    with pytest.raises(KeyError, match="already registered"):
        register_adv_estimator("td0_dec")(td0)
    register_adv_estimator("td0_dec", force=True)(td0)
    assert get_adv_estimator("td0_dec").fn is td0 and get_adv_estimator("td0_dec").normalize


def test_register_rejects_bad_arguments(clean_registry):
    with pytest.raises(KeyError, match="non-empty"):
        register_adv_estimator("", gae_with_returns, normalize=True)
    with pytest.raises(TypeError, match="callable"):
        register_adv_estimator("x", 3, normalize=True)
    assert "x" not in list_adv_estimators()


def test_a_registered_estimator_drives_the_policy(clean_registry):
    from ding_lite.config import compile_config
    from ding_lite.envs.spaces import Discrete
    from ding_lite.policy import PPOPolicy

    est = register_adv_estimator("td0_policy", td0, normalize=False)
    cfg = compile_config("cartpole_ppo", ["policy.learn.adv_estimator=td0_policy"])
    policy = PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    assert policy.adv_estimator is est
    cfg = compile_config("cartpole_ppo", ["policy.learn.adv_estimator=td_0"])
    with pytest.raises(KeyError, match="unknown advantage estimator 'td_0'"):
        PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
