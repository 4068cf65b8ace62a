"""``BufferedEnv``: the env copies of one collector as K groups (buffers) stepped in turn.

With ``collector.async_factor`` K > 1 a collector's ``N`` env copies are K envs of ``N / K``
copies each. The collector computes group ``g``'s actions, starts its step
(``step_async``), goes on to group ``g + 1`` while ``g`` steps, and collects every group's
result (``step_wait``) at the end of the env step: inference overlaps stepping where a
group steps elsewhere (gymnasium ``vector_mode="async"`` subprocesses).

Copy ``i`` of the whole is copy ``i - offset_g`` of its group, so rows keep the order of one
env of ``N`` copies, and a seed seeds group ``g`` with ``seed + offset_g``: for gymnasium
envs (copy ``i`` seeded ``seed + i``) the copies start exactly as they would in one env.

Reset groups (``env.reset_group_size`` R, see :mod:`ding_lite.envs.reset_groups`) are built
inside each group env: ``N / K`` is a multiple of R, so reset group ``i // R`` of the whole
lies in one group env, where it is local reset group ``(i - offset_g) // R``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import Tensor

from ding_lite.envs.base import StepResult, TensorVectorEnv
from ding_lite.envs.from_config import build_env
from ding_lite.utils.errors import ConfigError

if TYPE_CHECKING:  # seats imports this module
    from ding_lite.envs.seats import SeatedEnv


class BufferedEnv:
    """K envs (groups) that together hold the copies of one collector.

    It has the attributes a collector reads from an env (``num_envs``, ``num_agents``,
    ``device``, ``obs_shape``, ``action_space``, ``name``, ``reset_group_size``) and resets,
    saves, restores and closes all groups at once; stepping goes through each group's
    ``step_async`` / ``step_wait`` (see :meth:`concat`).

    Attributes:
        groups: The group envs, in copy order.
        offsets: Copies before each group (group ``g`` holds whole-env copies
            ``offsets[g]`` to ``offsets[g] + groups[g].num_envs - 1``).
    """

    def __init__(self, groups: Sequence[TensorVectorEnv | SeatedEnv]) -> None:
        """Puts ``groups`` side by side.

        Raises:
            ValueError: no group, or groups that differ in observation shape, action
                space, agents per copy, device (one policy acts for all of them) or reset
                group size.
        """
        if not groups:
            raise ValueError("BufferedEnv needs at least one group env")
        first = groups[0]
        for g, env in enumerate(groups):
            mine = (env.obs_shape, repr(env.action_space), env.num_agents, env.device)
            theirs = (first.obs_shape, repr(first.action_space), first.num_agents, first.device)
            if mine != theirs or env.reset_group_size != first.reset_group_size:
                raise ValueError(
                    f"group {g} ({env!r}) differs from group 0 ({first!r}) in obs shape, "
                    "action space, agents, device or reset group size; build every group "
                    "the same way"
                )
        self.groups = list(groups)
        self.offsets = [sum(env.num_envs for env in self.groups[:g]) for g in range(len(groups))]
        self.num_envs = sum(env.num_envs for env in self.groups)
        self.num_agents = first.num_agents
        self.device = first.device
        self.obs_shape = first.obs_shape
        self.action_space = first.action_space
        self.name = first.name
        self.reset_group_size = first.reset_group_size

    def reset(self, seed: int | None = None) -> tuple[Tensor, dict[str, Any]]:
        """Resets every group; a seed seeds group ``g`` with ``seed + offsets[g]``.

        Returns:
            ``(obs, info)``: the groups' observations concatenated, ``[N, [A,] *obs_shape]``;
            info is empty.
        """
        obs = [
            env.reset(seed=None if seed is None else seed + offset)[0]
            for env, offset in zip(self.groups, self.offsets, strict=True)
        ]
        return torch.cat(obs), {}

    @staticmethod
    def row_slices(groups: Sequence[TensorVectorEnv | SeatedEnv], agents: int) -> list[slice]:
        """Each group's policy rows among all copies' ``N * agents`` rows (copy-major)."""
        bounds = [0]
        for env in groups:
            bounds.append(bounds[-1] + env.num_envs * agents)
        return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    @staticmethod
    def concat(results: Sequence[StepResult]) -> StepResult:
        """The groups' step results as one env of all their copies would return them.

        Args:
            results: one :meth:`TensorVectorEnv.step` result per group, in group order.

        Returns:
            ``(obs, reward, terminated, truncated, info)`` concatenated along the copy axis;
            ``info`` holds the per-copy tensors every group's info has (``final_obs``,
            ``done``) and ``episode`` with the keys every group reports (``return``,
            ``length``, ``mask``, ``outcome``). One result is returned as it is.
        """
        if len(results) == 1:
            return results[0]
        obs, reward, terminated, truncated = (
            torch.cat([cast(Tensor, r[i]) for r in results]) for i in range(4)
        )
        infos = [r[4] for r in results]
        info: dict[str, Any] = {"episode": _concat_common([i["episode"] for i in infos])}
        info.update(_concat_common([{k: v for k, v in i.items() if k != "episode"} for i in infos]))
        return obs, reward, terminated, truncated, info

    def state_dict(self) -> dict[str, Any]:
        """``{"groups": [each group's state_dict]}`` (tensors, numbers and None only)."""
        return {"groups": [env.state_dict() for env in self.groups]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned.

        Raises:
            ValueError: ``state`` comes from another number of groups (or from one env).
        """
        saved = state.get("groups")
        if saved is None or len(saved) != len(self.groups):
            got = "one env" if saved is None else f"{len(saved)} groups"
            raise ValueError(
                f"{self.name}: state of {got}, this env has {len(self.groups)} groups; "
                "resume with the collector.async_factor that saved it"
            )
        for env, group_state in zip(self.groups, saved, strict=True):
            env.load_state_dict(group_state)

    def close(self) -> None:
        """Closes every group (a gymnasium group ends its subprocesses)."""
        for env in self.groups:
            env.close()

    def __repr__(self) -> str:
        sizes = "+".join(str(env.num_envs) for env in self.groups)
        return f"BufferedEnv(name={self.name!r}, num_envs={self.num_envs} ({sizes}))"


def _concat_common(parts: Sequence[dict[str, Any]]) -> dict[str, Tensor]:
    """The per-copy tensors (at least 1-D) under keys that every dict of ``parts`` has,
    concatenated in order."""
    return {
        key: torch.cat([p[key] for p in parts])
        for key in parts[0]
        if all(isinstance(p.get(key), Tensor) and p[key].dim() > 0 for p in parts)
    }


def split_env(env: TensorVectorEnv, cfg: Any, seed: int, k: int) -> TensorVectorEnv | BufferedEnv:
    """``k`` envs of ``env.num_envs / k`` copies each, built from the run's config ``cfg``
    like ``env`` and on its device, in place of ``env`` (which is closed): group ``g``
    gets seed ``seed + g * num_envs / k``, so gymnasium copy ``i`` still gets ``seed + i``.
    Each group env gets ``env.reset_group_size`` too (see :func:`build_collector_env`).

    Raises:
        ConfigError: ``env.num_envs`` is not a multiple of ``k``, ``num_envs / k`` not one of
            ``env.reset_group_size``, or a group cannot be built.
    """
    num_envs, device = env.num_envs, env.device
    env.close()
    return build_collector_env(cfg, num_envs, device, seed, k)


def build_collector_env(
    cfg: Any, num_envs: int, device: Any, seed: int, k: int | None = None
) -> TensorVectorEnv | BufferedEnv:
    """A collector's env as the run's config asks: one env of ``num_envs`` copies, or with
    ``collector.async_factor`` (or ``k``) above 1 a :class:`BufferedEnv` of that many groups
    (group ``g`` seeded ``seed + g * num_envs / k``). Every env built gets
    ``env.reset_group_size`` R (see :func:`build_env`); with ``k`` groups, ``num_envs / k``
    must be a multiple of R so that no reset group straddles two group envs.

    Raises:
        ConfigError: ``num_envs`` is not a multiple of ``k``, ``num_envs / k`` not one of
            R, or an env cannot be built.
    """
    k = cfg.collector.async_factor if k is None else k
    if k == 1:
        return build_env(cfg, num_envs, device, seed)
    if num_envs % k:
        raise ConfigError(
            f"env.num_envs={num_envs} is not a multiple of collector.async_factor={k}"
        )
    per = num_envs // k
    group_size = cfg.env.reset_group_size
    if per % group_size:
        raise ConfigError(
            f"env.num_envs / collector.async_factor = {per} is not a multiple of "
            f"env.reset_group_size={group_size}: a reset group must lie in one of the "
            f"{k} envs the collector steps in turn"
        )
    return BufferedEnv([build_env(cfg, per, device, seed + g * per) for g in range(k)])
