"""The learner's advantage step: whole groups only, the rest held back; setup checks."""

from __future__ import annotations

import math

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.run.options import RunOptions, compile_run_config
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import create_policy
from ding_lite.policy.ppo.advantages import STALE_CALLS, AdvantageStep, as_rows, time_major
from ding_lite.rl_utils import get_adv_estimator, get_kl_estimator
from ding_lite.rl_utils.kl_control import KLController
from ding_lite.utils.errors import ConfigError

T, B = 4, 4  # steps per rollout, env copies; groups of 2: copies {0, 1} and {2, 3}


def _rollout(
    done_at: dict[int, list[int]], first_episode: list[int], index: int = 0, stream: int = 0
) -> dict[str, torch.Tensor]:
    """The ``index``-th rollout of T steps of B copies of a stream (rows time-major): reward
    1 per step, the copies' dones at the given steps, episode numbers counted from
    ``first_episode``."""
    done = torch.zeros(T, B, dtype=torch.bool)
    for b, steps in done_at.items():
        done[steps, b] = True
    episode = torch.tensor(first_episode).expand(T, B).clone()
    episode[1:] += torch.cumsum(done.long(), 0)[:-1]
    rows = lambda x: x.flatten(0, 1)  # noqa: E731
    return {
        "obs": torch.arange(T * B, dtype=torch.float32).unsqueeze(1),  # the row's number
        "action": torch.zeros(T * B, dtype=torch.long),
        "logp": torch.zeros(T * B),
        "value": torch.zeros(T * B),
        "reward": torch.ones(T * B),
        "next_value": torch.zeros(T * B),
        "terminated": rows(done),
        "done": rows(done),
        "episode": rows(episode),
        "group": rows(torch.tensor([0, 0, 1, 1]).expand(T, B)),
        "stream": torch.full((T * B,), stream),
        "step": rows(torch.arange(index * T, (index + 1) * T).unsqueeze(1).expand(T, B)),
    }


def _step(name: str = "grpo", **kwargs) -> AdvantageStep:
    return AdvantageStep(
        get_adv_estimator(name), gamma=1.0, lam=1.0, n_steps=T, horizon=1, **kwargs
    )


def test_only_complete_groups_are_trained_and_the_rest_waits_for_the_next_batch():
    step = _step()
    # copy 0 ends episodes at steps 1 and 3, copy 1 at step 2, copy 2 at step 3, copy 3 never.
    batch, info = step(_rollout({0: [1, 3], 1: [2], 2: [3]}, [0, 0, 0, 0]), None)
    # Ready: group 0's episode 0 (copy 0: rows of steps 0-1, copy 1: steps 0-2).
    assert sorted(batch["obs"].squeeze(1).tolist()) == [0, 1, 4, 5, 9]
    assert info["data/pending_steps"] == 11 == step.pending_steps
    # Returns 2 and 3: mean 2.5, std 0.707; copy 0's steps below, copy 1's above.
    adv = dict(zip(batch["obs"].squeeze(1).tolist(), batch["adv"].tolist(), strict=True))
    assert adv[0] == adv[4] == pytest.approx(-0.70711, abs=1e-4)
    assert adv[1] == adv[5] == adv[9] == pytest.approx(0.70711, abs=1e-4)
    assert set(batch) == {"obs", "action", "logp", "value", "adv", "ret"}
    saved = step.state_dict()

    # Next rollout: copy 1 ends episode 1 at step 0, copy 3 its episode 0 at step 1.
    second = _rollout({1: [0], 3: [1]}, [2, 1, 1, 0], index=1)
    second["obs"] += 100
    batch, info = step(second, None)
    got = sorted(batch["obs"].squeeze(1).tolist())
    # Group 0, episode 1: copy 0 (steps 2-3 before), copy 1 (step 3 before, 0 now).
    # Group 1, episode 0: copy 2 (steps 0-3 before), copy 3 (steps 0-3 before, 0-1 now).
    assert got == sorted([8, 12, 13, 101] + [2, 6, 10, 14, 3, 7, 11, 15, 103, 107])
    assert step.pending_steps == 11 + 16 - 14

    # The held-back steps resume exactly from the state.
    again = _step()
    again.load_state_dict(saved)
    replay, _ = again(second, None)
    torch.testing.assert_close(replay["adv"], batch["adv"])
    torch.testing.assert_close(replay["obs"], batch["obs"])


def test_a_missing_rollout_drops_the_episodes_it_cut_and_their_groups():
    step = _step()
    step(_rollout({0: [1, 3], 1: [2], 2: [3]}, [0, 0, 0, 0]), None)  # 11 held back
    # Rollout 1 of this stream never arrives; rollout 2 does.
    third = _rollout({1: [0], 3: [1]}, [2, 1, 1, 0], index=2)
    batch, info = step(third, None)
    # Every copy's steps are cut: the 11 held back, and in rollout 2 each copy's first
    # episode. Their groups are broken too: group 0's episodes 1 and 2 (copy 0's cut
    # episode 2 takes copy 1's episode 2 with it) and group 1's episodes 0 and 1, which
    # are all 16 fresh steps.
    assert batch["obs"].shape[0] == 0
    assert info["data/dropped_steps"] == 11 + 16 == step.dropped_steps
    assert step.pending_steps == 0
    # A second stream is a set of copies and groups of its own: no mixing.
    other, _ = step(_rollout({0: [1], 1: [1]}, [0, 0, 0, 0], stream=5), None)
    assert other["obs"].shape[0] == 4 and step.dropped_steps == 27


