"""The advantage-estimator registry."""

import pytest
import torch

from ding_lite.rl_utils import adv_estimator as registry
from ding_lite.rl_utils import (
    gae_with_returns,
    get_adv_estimator,
    list_adv_estimators,
    register_adv_estimator,
)


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def test_builtins():
    assert {"gae", "gae_no_norm"} <= set(list_adv_estimators())
    assert get_adv_estimator("gae").normalize is True
    assert get_adv_estimator("gae_no_norm").normalize is False
    assert get_adv_estimator("gae").fn is gae_with_returns
    x = torch.ones(3, 2)
    adv, ret = get_adv_estimator("gae_no_norm").fn(x, x, x, x.bool(), x.bool(), 0.99, 0.95)
    assert adv.shape == ret.shape == (3, 2)


def test_unknown_name_lists_known_names():
    with pytest.raises(KeyError) as err:
        get_adv_estimator("gea")
    assert isinstance(err.value, ValueError)
    assert "'gea'" in str(err.value) and "gae, gae_no_norm" in str(err.value)


def test_register_twice_needs_force(clean_registry):
    def td0(rewards, values, next_values, terminated, dones, gamma, lam):
        adv = rewards + gamma * next_values * (1 - terminated.float()) - values
        return adv, adv + values

    est = register_adv_estimator("td0", td0, normalize=False)
    assert get_adv_estimator("td0") is est and est.name == "td0"
    with pytest.raises(ValueError, match="already registered"):
        register_adv_estimator("td0", td0, normalize=True)
    assert register_adv_estimator("td0", td0, normalize=True, force=True).normalize is True
    assert get_adv_estimator("td0").normalize is True


def test_register_rejects_bad_arguments(clean_registry):
    with pytest.raises(ValueError, match="non-empty"):
        register_adv_estimator("", gae_with_returns, normalize=True)
    with pytest.raises(ValueError, match="callable"):
        register_adv_estimator("x", 3, normalize=True)
