"""policy.learn.critic: a separate critic optimizer with its own learning rate, verl's
critic-first order, checkpoints that keep both optimizers, and one-line refusals."""

from __future__ import annotations

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.run.options import RunOptions, compile_run_config
from ding_lite.envs.spaces import Discrete
from ding_lite.model import build_model
from ding_lite.policy import create_policy
from ding_lite.policy.ppo.optimizers import critic_parameter_names
from ding_lite.utils.errors import ConfigError


def _policy(**learn):
    overrides = {"policy": {"learn": {"batch_size": 64, "n_epochs": 2, **learn}}}
    cfg = compile_config("cartpole_ppo", overrides)
    return create_policy(cfg.policy, obs_shape=(4,), action_space=Discrete(2), total_iters=10)


def _batch(n: int = 128) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    return {
        "obs": torch.randn(n, 4, generator=gen),
        "action": torch.randint(0, 2, (n,), generator=gen),
        "logp": torch.full((n,), -0.69),
        "value": torch.zeros(n),
        "adv": torch.randn(n, generator=gen),
        "ret": torch.randn(n, generator=gen),
    }


def _moved(policy, before: dict[str, torch.Tensor]) -> dict[str, bool]:
    after = dict(policy.model.named_parameters())
    return {name: not torch.equal(before[name], after[name]) for name in before}


def _snapshot(policy) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in policy.model.named_parameters()}


def test_the_critic_is_its_trunk_and_value_head():
    model = build_model((4,), Discrete(2), hidden_sizes=[8], core="lstm")
    names = critic_parameter_names(model)
    assert names and all(
        n.startswith(("critic_encoder.", "critic_core.", "value_head.")) for n in names
    )
    others = [n for n, _ in model.named_parameters() if n not in names]
    assert all(n.startswith(("actor_encoder.", "core.", "policy_head.")) for n in others)


def test_a_separate_critic_learns_at_its_own_rate():
    policy = _policy(critic={"optimizer": "separate", "learning_rate": 1e-12})
    before = _snapshot(policy)
    policy.learn_mode.forward(_batch())
    moved = _moved(policy, before)
    critic = set(critic_parameter_names(policy.model))
    # Adam's first step moves each weight by about its learning rate.
    after = dict(policy.model.named_parameters())
    assert all((after[n] - before[n]).abs().max() < 1e-9 for n in critic)
    assert all(moved[n] for n in moved if n not in critic)
    assert set(policy.update.optimizers.state_dict()) == {"optimizer", "critic_optimizer"}


def test_critic_first_runs_the_critic_epochs_then_the_actor_epochs():
    policy = _policy(critic={"optimizer": "separate", "order": "critic_first"})
    steps = []
    for which, opt in (("critic", policy.update.optimizers.critic), ("actor", policy.optimizer)):
        original = opt.step
        opt.step = lambda *a, _o=original, _w=which, **k: steps.append(_w) or _o(*a, **k)
    info = policy.learn_mode.forward(_batch())
    per_phase = 2 * 2  # epochs x minibatches of 64 in 128
    assert steps == ["critic"] * per_phase + ["actor"] * per_phase
    assert info["value_loss"] > 0 and info["minibatches"] == per_phase


def test_only_the_critics_parameters_move_in_its_step():
    policy = _policy(critic={"optimizer": "separate", "order": "critic_first"})
    critic = set(critic_parameter_names(policy.model))
    opt = policy.update.optimizers.critic
    original, moved = opt.step, []

    def step(*args, **kwargs):
        before = _snapshot(policy)
        out = original(*args, **kwargs)
        moved.append({n for n, changed in _moved(policy, before).items() if changed})
        return out

    opt.step = step
    policy.learn_mode.forward(_batch())
    assert moved and all(names and names <= critic for names in moved)


def test_checkpoints_keep_both_optimizers_and_refuse_the_other_kind():
    separate = _policy(critic={"optimizer": "separate"})
    separate.learn_mode.forward(_batch())
    state = separate.state_dict()
    again = _policy(critic={"optimizer": "separate"})
    again.load_state_dict(state)
    a = again.update.optimizers.critic.state_dict()["state"]
    b = separate.update.optimizers.critic.state_dict()["state"]
    assert all(torch.equal(a[k]["exp_avg"], b[k]["exp_avg"]) for k in b)
    with pytest.raises(ValueError, match="the checkpoint's optimizers are separate"):
        _policy().load_state_dict(state)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["policy.learn.critic.optimizer=split"], "must be shared or separate; got 'split'"),
        (["policy.learn.critic.order=critic_first"], "order needs .*optimizer=separate"),
        (
            ["policy.learn.critic.optimizer=separate", "policy.model.share_encoder=true"],
            "needs separate actor and critic trunks",
        ),
        (
            ["policy.learn.critic.optimizer=separate", "policy.learn.critic.learning_rate=0"],
            "learning_rate must be positive",
        ),
    ],
)
def test_bad_critic_settings_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        compile_run_config("cartpole_ppo", RunOptions(overrides=overrides))
    assert "\n" not in str(err.value)
