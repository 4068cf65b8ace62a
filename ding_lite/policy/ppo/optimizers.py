"""The update's optimizers: one over the whole model (the default), or the actor's and the
critic's, each with its own learning rate and gradient clip (``policy.learn.critic``, as
verl updates its critic and its actor with optimizers of their own).

A model's critic parameters are those of its critic trunk and value head: every parameter
whose name starts with ``critic`` (``critic_encoder``, ``critic_core``...) or
``value_head``; the rest are the actor's. Separate optimizers need separate trunks
(``policy.model.share_encoder=false``), so no parameter is stepped by both.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from ding_lite.policy.ppo.adam import Adam
from ding_lite.utils.distributed import average_gradients

CRITIC_PREFIXES = ("critic", "value_head")


def critic_parameter_names(model: nn.Module) -> list[str]:
    """Names of the model's critic parameters (see the module docstring)."""
    return [n for n, _ in model.named_parameters() if n.startswith(CRITIC_PREFIXES)]


class Optimizers:
    """Adam (or AdamW) over a model: one, or an actor's and a critic's.

    Args:
        model: The actor-critic.
        kind: ``"adam"`` or ``"adamw"``.
        lr: The (actor's) learning rate.
        eps, weight_decay: Adam's.
        critic_lr: With separate optimizers, the critic's learning rate; None: one
            optimizer over every parameter.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        kind: str,
        lr: float,
        eps: float,
        weight_decay: float,
        critic_lr: float | None = None,
    ) -> None:
        # torch.optim.Adam's (AdamW's) multi-tensor update, without its start-up cost (adam.py).
        def adam(params: Any, lr: float) -> Adam:
            return Adam(
                params, lr=lr, eps=eps, weight_decay=weight_decay, decoupled=kind == "adamw"
            )

        if critic_lr is None:
            self.actor = adam(model.parameters(), lr)
            self.critic: Adam | None = None
            return
        critic_names = set(critic_parameter_names(model))
        actor = [p for n, p in model.named_parameters() if n not in critic_names]
        critic = [p for n, p in model.named_parameters() if n in critic_names]
        if not critic:
            raise ValueError("policy.learn.critic.optimizer=separate: the model has no critic")
        self.actor = adam(actor, lr)
        self.critic = adam(critic, critic_lr)
        self.critic_lr_ratio = critic_lr / lr if lr else 1.0

    def all(self) -> list[Adam]:
        """The optimizers, the actor's (or the only one) first."""
        return [self.actor] if self.critic is None else [self.actor, self.critic]

    def set_lr(self, lr: float) -> None:
        """The (annealed) learning rate; a separate critic keeps its ratio to it."""
        for group in self.actor.param_groups:
            group["lr"] = lr
        if self.critic is not None:
            for group in self.critic.param_groups:
                group["lr"] = lr * self.critic_lr_ratio

    def step(self, which: list[Adam], max_norm: float | None) -> Tensor:
        """Averages the gradients over data-parallel ranks, clips each optimizer's to
        ``max_norm`` and steps them all, unless a norm is not finite; then clears the
        gradients. Returns the gradient norm (over every stepped parameter; NaN or inf when
        the step was skipped)."""
        params = [p for opt in which for g in opt.param_groups for p in g["params"]]
        average_gradients(params)
        bound = max_norm if max_norm is not None else math.inf
        norms = [
            nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]], bound)
            for opt in which
        ]
        norm = norms[0] if len(norms) == 1 else torch.stack(norms).square().sum().sqrt()
        if torch.isfinite(norm):
            for opt in which:
                opt.step()
        for opt in self.all():
            opt.zero_grad(set_to_none=True)
        return norm.detach()

    def state_dict(self) -> dict[str, Any]:
        """``{"optimizer": ...}`` (the actor's or the only one's), and
        ``"critic_optimizer"`` with separate optimizers."""
        state = {"optimizer": self.actor.state_dict()}
        if self.critic is not None:
            state["critic_optimizer"] = self.critic.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` stored.

        Raises:
            ValueError: the state has separate optimizers and these are one, or the reverse
                (``policy.learn.critic.optimizer`` changed since it was saved).
        """
        if ("critic_optimizer" in state) != (self.critic is not None):
            saved = "separate" if "critic_optimizer" in state else "shared"
            raise ValueError(
                f"the checkpoint's optimizers are {saved}; this run's "
                f"policy.learn.critic.optimizer differs"
            )
        self.actor.load_state_dict(state["optimizer"])
        if self.critic is not None:
            self.critic.load_state_dict(state["critic_optimizer"])
