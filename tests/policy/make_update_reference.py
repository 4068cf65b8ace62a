"""Writes the reference of the PPO update that test_update_reference.py checks against.

Run ``python tests/policy/make_update_reference.py`` only when the update is meant to
change its numbers (and say so in the commit): the test pins today's update bit for bit.

Each case builds a PPOPolicy from a bundled experiment (cartpole: discrete actions,
pendulum: continuous) with a smaller network (the update's code path does not depend on
the width; the file stays small), feeds it a fixed synthetic batch for a few iterations
and records the model's state (parameters and normalizer buffers) and the returned
statistics after each iteration. Beside the two experiments' own update settings, one case
per branch of the update: the KL early stop, gradient accumulation with a leftover step,
the KL penalty against a reference policy, value warm-up, value clipping, and the entropy
bonus with a learning-rate schedule and unnormalized advantages.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Box, Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.utils.device import cpu_model

PATH = Path(__file__).with_name("data") / "ppo_update_reference.pt"
ITERATIONS = 3
BATCH = 768  # cartpole: 1.5 minibatches of 512, so the last partial one is dropped
SMALL = ["policy.model.hidden_sizes=[16,16]"]

#: pendulum_ppo's exploration and schedule as they were when the reference was written
#: (it has since moved to gSDE, discount 0.97 and an annealed learning rate): the reference
#: pins the update's arithmetic, not the experiment's tuning.
PENDULUM_AS_WRITTEN = [
    "policy.model.sde=false",
    "policy.model.log_std_init=0.0",
    "policy.learn.lr_anneal=false",
    "policy.collect.gamma=0.9",
]

#: name -> (experiment, overrides). Every case runs ITERATIONS iterations; a pendulum case's
#: overrides come after PENDULUM_AS_WRITTEN.
CASES: dict[str, tuple[str, list[str]]] = {
    "cartpole": ("cartpole_ppo", []),
    "pendulum": ("pendulum_ppo", []),
    "target_kl": (
        "cartpole_ppo",
        ["policy.learn.batch_size=128", "policy.learn.n_epochs=8", "policy.learn.target_kl=0.002"],
    ),
    "grad_accum": (
        "pendulum_ppo",
        ["policy.learn.n_epochs=2", "policy.learn.grad_accum_steps=2"],  # 3 minibatches
    ),
    "kl_ref": (
        "cartpole_ppo",
        [
            "policy.learn.batch_size=256",
            "policy.learn.kl_coef=0.5",
            "policy.learn.kl_coef_decay=0.5",
            "policy.learn.kl_ref_update_interval=2",
        ],
    ),
    "value_warmup": (
        "pendulum_ppo",
        ["policy.learn.n_epochs=2", "policy.learn.value_warmup_iters=2"],
    ),
    "value_clip": ("cartpole_ppo", ["policy.learn.batch_size=256", "policy.learn.value_clip=true"]),
    "entropy_lr_anneal": (
        "pendulum_ppo",
        [
            "policy.learn.n_epochs=2",
            "policy.learn.entropy_weight=0.01",
            "policy.learn.lr_anneal=true",
            "policy.learn.adv_estimator=gae_no_norm",
            "policy.learn.optimizer=adamw",
            "policy.learn.weight_decay=0.01",
        ],
    ),
}


def _space(exp: str) -> tuple[tuple[int, ...], Any]:
    if exp == "cartpole_ppo":
        return (4,), Discrete(2)
    return (3,), Box(low=(-2.0,), high=(2.0,))


def _batch(policy: PPOPolicy, obs_shape: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """A prepared batch (with ``adv`` and ``ret``, as the advantage step returns one): fixed
    advantages far from normalized, independent of the advantage estimator."""
    g = torch.Generator().manual_seed(1)
    raw = torch.randn(BATCH, *obs_shape, generator=g) * 2 + 0.5
    obs = policy.obs_rms.normalize(raw) if policy.obs_rms is not None else raw
    action, logp, value = policy.collect_mode.forward(obs)
    adv = torch.randn(BATCH, generator=g) * 3 + 1  # far from normalized
    data = {
        "obs": obs,
        "action": action,
        "logp": logp,
        "value": value,
        "adv": adv,
        "ret": value + adv,
    }
    if policy.obs_rms is not None:
        data["obs_norm_update"] = policy.obs_rms.summarize(raw)[None]
    if policy.ret_rms is not None:
        data["ret_norm_update"] = policy.ret_rms.summarize(adv)[None]
    return data


def model_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's parameters and buffers, each kind flattened into one tensor (one record
    per tensor would make the file several times larger)."""
    flat = {"params": [p.detach().flatten() for p in model.parameters()]}
    flat["buffers"] = [b.detach().double().flatten() for b in model.buffers()]
    return {k: torch.cat(v) if v else torch.zeros(0) for k, v in flat.items()}


def run_case(name: str) -> dict[str, Any]:
    """Runs one case with the current code.

    Returns:
        ``{"states": [model_state after each iteration], "infos": [learn info of each
        iteration]}``.
    """
    exp, overrides = CASES[name]
    pinned = PENDULUM_AS_WRITTEN if exp == "pendulum_ppo" else []
    cfg = compile_config(exp, SMALL + pinned + overrides)
    obs_shape, space = _space(exp)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # reductions may split differently across threads
    try:
        torch.manual_seed(0)
        policy = PPOPolicy(
            cfg.policy, obs_shape=obs_shape, action_space=space, total_iters=ITERATIONS + 1
        )
        data = _batch(policy, obs_shape)
        torch.manual_seed(2)  # the minibatch order
        states, infos = [], []
        for _ in range(ITERATIONS):
            # As a learner's iteration: the advantage step (a batch that has its ``adv``
            # already passes through it as it is), then the update.
            infos.append(policy.learn_mode.forward(policy.learn_mode.prepare(data)))
            states.append(model_state(policy.model))
    finally:
        torch.set_num_threads(threads)
    return {"states": states, "infos": infos}


def machine() -> str:
    """The CPU the reference was computed on: its model and the kernels torch picks for it.

    The same torch build rounds differently on another CPU (MKL and oneDNN choose their
    kernels by processor), so the numbers are exact only on the same kind of machine.
    """
    return f"{cpu_model()} ({torch.backends.cpu.get_cpu_capability()})"


def main() -> None:
    reference = {
        "torch": str(torch.__version__),
        "machine": machine(),
        "cases": {name: run_case(name) for name in CASES},
    }
    PATH.parent.mkdir(exist_ok=True)
    torch.save(reference, PATH)
    print(f"wrote {PATH} ({PATH.stat().st_size} bytes, torch {torch.__version__}, {machine()})")


if __name__ == "__main__":
    sys.exit(main())
