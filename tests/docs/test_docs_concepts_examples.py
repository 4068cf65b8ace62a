"""Runs the code examples of docs/concepts.rst."""

from __future__ import annotations

import torch
from helpers import TINY

from ding_lite import serial_pipeline
from ding_lite.rl_utils import gae_with_returns, get_adv_estimator
from ding_lite.rl_utils.adv_estimator import ADV_ESTIMATOR_REGISTRY


def test_load_weights_example(tmp_path, monkeypatch, docs_code):
    monkeypatch.chdir(tmp_path)
    serial_pipeline("cartpole_ppo", seed=0, overrides=TINY, max_train_iter=2)
    assert (tmp_path / "cartpole_ppo" / "ckpt").is_dir()  # where the example looks
    namespace = {"__name__": "docs_load_weights_example"}
    exec(docs_code("concepts.rst", "load-weights-example"), namespace)
    assert namespace["policy"].train_iter == 2
    assert namespace["policy"].checkpoint.name == "best.pt"  # the run's final evaluation
    assert namespace["action"].shape == (1,)


def test_adv_estimator_example(docs_code):
    namespace = {"__name__": "docs_adv_estimator_example"}
    try:
        exec(docs_code("algorithms.rst", "adv-estimator-example"), namespace)
        est = get_adv_estimator("monte_carlo")
        assert est.normalize
        g = torch.Generator().manual_seed(0)
        T, B = 5, 3
        rewards, values, next_values = (torch.randn(T, B, generator=g) for _ in range(3))
        terminated = torch.zeros(T, B, dtype=torch.bool)
        dones = torch.zeros(T, B, dtype=torch.bool)
        dones[2, 1] = terminated[2, 1] = True
        adv, ret = est.fn(rewards, values, next_values, terminated, dones, 0.9, 0.5)
        ref_adv, ref_ret = gae_with_returns(
            rewards, values, next_values, terminated, dones, 0.9, 1.0
        )
        assert torch.allclose(adv, ref_adv) and torch.allclose(ret, ref_ret)
    finally:
        if "monte_carlo" in ADV_ESTIMATOR_REGISTRY.names():
            ADV_ESTIMATOR_REGISTRY.unregister("monte_carlo")


def test_policy_loss_example_trains_from_a_config_file(tmp_path, docs_code):
    """The page's config file, as printed: it registers its loss, names it, and trains;
    the loss's own metric reaches tensorboard."""
    from ding_lite import serial_pipeline
    from ding_lite.rl_utils import POLICY_LOSS_REGISTRY
    from ding_lite.utils.log import read_tb_scalars

    config_file = tmp_path / "ratio_pg.py"
    config_file.write_text(docs_code("algorithms.rst", "policy-loss-example"))
    run = tmp_path / "run"
    try:
        trained = serial_pipeline(
            str(config_file),
            overrides=["policy.collect.n_steps=32", "evaluator.eval_freq=0"],
            exp_dir=str(run),
            max_train_iter=3,
            verbose=0,
        )
    finally:
        if "ratio_pg" in POLICY_LOSS_REGISTRY.names():
            POLICY_LOSS_REGISTRY.unregister("ratio_pg")
    assert trained.result["train_iter"] == 3
    (events,) = (run / "tb").glob("events*")
    scalars = read_tb_scalars(events)
    assert len(scalars["losses/ratio_max"]) == 3 and len(scalars["losses/clipfrac"]) == 3
    assert all(0.5 < value < 10.0 for _, value in scalars["losses/ratio_max"])
