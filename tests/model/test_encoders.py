"""policy.model.encoder: the MLP and CNN encoders, alone and under the recurrent core."""

import pytest
import torch

from ding_lite.config.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.model.build import MODEL_OPTIONS, build_model
from ding_lite.model.encoders import CNNEncoder, MLPEncoder, build_encoder

GRID = (5, 7, 7)
SMALL_CNN = dict(encoder="cnn", cnn_channels=[4, 8], cnn_kernel=3, hidden_sizes=[16])


def test_cnn_shrinks_the_window_by_each_kernel_and_ends_in_the_hidden_size():
    enc = build_encoder("cnn", GRID, [16], "relu", True, [4, 8], 3)
    assert isinstance(enc, CNNEncoder) and enc.out_dim == 16
    assert enc.mlp[0].in_features == 8 * 3 * 3  # 7 -> 5 -> 3
    assert enc.encode(torch.randn(6, *GRID)).shape == (6, 16)
    flat = build_encoder("mlp", GRID, [], "tanh", True, [4, 8], 3)
    assert isinstance(flat, MLPEncoder) and flat.out_dim == 5 * 7 * 7
    assert flat.encode(torch.randn(2, *GRID)).shape == (2, 5 * 7 * 7)


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("core", ["none", "lstm", "gru"])
def test_cnn_actor_critic_with_and_without_core_and_shared_trunk(core, share):
    model = build_model(GRID, Discrete(5), **SMALL_CNN, core=core, core_size=8, share_encoder=share)
    assert isinstance(model.actor_encoder, CNNEncoder)
    assert (model.critic_encoder is None) == share
    obs = torch.randn(12, *GRID)
    if core == "none":
        dist, value = model(obs)
        action, logp, _ = model.act(obs)
    else:  # 3 segments of 4 steps, then one step of 3 rows
        state = model.initial_state(3)
        starts = torch.zeros(12, dtype=torch.bool)
        dist, value = model(obs, state, starts)
        action, logp, _, after = model.step(obs[:3], state, starts[:3])
        assert after.shape == state.shape == (3, model.state_size)
    assert dist.logits.shape == (12, 5) and value.shape == (12,)
    (dist.entropy().mean() + value.mean()).backward()
    convs = model.actor_encoder.convs
    assert all(conv.weight.grad is not None for conv in convs)


def test_normalized_observations_go_through_the_cnn():
    model = build_model(GRID, Discrete(5), **SMALL_CNN, obs_norm=True)
    raw = 3.0 + 2.0 * torch.randn(64, *GRID)
    model.obs_rms.merge(model.obs_rms.summarize(raw))
    normed = model.normalize_obs(raw)
    assert normed.shape == raw.shape and abs(normed.mean().item()) < 0.1
    assert model(normed)[1].shape == (64,)


def test_cnn_on_a_flat_observation_names_the_key_and_the_shape():
    with pytest.raises(
        ValueError, match=r"encoder='cnn' needs observations of shape \[C, H, W\], got \[4\]"
    ):
        build_model((4,), Discrete(2), encoder="cnn")
    with pytest.raises(ValueError, match="cnn_kernel"):
        build_model((2, 3, 3), Discrete(2), encoder="cnn", cnn_channels=[4, 4], cnn_kernel=3)
    with pytest.raises(ValueError, match="unknown policy.model.encoder 'conv'; known: mlp, cnn"):
        build_model(GRID, Discrete(2), encoder="conv")


def test_mlp_encoder_keeps_the_old_parameter_names_and_options_are_known():
    model = build_model((3, 2), Discrete(2), hidden_sizes=[8], share_encoder=False)
    names = set(model.state_dict())
    assert {"actor_encoder.0.weight", "critic_encoder.0.weight"} <= names
    assert {"encoder", "cnn_channels", "cnn_kernel"} <= set(MODEL_OPTIONS)
    cfg = compile_config("grid_ppo")
    assert cfg.policy.model.encoder == "cnn" and cfg.policy.model.core == "lstm"
    assert compile_config("cartpole_ppo").policy.model.encoder == "mlp"
