"""Adam and AdamW with torch.optim's numbers and checkpoint format, without its start-up cost.

``torch.optim``'s optimizers import ``torch._dynamo`` the first time one is built, stepped,
saved or cleared (its methods are wrapped to be skipped by ``torch.compile``): about 1.4 s of
CPU in every process that trains, a third of a short run's start. This optimizer makes the
same multi-tensor (``foreach``) update as ``torch.optim.Adam(..., foreach=True)`` and
``torch.optim.AdamW`` (the same ops in the same order, so the same numbers, bit for bit),
and reads and writes the same ``state_dict``: a checkpoint saved by either loads in the
other. It keeps torch's attribute names (``param_groups``, ``state``, ``defaults``), so a
hook that reads ``optimizer.param_groups[0]["lr"]`` works with both.

Only what the update uses is here: no amsgrad, no maximize, no capturable or fused steps,
real parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults


class Adam:
    """Adam (``decoupled=False``) or AdamW (``decoupled=True``: the weight decay applied to
    the parameters, not added to the gradient) over one group of parameters.

    Args:
        params: The parameters.
        lr, eps, weight_decay, betas: Adam's.
        decoupled: AdamW's weight decay.
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        *,
        lr: float,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = BETAS,
        decoupled: bool = False,
    ) -> None:
        params = list(params)
        if not params:
            raise ValueError("an optimizer needs at least one parameter")
        # torch.optim.Adam's group keys, in its order (its state_dict has them all).
        self.defaults: dict[str, Any] = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=False,
            maximize=False,
            foreach=True,
            capturable=False,
            differentiable=False,
            fused=None,
            decoupled_weight_decay=decoupled,
        )
        self.param_groups: list[dict[str, Any]] = [{**self.defaults, "params": params}]
        self.state: dict[Tensor, dict[str, Tensor]] = {}

    def __repr__(self) -> str:
        group = self.param_groups[0]
        kind = "AdamW" if group["decoupled_weight_decay"] else "Adam"
        return f"{kind}(lr={group['lr']}, eps={group['eps']}, weight_decay={group['weight_decay']})"

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            by_kind: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in params:
                by_kind.setdefault((p.device, p.dtype), []).append(p)
            for same in by_kind.values():
                self._step(same, group)

    def _step(self, params: list[Tensor], group: dict[str, Any]) -> None:
        """torch's ``_multi_tensor_adam`` without capturable, amsgrad or maximize."""
        beta1, beta2 = group["betas"]
        lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
        grads: list[Tensor] = [p.grad for p in params]  # type: ignore[misc]
        states = [self._state_of(p) for p in params]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, torch.tensor(1.0), alpha=1.0)
        if decay != 0:
            if group["decoupled_weight_decay"]:
                torch._foreach_mul_(params, 1 - lr * decay)
            else:
                grads = list(torch._foreach_add(grads, params, alpha=decay))
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        counts = [step.item() for step in steps]
        step_sizes = [(lr / (1 - beta1**n)) * -1 for n in counts]
        bias2_sqrt = [(1 - beta2**n) ** 0.5 for n in counts]
        denom = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, exp_avgs, denom, step_sizes)

    def _state_of(self, p: Tensor) -> dict[str, Tensor]:
        state = self.state.get(p)
        if state is None:  # as torch.optim.Adam: the step count a float32 on the CPU
            state = self.state[p] = {
                "step": torch.tensor(0.0, dtype=torch.float32),
                "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
            }
        return state

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients (to None, or zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def state_dict(self) -> dict[str, Any]:
        """torch.optim's format: ``state`` keyed by the parameter's index over the groups,
        ``param_groups`` with the settings and those indices. The tensors are the live
        ones, as torch's are; copy them to keep them."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a :meth:`state_dict` of this class or of ``torch.optim.Adam`` /
        ``AdamW``: the groups' settings and each parameter's moments (on the parameter's
        device and dtype) and step count.

        Raises:
            ValueError: its groups or their sizes differ from these, or a moment's shape
                differs from its parameter's (nothing is changed then).
        """
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("the saved optimizer has a different number of parameter groups")
        by_index: dict[int, Tensor] = {}
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"the saved optimizer has a group of {len(saved['params'])} parameters "
                    f"where this one has {len(group['params'])}"
                )
            by_index.update(zip(saved["params"], group["params"], strict=True))
        new_state: dict[Tensor, dict[str, Tensor]] = {}
        for key, saved_state in state_dict["state"].items():
            p = by_index.get(key)
            if p is None:
                raise ValueError(f"the saved optimizer has a state for no parameter ({key!r})")
            new_state[p] = _state_for(p, saved_state)
        self.param_groups = [
            {**self.defaults, **{k: v for k, v in saved.items() if k != "params"}}
            | {"params": group["params"]}
            for group, saved in zip(self.param_groups, saved_groups, strict=True)
        ]
        self.state = new_state


def _state_for(p: Tensor, saved: dict[str, Any]) -> dict[str, Tensor]:
    """A saved parameter state moved to the parameter's device and dtype (the step count
    stays a float32 on the CPU)."""
    state: dict[str, Tensor] = {}
    for key in ("exp_avg", "exp_avg_sq"):
        value = saved[key]
        if tuple(value.shape) != tuple(p.shape):
            raise ValueError(
                f"the saved optimizer's {key} has shape {list(value.shape)} for a parameter "
                f"of shape {list(p.shape)}"
            )
        state[key] = value.to(dtype=p.dtype, device=p.device)
    state["step"] = torch.as_tensor(saved["step"], dtype=torch.float32, device="cpu").reshape(())
    return state
