"""State-dependent exploration (policy.model.sde): noise held between draws, the Gaussian
it implies, gradients, and the config checks around it."""

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Box, Discrete
from ding_lite.model import GaussianDist, build_model
from ding_lite.model.sde import SdeGaussianDist, SdeNoise
from ding_lite.utils.errors import ConfigError

OBS_DIM, B = 4, 6
SPACE = Box((-2.0, -2.0), (2.0, 2.0))


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def sde_model(freq=3, log_std_init=-1.0):
    return build_model(
        OBS_DIM, SPACE, hidden_sizes=[16, 16], sde=True, sde_sample_freq=freq,
        log_std_init=log_std_init,
    )  # fmt: skip


def test_the_log_std_is_a_features_by_actions_matrix():
    model = sde_model()
    assert model.log_std is None
    assert model.sde_log_std.shape == (16, 2)
    assert torch.all(model.sde_log_std == -1.0)
    assert "sde_log_std" in model.state_dict() and "log_std" not in model.state_dict()


def test_noise_is_kept_for_sample_freq_draws_then_drawn_anew():
    model = sde_model(freq=3)
    obs = torch.randn(B, OBS_DIM)
    actions = [model.act(obs)[0] for _ in range(6)]
    # The same states get the same push while the matrices last (3 draws), then another.
    assert torch.equal(actions[0], actions[1]) and torch.equal(actions[1], actions[2])
    assert not torch.allclose(actions[2], actions[3])
    assert torch.equal(actions[3], actions[4]) and torch.equal(actions[4], actions[5])
    # Each env copy (row) has its own matrix: equal observations, different actions.
    same = obs[:1].expand(B, OBS_DIM)
    spread = model.act(same)[0]
    assert not torch.allclose(spread[0], spread[1])


def test_deterministic_actions_are_the_mean_and_draw_no_noise():
    model = sde_model(freq=1)
    obs = torch.randn(B, OBS_DIM)
    first = model.act(obs, deterministic=True)[0]
    assert torch.equal(first, model.get_dist(obs).mean)
    assert torch.equal(first, model.act(obs, deterministic=True)[0])
    assert model.sde_noise._sets == {}


def test_the_distribution_is_the_gaussian_with_variance_phi_squared_sigma_squared():
    model = sde_model()
    obs = torch.randn(B, OBS_DIM)
    dist = model.get_dist(obs)
    assert isinstance(dist, SdeGaussianDist)
    latent = model._encode(model.actor_encoder, obs)
    variance = latent.square() @ model.sde_log_std.exp().square() + 1e-6
    reference = GaussianDist(dist.mean, 0.5 * variance.log())
    action, logp, _ = model.act(obs)
    torch.testing.assert_close(logp, reference.log_prob(action))
    torch.testing.assert_close(dist.entropy(), reference.entropy())
    # Over many fresh matrices, the samples of one state have that variance.
    noise = SdeNoise(1)
    one = SdeGaussianDist(dist.mean[:1].expand(4000, 2), latent[:1].expand(4000, -1),
                          model.sde_log_std.exp(), noise)  # fmt: skip
    samples = one.sample()
    torch.testing.assert_close(samples.var(0), variance[0], rtol=0.1, atol=1e-4)


def test_gradients_reach_the_log_std_matrix_but_not_the_features_through_the_std():
    model = sde_model()
    obs = torch.randn(B, OBS_DIM)
    dist = model.get_dist(obs)
    dist.entropy().sum().backward()  # the entropy depends on the std alone
    assert model.sde_log_std.grad is not None and model.sde_log_std.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.actor_encoder.parameters())


def test_sde_needs_a_box_and_excludes_a_std_head():
    with pytest.raises(ValueError, match="needs a Box action space"):
        build_model(OBS_DIM, Discrete(3), sde=True)
    with pytest.raises(ConfigError, match="exclude each other"):
        compile_config(
            "pendulum_ppo", ["policy.model.sde=true", "policy.model.state_dependent_std=true"]
        )
    with pytest.raises(ConfigError, match="async_factor=1"):
        compile_config("pendulum_ppo", ["policy.model.sde=true", "collector.async_factor=2"])
    with pytest.raises(ConfigError, match="sde_sample_freq"):
        compile_config("pendulum_ppo", ["policy.model.sde=true", "policy.model.sde_sample_freq=0"])


def test_a_serial_run_with_sde_trains_saves_and_predicts(tmp_path):
    from ding_lite import serial_pipeline
    from ding_lite.entry.trained.predict import load_policy

    overrides = ["policy.model.sde=true", "policy.model.log_std_init=-1.5"]
    run = serial_pipeline(
        "pendulum_ppo", verbose=0, max_train_iter=3, exp_dir=str(tmp_path / "run"),
        overrides=overrides,
    )  # fmt: skip
    assert run.result["skipped_steps"] == 0
    assert torch.isfinite(torch.tensor(run.result["eval_return_mean"]))
    trained = load_policy(tmp_path / "run")
    obs = torch.zeros(2, 3)
    assert trained.predict(obs).shape == (2, 1)
    assert trained.model.sde_log_std.shape == (64, 1)
