import math
from dataclasses import replace

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Box, Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.policy.ppo.adam import Adam


def make_policy(overrides=(), space=Discrete(2), obs_dim=4, total_iters=None):
    cfg = compile_config("cartpole_ppo", list(overrides))
    torch.manual_seed(0)
    return PPOPolicy(cfg.policy, obs_shape=(obs_dim,), action_space=space, total_iters=total_iters)


def batch(policy, n=64, obs_dim=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, obs_dim, generator=g)
    action, logp, value = policy.collect_mode.forward(obs)
    adv = torch.randn(n, generator=g)
    return {
        "obs": obs,
        "action": action,
        "logp": logp,
        "value": value,
        "adv": adv,
        "ret": value + adv,
    }


def params(policy):
    return torch.cat([p.detach().flatten().clone() for p in policy.model.parameters()])


def test_learn_reports_cleanrl_names_and_changes_parameters():
    policy = make_policy(["policy.learn.batch_size=16", "policy.learn.n_epochs=2"])
    before = params(policy)
    info = policy.learn_mode.forward(batch(policy))
    for key in (
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clipfrac",
        "explained_variance",
        "grad_norm",
        "learning_rate",
    ):
        assert key in info and isinstance(info[key], float), key
    assert info["minibatches"] == 8  # 64 / 16 per epoch, 2 epochs
    assert not torch.equal(before, params(policy))


def test_lr_anneals_linearly():
    policy = make_policy(
        ["policy.learn.lr_anneal=true", "policy.learn.learning_rate=0.01"], total_iters=4
    )
    data = batch(policy)
    lrs = [policy.learn_mode.forward(data)["learning_rate"] for _ in range(4)]
    assert lrs == pytest.approx([0.01, 0.0075, 0.005, 0.0025])


def test_entropy_weight_anneals_linearly_with_entropy_anneal():
    """A run planned for 2 iterations: the first update has the full entropy weight, the
    second half of it; the same updates with the weight set by hand give the same model."""

    def update(policy, data, seed):
        torch.manual_seed(seed)  # the same minibatch order for every policy
        policy.learn_mode.forward(data)

    on = ["policy.learn.entropy_weight=0.5", "policy.learn.entropy_anneal=true"]
    annealed = make_policy(on, total_iters=2)
    by_hand = make_policy(["policy.learn.entropy_weight=0.5"], total_iters=2)
    constant = make_policy(["policy.learn.entropy_weight=0.5"], total_iters=2)
    data = batch(annealed)
    for policy in (annealed, by_hand, constant):
        update(policy, data, 1)
    assert torch.equal(params(annealed), params(by_hand))  # progress 0: the full weight
    # The settings are read once from the config: the weight by hand is a new settings.
    by_hand.update.settings = replace(by_hand.update.settings, entropy_weight=0.25)
    for policy in (annealed, by_hand, constant):
        update(policy, data, 2)
    assert torch.equal(params(annealed), params(by_hand))
    assert not torch.equal(params(annealed), params(constant))


def test_value_warmup_leaves_actor_untouched():
    policy = make_policy(["policy.learn.value_warmup_iters=1"])
    actor = [
        p.clone()
        for n, p in policy.model.named_parameters()
        if "critic" not in n and "value" not in n
    ]
    policy.learn_mode.forward(batch(policy))
    after = [
        p for n, p in policy.model.named_parameters() if "critic" not in n and "value" not in n
    ]
    assert all(torch.equal(a, b) for a, b in zip(actor, after, strict=True))
    policy.learn_mode.forward(batch(policy))  # warm-up over: actor moves
    after = [
        p for n, p in policy.model.named_parameters() if "critic" not in n and "value" not in n
    ]
    assert not all(torch.equal(a, b) for a, b in zip(actor, after, strict=True))


def test_grad_accumulation_makes_fewer_steps():
    policy = make_policy(
        ["policy.learn.batch_size=16", "policy.learn.n_epochs=1", "policy.learn.grad_accum_steps=4"]
    )
    steps = []
    original = policy.optimizer.step
    policy.optimizer.step = lambda *a, **k: steps.append(1) or original(*a, **k)
    policy.learn_mode.forward(batch(policy))
    assert len(steps) == 1  # 4 minibatches, one optimizer step


def test_non_finite_gradient_skips_the_step_and_counts_it():
    policy = make_policy(["policy.learn.batch_size=64", "policy.learn.n_epochs=1"])
    data = batch(policy)
    data["ret"] = torch.full_like(data["ret"], math.nan)
    before = params(policy)
    info = policy.learn_mode.forward(data)
    assert info["skipped_steps"] == 1
    assert torch.equal(before, params(policy))


