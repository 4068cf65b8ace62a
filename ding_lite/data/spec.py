"""What a rollout of a given config holds, and the check every rollout file passes before use.

A learner trusts no file in ``path_data``: even a well-formed tensor file with the wrong
observation shape would kill its training thread, and a NaN would poison every weight. So
each file is checked against the :class:`RolloutSpec` of the run (keys, per-sample shapes,
dtypes, equal lengths, the sample count its name states, finite values) before it is used
or deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.rollout_fields import EPISODE_INDEX_KEYS

#: The tensors ``SerialCollector.collect()`` always returns, in that order.
ROLLOUT_KEYS = ("obs", "action", "logp", "value", "reward", "next_value", "terminated", "done")

#: The largest value a file's episode index field (``EPISODE_INDEX_KEYS``) may hold: the
#: advantage step builds keys from them, so they must be small and non-negative.
MAX_INDEX = 2**31 - 1


class InvalidRolloutError(DingLiteError, ValueError):
    """A rollout file does not hold what a collector of this run writes."""


@dataclass(frozen=True)
class FieldSpec:
    """One tensor of a rollout: ``[samples, *shape]`` of ``dtype``."""

    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclass(frozen=True)
class RolloutSpec:
    """The tensors a rollout holds, by key.

    ``fields`` are per-sample tensors ``[samples, *shape]``; ``stats`` are the running
    statistics' summaries (``obs_norm_update``, ``ret_norm_update``): float64 ``[1, size]``
    holding count, mean and M2 (see ``ding_lite.model.normalizer.summarize``);
    ``segment_fields`` are per-segment tensors ``[samples / horizon, *shape]`` (a recurrent
    policy's ``core_state``). The sample count is a multiple of ``n_steps`` (a rollout is
    ``n_steps`` steps of every env copy) and of ``horizon``.
    """

    fields: Mapping[str, FieldSpec]
    stats: Mapping[str, int] = field(default_factory=dict)
    segment_fields: Mapping[str, FieldSpec] = field(default_factory=dict)
    horizon: int = 1
    n_steps: int = 1


def rollout_spec(
    obs_shape: tuple[int, ...],
    action_shape: tuple[int, ...],
    action_dtype: torch.dtype,
    *,
    float_dtype: torch.dtype | None = None,
    stats: Mapping[str, int] | None = None,
    horizon: int = 1,
    state_size: int = 0,
    n_steps: int = 1,
    episodes: bool = False,
    next_obs: bool = False,
    teacher: bool = False,
) -> RolloutSpec:
    """The spec of a rollout as ``SerialCollector.collect()`` returns it.

    Args:
        obs_shape: one observation's shape (the env's ``obs_shape``).
        action_shape: one action's shape (``()`` for a discrete action).
        action_dtype: the dtype of the actions the policy's collect mode returns.
        float_dtype: dtype of the collector's float buffers (obs, logp, value, reward,
            next_value); default ``torch.get_default_dtype()``, what the collector allocates
            them with.
        stats: summary sizes of the running statistics the rollout carries, by key.
        horizon: steps per segment (``policy.learn.bptt_horizon``): the sample count must
            be a multiple of it.
        state_size: a recurrent policy's state width: the rollout then also holds
            ``episode_start`` (bool, per sample) and ``core_state`` (per segment).
        n_steps: env steps per copy in one rollout (``policy.collect.n_steps``).
        episodes: the rollout also holds ``episode``, ``group``, ``stream`` and ``step``
            (int64, per sample), for an episode-level advantage estimator.
        next_obs: the rollout also holds ``next_obs`` (``policy.learn.recompute_values``).
        teacher: the rollout also holds ``teacher_action``, a scripted teacher's actions
            (``policy.learn.kickstart.teacher=agent:NAME``), shaped like ``action``.
    """
    fdt = float_dtype or torch.get_default_dtype()
    scalar, flag = FieldSpec((), fdt), FieldSpec((), torch.bool)
    fields = {
        "obs": FieldSpec(tuple(obs_shape), fdt),
        "action": FieldSpec(tuple(action_shape), action_dtype),
        "logp": scalar,
        "value": scalar,
        "reward": scalar,
        "next_value": scalar,
        "terminated": flag,
        "done": flag,
    }
    if next_obs:
        fields["next_obs"] = fields["obs"]
    if teacher:
        fields["teacher_action"] = fields["action"]
    if episodes:
        fields.update(dict.fromkeys(EPISODE_INDEX_KEYS, FieldSpec((), torch.int64)))
    segment_fields = {}
    if state_size:
        fields["episode_start"] = flag
        segment_fields["core_state"] = FieldSpec((state_size,), fdt)
    return RolloutSpec(fields, dict(stats or {}), segment_fields, horizon, n_steps)


def probe_rollout_spec(
    env: Any,
    collect_mode: Any,
    device: Any = "cpu",
    horizon: int = 1,
    *,
    n_steps: int = 1,
    episodes: bool = False,
    next_obs: bool = False,
    teacher: bool = False,
) -> RolloutSpec:
    """Derives the spec from one action of ``collect_mode`` on a (throwaway) probe env.

    The random generators are left as they were, so probing does not change a run.

    Args:
        env: a ``TensorVectorEnv`` with at least one copy (it is reset).
        collect_mode: the policy's collect mode (``forward(obs) -> (action, logp, value)``,
            or ``step`` for a recurrent one).
        device: the policy's device.
        horizon: steps per segment (``policy.learn.bptt_horizon``).
        n_steps: env steps per copy in one rollout.
        episodes: the rollout carries episode numbers and groups (see :func:`rollout_spec`).
        next_obs, teacher: the rollout carries ``next_obs``, ``teacher_action`` (see
            :func:`rollout_spec`).
    """
    device = torch.device(device)
    devices = [device.index or 0] if device.type == "cuda" else []
    recurrent = bool(getattr(collect_mode, "recurrent", False))
    state_size = 0
    with torch.random.fork_rng(devices=devices), torch.inference_mode():
        obs, _ = env.reset(seed=0)
        obs = obs.to(device)
        if getattr(env, "num_agents", 1) > 1:  # one policy row per agent
            obs = obs.flatten(0, 1)
        if recurrent:
            state = collect_mode.initial_state(obs.shape[0], device)
            state_size = state.shape[1]
            starts = torch.ones(obs.shape[0], dtype=torch.bool, device=device)
            action = collect_mode.step(obs, state, starts)[0]
        else:
            action, _, _ = collect_mode.forward(obs)
    stats = {}
    for key, rms in (("obs_norm_update", "obs_rms"), ("ret_norm_update", "ret_rms")):
        if getattr(collect_mode, rms, None) is not None:
            stats[key] = getattr(collect_mode, rms).summary_size
    return rollout_spec(
        tuple(env.obs_shape),
        tuple(action.shape[1:]),
        action.dtype,
        stats=stats,
        horizon=horizon,
        state_size=state_size,
        n_steps=n_steps,
        episodes=episodes,
        next_obs=next_obs,
        teacher=teacher,
    )


def _problem(data: Any, spec: RolloutSpec, expected_size: int) -> str | None:
    """The first way ``data`` differs from ``spec`` (None: it does not)."""
    if not isinstance(data, Mapping):
        return f"its data is a {type(data).__name__}, not a dict of tensors"
    known = [*spec.fields, *spec.stats, *spec.segment_fields]
    for key in known:
        if key not in data:
            return f"missing key '{key}'"
    for key in data:
        if key not in known:
            return f"unexpected key '{str(key)[:40]}'"
    for key, size in spec.stats.items():
        problem = _summary_problem(key, data[key], size)
        if problem is not None:
            return problem
    first_key, length = None, None
    for key, want in [*spec.fields.items(), *spec.segment_fields.items()]:
        value = data[key]
        problem = _tensor_problem(key, value, want)
        if problem is not None:
            return problem
        if key in spec.segment_fields:
            continue
        if length is None:
            first_key, length = key, value.shape[0]
        elif value.shape[0] != length:
            return (
                f"inconsistent lengths: '{first_key}' has {length} samples, "
                f"'{key}' {value.shape[0]}"
            )
    if length != expected_size:
        return f"holds {length} samples, its name says {expected_size}"
    if length % spec.horizon:
        return f"holds {length} samples, not whole segments of {spec.horizon} steps"
    if length % spec.n_steps:
        return f"holds {length} samples, not {spec.n_steps} steps of whole env copies"
    for key in spec.segment_fields:
        if data[key].shape[0] * spec.horizon != length:
            return (
                f"'{key}' has {data[key].shape[0]} rows for {length} samples in segments of "
                f"{spec.horizon} steps (expected {length // spec.horizon})"
            )
    for key in [*spec.fields, *spec.segment_fields]:
        value = data[key]
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            return f"'{key}' holds non-finite values"
        if (
            key in EPISODE_INDEX_KEYS
            and value.numel()
            and not 0 <= int(value.min()) <= int(value.max()) <= MAX_INDEX
        ):
            return f"'{key}' holds values outside [0, {MAX_INDEX}]"
        if key == "stream" and value.numel() and not bool((value == value[0]).all()):
            return "'stream' holds more than one value"
    return None


def _tensor_problem(key: str, value: Any, want: FieldSpec) -> str | None:
    """What is wrong with one tensor's type, dtype or row shape (None: nothing)."""
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        return f"'{key}' is not a dense tensor"
    if value.dtype != want.dtype:
        return f"'{key}' has dtype {value.dtype}, expected {want.dtype}"
    if value.dim() != 1 + len(want.shape) or tuple(value.shape[1:]) != want.shape:
        expected = ", ".join(["samples", *map(str, want.shape)])
        return f"'{key}' has shape {tuple(value.shape)}, expected ({expected})"
    return None