def test_a_silent_stream_is_dropped_after_a_while():
    step = _step()
    step(_rollout({0: [1]}, [0, 0, 0, 0]), None)
    held = step.pending_steps
    for index in range(STALE_CALLS + 1):  # another collector's rollouts only
        step(_rollout({}, [0, 0, 0, 0], index=index, stream=9), None)
    assert step.dropped_steps == held
    assert step.pending_steps == (STALE_CALLS + 1) * T * B


def test_reinforce_pp_needs_no_group_to_wait_for():
    step = _step("reinforce_pp")
    batch, _ = step(_rollout({0: [1, 3], 1: [2], 2: [3]}, [0, 0, 0, 0]), None)
    # Every ended episode is ready: copy 0 (4 steps), copy 1 (3), copy 2 (4).
    assert batch["obs"].shape[0] == 11 and step.pending_steps == 5


def test_an_empty_batch_trains_nothing_but_counts_the_iteration():
    cfg = compile_config(
        "cartpole_ppo",
        [
            "policy.learn.adv_estimator=reinforce_pp",
            "policy.model.critic=false",
            f"policy.collect.n_steps={T}",
        ],
    )
    policy = create_policy(cfg.policy, obs_shape=(1,), action_space=Discrete(2))
    rollout = _rollout({}, [0, 0, 0, 0])  # no episode ends
    info = policy.learn_mode.forward(rollout)
    assert info["minibatches"] == 0.0 and info["data/pending_steps"] == 16
    assert info["data/reward_mean"] == 1.0 and info["data/reward_std"] == 0.0


def test_the_kl_penalty_is_subtracted_from_the_reward_before_the_advantages():
    rollout = _rollout({b: [3] for b in range(B)}, [0, 0, 0, 0])
    rollout["logp"] = torch.full((T * B,), -0.5)
    plain, _ = _step("reinforce_pp")(rollout, None)
    step = _step("reinforce_pp", kl=KLController(0.5))
    penalized, info = step(rollout, lambda data: torch.full((T * B,), -1.0))
    # kl per step = -0.5 - (-1) = 0.5; reward 1 - 0.5 * 0.5 = 0.75: returns scale by 3/4.
    torch.testing.assert_close(penalized["ret"], plain["ret"] * 0.75)
    assert info["data/kl_in_reward"] == 0.5 and info["charts/kl_reward_coef"] == 0.5
    # k3 (verl's low_var_kl) in place of k1: exp(r) - r - 1 with r = -1 - (-0.5) = -0.5.
    k3 = _step("reinforce_pp", kl=KLController(0.5, estimator=get_kl_estimator("k3")))
    _, info = k3(rollout, lambda data: torch.full((T * B,), -1.0))
    assert info["data/kl_in_reward"] == pytest.approx(math.exp(-0.5) + 0.5 - 1)


def test_rows_and_time_major_are_inverse():
    x = torch.arange(8 * 3).view(8, 3)
    for horizon in (1, 2, 4, 8):
        assert torch.equal(time_major(as_rows(x, horizon), 8, horizon), x)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["policy.model.critic=false"], "critic=false .* policy.learn.adv_estimator=gae"),
        (
            [
                "policy.model.critic=false",
                "policy.learn.adv_estimator=reinforce_pp",
                "policy.learn.value_clip=true",
            ],
            "does not go with policy.learn.value_clip",
        ),
        (
            [
                "policy.model.critic=false",
                "policy.learn.adv_estimator=reinforce_pp",
                "policy.learn.value_warmup_iters=3",
            ],
            "value_warmup_iters=3",
        ),
        (["policy.learn.adv_estimator=grpo"], "set env.reset_group_size to 2 or more"),
        (
            ["policy.learn.adv_estimator=reinforce_pp", "policy.model.core=lstm"],
            "policy.model.core=none",
        ),
    ],
)
def test_a_config_the_estimator_cannot_work_with_is_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        compile_run_config("cartpole_ppo", RunOptions(overrides=overrides))
    assert "\n" not in str(err.value)


def test_without_a_critic_the_model_holds_no_value_parameters():
    cfg = compile_config(
        "cartpole_ppo", ["policy.learn.adv_estimator=grpo", "policy.model.critic=false"]
    )
    policy = create_policy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    names = list(policy.state_dict()["model"])
    assert names and not any("value" in n or "critic" in n for n in names)
    _, logp, value = policy.collect_mode.forward(torch.zeros(3, 4))
    assert torch.equal(value, torch.zeros(3)) and logp.shape == (3,)
