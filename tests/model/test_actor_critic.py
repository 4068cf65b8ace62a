"""ActorCritic heads, shapes and consistency between act() and get_dist()."""

import math

import pytest
import torch

from ding_lite.envs.spaces import Box, Discrete, Hybrid
from ding_lite.model import (
    ActorCritic,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    build_model,
)
from ding_lite.model.heads import HYBRID_MEAN_BOUND

OBS_DIM, B = 5, 7
SPACES = {
    "discrete": Discrete(3),
    "box": Box((-2.0, -2.0), (2.0, 2.0)),
    "hybrid": Hybrid(Box((-1.0, 0.0), (1.0, 10.0)), (2, 3)),
    "hybrid_equal_parts": Hybrid(Box((-1.0,), (1.0,)), (2, 2, 2)),
    "hybrid_no_parts": Hybrid(Box((-1.0, -1.0), (1.0, 1.0)), ()),
}
DIST_TYPES = {"discrete": CategoricalDist, "box": GaussianDist}


def action_shape(space):
    return (B,) if isinstance(space, Discrete) else (B, space.dim)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize(
    "cfg",
    [{}, {"share_encoder": True, "activation": "relu"}, {"hidden_sizes": ()}],
    ids=["default", "shared_relu", "linear"],
)
def test_shapes_and_act_consistency(name, cfg):
    space = SPACES[name]
    model = build_model(OBS_DIM, space, **cfg)
    obs = torch.randn(B, OBS_DIM)
    dist, value = model(obs)
    assert isinstance(dist, DIST_TYPES.get(name, HybridDist))
    assert value.shape == (B,)
    action, log_prob, act_value = model.act(obs)
    assert action.shape == action_shape(space)
    assert action.dtype == (torch.int64 if name == "discrete" else torch.float32)
    assert log_prob.shape == (B,) and not log_prob.requires_grad
    torch.testing.assert_close(log_prob, model.get_dist(obs).log_prob(action))
    torch.testing.assert_close(act_value, model.get_value(obs))
    assert dist.entropy().shape == (B,)
    assert dist.kl(model.get_dist(obs)).abs().max() < 1e-5

    mode, mode_logp, _ = model.act(obs, deterministic=True)
    torch.testing.assert_close(mode, dist.mode())
    torch.testing.assert_close(mode_logp, dist.log_prob(mode))

    new_logp, entropy, new_value = model.evaluate_actions(obs, action)
    torch.testing.assert_close(new_logp.detach(), log_prob)
    (new_logp.mean() + entropy.mean() + new_value.mean()).backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_hybrid_actions_inside_bounds():
    space = SPACES["hybrid"]
    model = build_model(OBS_DIM, space, log_std_init=1.0)
    action, _, _ = model.act(torch.randn(500, OBS_DIM))
    low, high = torch.tensor(space.continuous.low), torch.tensor(space.continuous.high)
    assert ((action[:, :2] >= low) & (action[:, :2] <= high)).all()
    assert set(action[:, 2].tolist()) <= {0.0, 1.0} and set(action[:, 3].tolist()) <= {0, 1, 2}


def test_zero_init_value():
    model = build_model(OBS_DIM, Discrete(2), zero_init_value=True)
    obs = torch.randn(B, OBS_DIM)
    assert torch.equal(model.get_value(obs), torch.zeros(B))
    assert torch.equal(model(obs)[1], torch.zeros(B))


def test_init_scales_and_log_std():
    model = build_model(OBS_DIM, SPACES["box"], log_std_init=-0.5)
    assert model.log_std is not None and torch.equal(model.log_std, torch.full((2,), -0.5))
    # Orthogonal init: W W^T = gain^2 I for a wide-enough matrix.
    w = model.policy_head.weight
    torch.testing.assert_close(w @ w.T, 1e-4 * torch.eye(2), atol=1e-6, rtol=0)
    w = model.actor_encoder[0].weight  # 64 x 5: columns orthogonal
    torch.testing.assert_close(w.T @ w, 2.0 * torch.eye(OBS_DIM), atol=1e-5, rtol=0)
    dist = model.get_dist(torch.randn(B, OBS_DIM))
    torch.testing.assert_close(dist.log_std, torch.full((2,), -0.5))

    sd = build_model(OBS_DIM, SPACES["box"], log_std_init=-0.5, state_dependent_std=True)
    assert sd.log_std is None
    dist = sd.get_dist(torch.zeros(B, OBS_DIM))
    assert dist.log_std.shape == (B, 2)
    torch.testing.assert_close(dist.log_std, torch.full((B, 2), -0.5))


def test_multi_dim_observations_are_flattened():
    model = build_model((2, 3), Discrete(2))
    obs = torch.randn(B, 2, 3)
    dist, value = model(obs)
    assert value.shape == (B,) and model.get_value(obs).shape == (B,)
    assert model.act(obs)[0].shape == (B,)


def test_state_dict_roundtrip():
    space = SPACES["hybrid"]
    a, b = build_model(OBS_DIM, space), build_model(OBS_DIM, space)
    b.load_state_dict(a.state_dict())
    obs = torch.randn(B, OBS_DIM)
    torch.testing.assert_close(a.get_value(obs), b.get_value(obs))
    torch.testing.assert_close(a.get_dist(obs).mode(), b.get_dist(obs).mode())


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((OBS_DIM, Discrete(2)), {"activation": "gelu"}, "unknown activation 'gelu'; known"),
        ((OBS_DIM, "discrete"), {}, "unsupported action space str; supported"),
        ((OBS_DIM, Discrete(2)), {"hiden_sizes": (8,)}, "unknown model option"),
        ((OBS_DIM, Hybrid(Box((-math.inf,), (1.0,)), (2,))), {}, "finite"),
        ((OBS_DIM, Box((), ())), {}, "no dimensions"),
        ((0, Discrete(2)), {}, "empty"),
    ],
)
def test_build_model_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_model(*args, **kwargs)


def test_actor_critic_is_a_module():
    model = ActorCritic(OBS_DIM, Discrete(2), hidden_sizes=(16,))
    assert isinstance(model, torch.nn.Module)
    names = {n for n, _ in model.named_parameters()}
    assert "critic_encoder.0.weight" in names and "policy_head.weight" in names


def test_hybrid_mean_is_bounded_so_saturated_actions_keep_finite_log_probs():
    torch.manual_seed(0)
    model = ActorCritic(4, Hybrid(Box((-1.0,), (1.0,)), (2,)), hidden_sizes=[8])
    with torch.no_grad():
        model.policy_head.bias[0] = 1_000.0  # a pre-squash mean far into saturation
        model.policy_head.bias[1] = -4.0  # and a narrow std
    obs = torch.randn(256, 4)
    dist = model.get_dist(obs)
    assert (dist.gauss.mean.abs() <= HYBRID_MEAN_BOUND).all()
    action = dist.sample()
    logp = dist.log_prob(action)
    assert torch.isfinite(logp).all() and (logp > -100).all()
    # A slightly different policy still gives a finite PPO ratio on these actions.
    with torch.no_grad():
        model.policy_head.bias[0] = 900.0
    ratio = torch.exp(model.get_dist(obs).log_prob(action) - logp)
    assert torch.isfinite(ratio).all()
