"""KL estimators from sampled actions' log-probs (k1, abs, k2, k3; verl's kl, abs, mse,
low_var_kl) for the KL loss term and the KL in the reward."""

from __future__ import annotations

import math

import pytest
import torch

from ding_lite.rl_utils import get_kl_estimator, list_kl_estimators, register_kl_estimator
from ding_lite.rl_utils.kl_estimators import KL_ESTIMATOR_REGISTRY
from ding_lite.utils.registry import RegistryError


def test_each_estimate_by_hand():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    r = math.log(0.25) - math.log(0.5)  # log(ref / p) = -log 2
    assert get_kl_estimator("k1")(logp, ref).item() == pytest.approx(-r)
    assert get_kl_estimator("abs")(ref, logp).item() == pytest.approx(-r)  # |r| either way
    assert get_kl_estimator("k2")(logp, ref).item() == pytest.approx(0.5 * r * r)
    assert get_kl_estimator("k3")(logp, ref).item() == pytest.approx(math.exp(r) - r - 1)
    for alias, name in (("kl", "k1"), ("mse", "k2"), ("low_var_kl", "k3")):
        assert get_kl_estimator(alias) is get_kl_estimator(name)
    # k3 is clamped as verl clamps it: a sample far more likely under the reference.
    assert get_kl_estimator("k3")(torch.tensor([-30.0]), torch.tensor([0.0])).item() == 10.0
    with pytest.raises(ValueError, match="needs both action distributions"):
        get_kl_estimator("full")(logp, ref)


def test_k1_and_k3_are_unbiased_and_k3_is_never_negative():
    p = torch.tensor([0.7, 0.2, 0.1])
    q = torch.tensor([0.3, 0.3, 0.4])
    exact = float((p * (p / q).log()).sum())
    g = torch.Generator().manual_seed(0)
    actions = torch.multinomial(p, 200_000, replacement=True, generator=g)
    logp, ref = p.log()[actions], q.log()[actions]
    k1, k3 = get_kl_estimator("k1")(logp, ref), get_kl_estimator("k3")(logp, ref)
    assert k1.mean().item() == pytest.approx(exact, rel=0.02)
    assert k3.mean().item() == pytest.approx(exact, rel=0.02)
    assert (k1 < 0).any() and (k3 >= 0).all() and k3.std() < k1.std()  # the low variance
    assert (get_kl_estimator("k2")(logp, ref) >= 0).all()


def test_a_users_estimator_registers_and_unknown_names_are_refused(monkeypatch):
    monkeypatch.setattr(
        "ding_lite.rl_utils.kl_estimators.KL_ESTIMATOR_REGISTRY", KL_ESTIMATOR_REGISTRY.copy()
    )
    register_kl_estimator("square", lambda logp, ref: (logp - ref) ** 2)
    assert "square" in list_kl_estimators()
    assert get_kl_estimator("square")(torch.tensor([1.0]), torch.tensor([0.0])).item() == 1.0
    with pytest.raises(RegistryError, match="unknown KL estimator 'k4'"):
        get_kl_estimator("k4")
