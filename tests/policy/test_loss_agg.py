"""policy.learn.loss_agg_mode: sequences found where the issue says (segments cut at episode
starts, or episodes), each mode's weights giving its aggregate, and the update's means
weighed by them."""

from __future__ import annotations

import pytest
import torch
from test_advantages import B, T, _rollout

from ding_lite.config import compile_config
from ding_lite.entry.run.options import RunOptions, compile_run_config
from ding_lite.policy.ppo.advantages import AdvantageStep, as_rows
from ding_lite.policy.ppo.batches import Minibatch
from ding_lite.policy.ppo.terms import MinibatchPass
from ding_lite.rl_utils import ClipRanges, get_adv_estimator, get_policy_loss
from ding_lite.rl_utils.loss_agg import (
    LOSS_AGG_MODES,
    agg_weights,
    lengths_by_key,
    sequence_lengths,
    weighted_mean,
)
from ding_lite.utils.errors import ConfigError


def _by_hand(losses: list[torch.Tensor], mode: str, norm_len: float) -> float:
    """A mode's aggregate written out over explicit sequences."""
    if mode == "token-mean":
        return float(torch.cat(losses).mean())
    if mode == "seq-mean-token-mean":
        per = [s.mean() for s in losses]
    elif mode == "seq-mean-token-sum":
        per = [s.sum() for s in losses]
    else:
        per = [s.sum() / norm_len for s in losses]
    return float(torch.stack(per).mean())


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
def test_each_mode_weights_steps_so_the_weighted_mean_is_its_aggregate(mode):
    gen = torch.Generator().manual_seed(0)
    lengths = [3, 1, 5, 2, 4]
    losses = [torch.rand(n, generator=gen) for n in lengths]
    starts = torch.cat([torch.arange(n) == 0 for n in lengths])
    seq_len = sequence_lengths(starts)
    assert seq_len.tolist() == [float(n) for n in lengths for _ in range(n)]
    weight = agg_weights(seq_len, mode, norm_len=6)
    got = float(weighted_mean(torch.cat(losses), weight))
    assert got == pytest.approx(_by_hand(losses, mode, 6), rel=1e-6)
    assert (weight is None) == (mode == "token-mean")


def test_sum_norm_divides_by_the_longest_sequence_without_a_length():
    seq_len = torch.tensor([2.0, 2.0, 4.0, 4.0, 4.0, 4.0])
    x = torch.ones(6)
    assert float(weighted_mean(x, agg_weights(seq_len, "seq-mean-token-sum-norm"))) == 0.75


def test_an_unknown_mode_is_one_line():
    with pytest.raises(ValueError, match="unknown loss_agg_mode 'seq-sum'; known: token-mean"):
        agg_weights(torch.ones(3), "seq-sum")


def test_episodes_need_not_be_consecutive_rows():
    assert lengths_by_key(torch.tensor([4, 4, 9, 4, 1])).tolist() == [3, 3, 1, 3, 1]


def test_a_step_level_batch_cuts_its_segments_at_episode_starts():
    step = AdvantageStep(
        get_adv_estimator("gae"), gamma=0.9, lam=0.9, n_steps=T, horizon=2, sequences=True
    )
    # Copy 0 ends an episode at step 0, copy 1 at step 2, the others never (T = 4, h = 2).
    batch, _ = step(_rollout({0: [0], 1: [2]}, [0, 0, 0, 0]), None)
    seq_len = batch["seq_len"]
    assert seq_len.shape == (T * B,)
    # Rows are segment by segment: copy b's k-th segment is rows (b * 2 + k) * 2 onward.
    expected = torch.full((T, B), 2.0)
    expected[0:2, 0] = 1.0  # copy 0's first segment: step 0 ends an episode, step 1 starts one
    assert torch.equal(seq_len, as_rows(expected, 2))


def test_an_episode_level_batch_has_one_sequence_per_episode():
    step = AdvantageStep(
        get_adv_estimator("reinforce_pp"), gamma=1.0, lam=1.0, n_steps=T, horizon=1,
        sequences=True,
    )  # fmt: skip
    batch, _ = step(_rollout({0: [1, 3], 1: [2], 2: [3]}, [0, 0, 0, 0]), None)
    # Copy 0: episodes of 2 and 2 steps, copy 1: 3 steps, copy 2: 4 steps.
    assert sorted(batch["seq_len"].tolist()) == [2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]
    assert (
        "seq_len"
        not in AdvantageStep(
            get_adv_estimator("reinforce_pp"), gamma=1.0, lam=1.0, n_steps=T, horizon=1
        )(_rollout({0: [1]}, [0, 0, 0, 0]), None)[0]
    )


class _Model(torch.nn.Module):
    """A fixed categorical policy and a value per observation, for one minibatch pass."""

    def __init__(self) -> None:
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor([0.3, -0.2]))
        self.v = torch.nn.Parameter(torch.tensor(0.5))

    def forward(self, obs):
        from ding_lite.model.dists import CategoricalDist

        logits = self.logits.expand(obs.shape[0], 2) * obs
        return CategoricalDist(logits), self.v * obs[:, 0]


def test_the_value_and_entropy_means_follow_the_weights():
    n = 6
    obs = torch.arange(1.0, n + 1).unsqueeze(1)
    mb = dict(
        obs=obs,
        action=torch.zeros(n, dtype=torch.long),
        logp=torch.full((n,), -0.7),
        value=torch.zeros(n),
        ret=torch.linspace(-1, 1, n),
        adv=torch.ones(n),
    )
    weight = agg_weights(torch.tensor([2.0, 2.0, 1.0, 3.0, 3.0, 3.0]), "seq-mean-token-mean")
    clip = ClipRanges(0.2, None, None, 3.0, 1.0)
    common = dict(clip=clip, v_clip=None, ref_model=None, policy_loss=get_policy_loss("ppo_clip"))
    plain = MinibatchPass(_Model(), Minibatch(**mb), **common)
    weighted = MinibatchPass(_Model(), Minibatch(**mb, weight=weight), **common)
    v_steps = 0.5 * (plain.newvalue.detach() - mb["ret"]).square()
    assert float(weighted.v_loss.detach()) == pytest.approx(float((v_steps * weight).mean()))
    assert float(plain.v_loss.detach()) == pytest.approx(float(v_steps.mean()))
    ent = plain.dist.entropy().detach()
    assert float(weighted.entropy.detach()) == pytest.approx(float((ent * weight).mean()))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["policy.learn.loss_agg_mode=seq-sum"], "loss_agg_mode must be one of token-mean"),
        (
            ["policy.learn.loss_agg_mode=seq-mean-token-mean"],
            "bptt_horizon=1 makes every sequence one step",
        ),
    ],
)
def test_a_mode_without_sequences_is_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        compile_run_config("cartpole_ppo", RunOptions(overrides=overrides))
    assert "\n" not in str(err.value)


def test_a_recurrent_run_trains_with_each_per_sequence_mode(tmp_path):
    from ding_lite import serial_pipeline

    for mode in LOSS_AGG_MODES[1:]:
        cfg = compile_config(
            "cartpole_lstm_ppo",
            {
                "policy": {"learn": {"loss_agg_mode": mode}},
                "max_train_iter": 2,
                "exp_dir": str(tmp_path / mode),
            },
        )
        result = serial_pipeline(cfg)
        assert result.result["train_iter"] == 2