def _summary_problem(key: str, value: Any, size: int) -> str | None:
    """What is wrong with a statistics summary (None: nothing)."""
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        return f"'{key}' is not a dense tensor"
    if value.dtype != torch.float64 or tuple(value.shape) != (1, size):
        return f"'{key}' is {value.dtype} {tuple(value.shape)}, expected float64 (1, {size})"
    if not bool(torch.isfinite(value).all()):
        return f"'{key}' holds non-finite values"
    dim = (size - 1) // 2
    if value[0, 0] < 0 or bool((value[0, 1 + dim :] < 0).any()):
        return f"'{key}' holds a negative count or sum of squares"
    return None


def validate_rollout(
    content: Mapping[str, Any],
    spec: RolloutSpec,
    expected_size: int,
    *,
    path: Any = "",
    expected_version: int | None = None,
) -> None:
    """Checks a rollout file's content (as ``read_rollout`` returns it) against ``spec``.

    Args:
        content: the file's content; its ``data`` holds the tensors.
        spec: what a collector of this run writes.
        expected_size: the sample count the file's name states.
        path: the file, named in the error message.
        expected_version: the policy version the file's name states (None: not checked).

    Raises:
        InvalidRolloutError: one line naming the file and the first mismatch (missing or
            extra key, shape, dtype, inconsistent lengths, size not matching the name,
            non-finite values, policy version not matching the name).
    """
    problem = _problem(content.get("data"), spec, expected_size)
    if problem is None and expected_version is not None:
        version = content.get("policy_version")
        if isinstance(version, bool) or not isinstance(version, int):
            problem = f"policy_version is {type(version).__name__}, not an int"
        elif version != expected_version:
            problem = f"holds policy version {version}, its name says {expected_version}"
    if problem is not None:
        raise InvalidRolloutError(f"invalid rollout {path}: {problem}")