def test_diverged_only_after_max_skipped_steps_in_a_row():
    policy = make_policy(
        [
            "policy.learn.batch_size=32",
            "policy.learn.n_epochs=1",
            "policy.learn.max_skipped_steps=3",
        ]
    )
    good = batch(policy)
    bad = dict(good, ret=torch.full_like(good["ret"], math.nan))  # 2 skipped steps each
    assert policy.learn_mode.forward(bad)["diverged"] == 0.0  # 2 in a row
    info = policy.learn_mode.forward(good)  # an applied step resets the run of skips
    assert info["diverged"] == 0.0 and info["skipped_steps"] == 2
    assert policy.learn_mode.forward(bad)["diverged"] == 0.0  # 2 in a row again
    info = policy.learn_mode.forward(bad)  # 4 in a row
    assert info["diverged"] == 1.0 and info["skipped_steps"] == 6


def test_a_huge_learning_rate_makes_every_later_step_non_finite():
    policy = make_policy(
        [
            "policy.learn.learning_rate=1e30",
            "policy.learn.batch_size=32",
            "policy.learn.max_skipped_steps=4",
        ]
    )
    data = batch(policy)
    infos = [policy.learn_mode.forward(data) for _ in range(3)]
    assert infos[-1]["diverged"] == 1.0 and policy.skipped_steps >= 4


def test_kl_penalty_against_reference_and_its_decay():
    policy = make_policy(
        [
            "policy.learn.kl_coef=0.5",
            "policy.learn.kl_coef_decay=0.5",
            "policy.learn.kl_ref_update_interval=2",
        ]
    )
    data = batch(policy)
    first = policy.learn_mode.forward(data)
    # the reference starts equal to the policy, so KL only grows within the first iteration
    assert first["kl_coef"] == 0.5 and 0.0 <= first["kl_ref"] < 0.05
    second = policy.learn_mode.forward(data)
    assert second["kl_coef"] == 0.25 and second["kl_ref"] > 0
    # after 2 iterations the reference is refreshed to the current policy
    ref = torch.cat([p.flatten() for p in policy.update.ref_model.parameters()])
    assert torch.equal(ref, params(policy))


def test_continuous_space_and_state_dict_round_trip():
    policy = make_policy(space=Box(low=(-2.0,), high=(2.0,)), obs_dim=3)
    data = batch(policy, obs_dim=3)
    policy.learn_mode.forward(data)
    state = policy.state_dict()
    other = make_policy(space=Box(low=(-2.0,), high=(2.0,)), obs_dim=3)
    other.load_state_dict(state)
    assert torch.equal(params(other), params(policy))
    assert other.update.iteration == 1
    torch.manual_seed(1)
    a = policy.learn_mode.forward(data)
    torch.manual_seed(1)
    b = other.learn_mode.forward(data)
    assert a == b  # optimizer state came along, so the next update is the same
    assert torch.equal(params(other), params(policy))


def test_eval_mode_is_deterministic():
    policy = make_policy()
    obs = torch.randn(10, 4)
    assert torch.equal(policy.eval_mode.forward(obs), policy.eval_mode.forward(obs))


def test_optimizer_is_built_on_first_use_only():
    policy = make_policy()
    policy.collect_mode.forward(torch.randn(8, 4))
    policy.eval_mode.forward(torch.randn(8, 4))
    assert not policy.update.built_optimizer  # acting never needs one
    first = policy.optimizer
    policy.learn_mode.forward(batch(policy))
    assert policy.optimizer is first
    assert isinstance(first, Adam) and first.defaults["foreach"] is True


def test_neither_acting_nor_training_imports_torch_dynamo():
    # torch.optim's optimizers import torch._dynamo (about 1.4 s of CPU) when first built,
    # stepped, saved or cleared; ding_lite's Adam does not, and no process pays for it.
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from ding_lite.config import compile_config\n"
        "from ding_lite.envs.from_config import build_env\n"
        "from ding_lite.policy import create_policy\n"
        "from ding_lite.worker.collector import SerialCollector\n"
        "cfg = compile_config('pendulum_ppo')\n"
        "env = build_env(cfg, 4, 'cpu', 0)\n"
        "policy = create_policy(cfg.policy, obs_shape=env.obs_shape,"
        " action_space=env.action_space)\n"
        "c = SerialCollector(env, policy.collect_mode, n_steps=64, gamma=0.9, seed=0)\n"
        "print('torch._dynamo' in sys.modules)\n"
        "policy.learn_mode.forward(c.collect())\n"
        "policy.learn_mode.load_state_dict(policy.learn_mode.state_dict())\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "False"], out.stdout
