"""Actor-critic MLPs with heads built from the env's action space."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..envs.spaces import ActionSpace, Box, Discrete, Hybrid, MultiDiscrete
from .dists import (
    ActionBounds,
    ActionDist,
    CategoricalDist,
    GaussianDist,
    HybridDist,
    MultiCategoricalDist,
)
from .layers import layer_init, mlp_layers
from .normalizer import RunningNorm
from .recurrent import CORES, RecurrentCore

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"tanh": torch.tanh, "relu": torch.relu}
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
HYBRID_MEAN_BOUND = 5.0
"""Pre-squash means of a Hybrid space's Gaussian are softly bounded to +-this
(``b * tanh(x / b)``). ``tanh(5)`` is 0.99991, full deflection for any purpose, while an
unbounded mean drifts far past the +-7.25 that a float32 squashed action can still encode:
the log-probability of a stored action then no longer matches the one it was sampled with,
and PPO's ratio overflows."""
"""Range that state-dependent log-std heads are clamped to."""


class ActorCritic(nn.Module):
    """An MLP actor and critic whose policy head fits the action space.

    Heads by action space:

    - ``Discrete(n)``: ``n`` logits -> :class:`CategoricalDist`.
    - ``Box(low, high)``: Gaussian mean plus a learned log-std (a parameter, or a head if
      ``state_dependent_std``) -> :class:`GaussianDist`. Actions are unbounded; the env clips.
    - ``Hybrid(continuous, discrete)``: mean and (always state-dependent) log-std of a
      tanh-squashed Gaussian mapped onto ``continuous``'s bounds, plus logits for each
      discrete part -> :class:`HybridDist`.
    - ``MultiDiscrete(nvec)``: logits for each part, padded to the largest part with -inf
      -> :class:`MultiCategoricalDist`.

    All policy outputs come from one linear layer that is then sliced, to keep the number
    of small kernels per forward low.

    Args:
        obs_dim: Size of a flat observation, or the observation shape (flattened on input).
        action_space: The env's action space.
        hidden_sizes: Widths of the hidden layers of each MLP; empty for linear heads.
        activation: ``"tanh"`` or ``"relu"``.
        share_encoder: Use one MLP trunk for actor and critic instead of two.
        log_std_init: Initial log standard deviation of Gaussian heads.
        state_dependent_std: For ``Box``, predict log-std from the observation instead of
            learning one parameter per action dimension. ``Hybrid`` always predicts it.
        zero_init_value: Zero the value head's weight and bias, so initial values are 0.
        ortho_init: Orthogonal init, gain sqrt(2) for hidden layers, 0.01 for the policy
            head and 1 for the value head, zero biases (PPO practice); else PyTorch's init.
        obs_norm: Keep running observation statistics (``obs_rms``, a
            :class:`RunningNorm`); callers normalize with :meth:`normalize_obs`. The model's
            own forward passes never normalize: rollouts store normalized observations.
        obs_clip: Normalized observations are clipped to [-obs_clip, obs_clip].
        return_norm: Keep running statistics of the discounted return (``ret_rms``), by
            which collectors scale rewards (``policy.learn.reward_scale``).
        core: ``"none"``, or ``"lstm"`` / ``"gru"`` for a policy with memory: a
            :class:`~ding_lite.model.recurrent.RecurrentCore` between one shared encoder
            (``share_encoder`` has no effect) and the heads. Its state is carried by the
            caller (see :meth:`step` and :meth:`forward`).
        core_size: Hidden size of the recurrent core.

    Raises:
        ValueError: For an unknown activation or core, an unsupported or empty action space,
            or a ``Hybrid`` continuous part with non-finite bounds.
    """

    def __init__(
        self,
        obs_dim: int | Sequence[int],
        action_space: ActionSpace,
        *,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: str = "tanh",
        share_encoder: bool = False,
        log_std_init: float = 0.0,
        state_dependent_std: bool = False,
        zero_init_value: bool = False,
        ortho_init: bool = True,
        obs_norm: bool = False,
        obs_clip: float = 10.0,
        return_norm: bool = False,
        core: str = "none",
        core_size: int = 128,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
        if core not in ("none", *CORES):
            raise ValueError(f"unknown core {core!r}; known: none, {', '.join(CORES)}")
        if core != "none":
            share_encoder = True  # one encoder feeds the one core
        shape = (obs_dim,) if isinstance(obs_dim, int) else tuple(int(s) for s in obs_dim)
        flat_dim = math.prod(shape)
        if flat_dim < 1:
            raise ValueError(f"observation shape {shape} is empty")
        self.action_space = action_space
        self.share_encoder = share_encoder
        hidden_sizes = tuple(int(h) for h in hidden_sizes)
        feat_dim = hidden_sizes[-1] if hidden_sizes else flat_dim

        self._activation = ACTIVATIONS[activation]
        self._flatten = len(shape) > 1
        self.actor_encoder = mlp_layers(flat_dim, hidden_sizes, ortho_init)
        self.critic_encoder = (
            None if share_encoder else mlp_layers(flat_dim, hidden_sizes, ortho_init)
        )
        #: The recurrent core (None: a feed-forward policy, no state).
        self.core = None if core == "none" else RecurrentCore(core, feat_dim, int(core_size))
        if self.core is not None:
            feat_dim = self.core.hidden_size

        self._kind, head_dim, log_std_cols = self._plan_heads(action_space, state_dependent_std)
        self.policy_head = layer_init(nn.Linear(feat_dim, head_dim), 0.01, ortho_init)
        self.value_head = layer_init(nn.Linear(feat_dim, 1), 1.0, ortho_init)
        if zero_init_value:
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)
        if log_std_cols is not None:
            with torch.no_grad():
                self.policy_head.bias[log_std_cols].fill_(log_std_init)
        # A state-independent log-std, one per action dimension (Box only).
        self.log_std: nn.Parameter | None = None
        if self._kind == "box" and not state_dependent_std:
            self.log_std = nn.Parameter(torch.full((self._act_dim,), float(log_std_init)))
        # Statistics are buffers: they go out with every policy file and checkpoint.
        self.obs_rms = RunningNorm(shape, clip=obs_clip) if obs_norm else None
        self.ret_rms = RunningNorm(()) if return_norm else None

    def normalize_obs(self, obs: Tensor) -> Tensor:
        """Raw observations ``[B, *obs_shape]`` normalized with the running statistics
        (unchanged without ``obs_norm``)."""
        return obs if self.obs_rms is None else self.obs_rms.normalize(obs)

    def _plan_heads(
        self, space: ActionSpace, state_dependent_std: bool
    ) -> tuple[str, int, slice | None]:
        """Sets the head bookkeeping; returns (kind, head width, log-std columns)."""
        self._act_dim = 0
        self._n_parts = 0
        self._n_max = 0
        self._bounded = False
        self.register_buffer("logits_mask", None)
        if isinstance(space, Discrete):
            if space.n < 1:
                raise ValueError(f"Discrete action space needs n >= 1; got {space.n}")
            return "discrete", space.n, None
        if isinstance(space, Box):
            d = self._act_dim = space.dim
            if d < 1:
                raise ValueError("Box action space has no dimensions")
            if state_dependent_std:
                return "box", 2 * d, slice(d, 2 * d)
            return "box", d, None
        if isinstance(space, Hybrid):
            d = self._act_dim = space.continuous.dim
            if d < 1:
                raise ValueError("Hybrid action space needs a continuous part with dim >= 1")
            low = torch.tensor(space.continuous.low, dtype=torch.float32)
            high = torch.tensor(space.continuous.high, dtype=torch.float32)
            if not (
                torch.isfinite(low).all() and torch.isfinite(high).all() and (low < high).all()
            ):
                raise ValueError(
                    "Hybrid continuous bounds must be finite with low < high to squash onto; "
                    f"got low={space.continuous.low}, high={space.continuous.high}"
                )
            bounds = ActionBounds.from_low_high(low, high)
            self._bounded = not (bool((low == -1).all()) and bool((high == 1).all()))
            self.register_buffer("action_loc", bounds.loc)
            self.register_buffer("action_scale", bounds.scale)
            self.register_buffer("action_log_scale", bounds.log_scale)
            parts = tuple(int(n) for n in space.discrete)
            if any(n < 1 for n in parts):
                raise ValueError(f"Hybrid discrete parts need >= 1 choice each; got {parts}")
            self._plan_parts(parts)
            return "hybrid", 2 * d + self._n_parts * self._n_max, slice(d, 2 * d)
        if isinstance(space, MultiDiscrete):
            self._plan_parts(tuple(int(n) for n in space.nvec))
            return "multi_discrete", self._n_parts * self._n_max, None
        raise ValueError(
            f"unsupported action space {type(space).__name__}; supported: Discrete, Box, "
            "Hybrid, MultiDiscrete"
        )

    def _plan_parts(self, parts: tuple[int, ...]) -> None:
        """Sets up ``k`` discrete parts whose logits are padded to the largest part."""
        self._n_parts = len(parts)
        self._n_max = max(parts, default=0)
        if len(set(parts)) > 1:
            mask = torch.zeros(len(parts), self._n_max)
            for i, n in enumerate(parts):
                mask[i, n:] = -math.inf
            self.logits_mask = mask

    def _part_logits(self, out: Tensor) -> Tensor:
        """Logits [B, k, n_max] of the discrete parts from their head columns [B, k * n_max]."""
        logits = out.unflatten(-1, (self._n_parts, self._n_max))
        return logits if self.logits_mask is None else logits + self.logits_mask

    def _encode(self, layers: nn.ModuleList, x: Tensor) -> Tensor:
        # Functional calls skip nn.Module.__call__, a large share of the cost at small B.
        act = self._activation
        for layer in layers:
            x = act(F.linear(x, layer.weight, layer.bias))
        return x

    def _features(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        if self._flatten:
            obs = obs.flatten(1)
        h_pi = self._encode(self.actor_encoder, obs)
        if self.critic_encoder is None:
            return h_pi, h_pi
        return h_pi, self._encode(self.critic_encoder, obs)

    def _value(self, h_v: Tensor) -> Tensor:
        head = self.value_head
        return F.linear(h_v, head.weight, head.bias).squeeze(-1)

    def _dist(self, h_pi: Tensor) -> ActionDist:
        head = self.policy_head
        out = F.linear(h_pi, head.weight, head.bias)
        if self._kind == "discrete":
            return CategoricalDist(out)
        if self._kind == "multi_discrete":
            return MultiCategoricalDist(self._part_logits(out))
        d = self._act_dim
        if self._kind == "box":
            if self.log_std is not None:
                return GaussianDist(out, self.log_std)
            log_std = out[:, d:].clamp(LOG_STD_MIN, LOG_STD_MAX)
            return GaussianDist(out[:, :d], log_std)
        log_std = out[:, d : 2 * d].clamp(LOG_STD_MIN, LOG_STD_MAX)
        logits = self._part_logits(out[:, 2 * d :]) if self._n_parts else None
        bounds = None
        if self._bounded:
            bounds = ActionBounds(self.action_loc, self.action_scale, self.action_log_scale)
        mean = torch.tanh(out[:, :d] * (1.0 / HYBRID_MEAN_BOUND)) * HYBRID_MEAN_BOUND
        return HybridDist(mean, log_std, logits, bounds)

    @property
    def recurrent(self) -> bool:
        """Whether the model has a recurrent core (a state to carry between steps)."""
        return self.core is not None

    @property
    def state_size(self) -> int:
        """Width of the flat recurrent state (0 without a core)."""
        return 0 if self.core is None else self.core.state_size

    def initial_state(self, batch: int, device: str | torch.device | None = None) -> Tensor:
        """The state every episode starts from: zeros ``[batch, state_size]``."""
        device = self.value_head.weight.device if device is None else device
        if self.core is None:
            return torch.zeros(batch, 0, device=device)
        return self.core.initial_state(batch, device)

    def _core_features(
        self, obs: Tensor, state: Tensor | None, episode_start: Tensor | None
    ) -> Tensor:
        """Encoder then core over segments: ``obs`` holds ``S`` segments of ``T`` steps,
        segment-major (``[S * T, ...]``), ``state`` their start states ``[S, state_size]``,
        ``episode_start`` bool ``[S * T]``. Returns features ``[S * T, core_size]``."""
        if state is None or episode_start is None:
            raise ValueError("a recurrent model needs the state and episode_start of its inputs")
        if self._flatten:
            obs = obs.flatten(1)
        segments = state.shape[0]
        rows = obs.shape[0]
        if segments < 1 or rows % segments:
            raise ValueError(f"{rows} rows do not split into {segments} segments")
        steps = rows // segments
        x = self._encode(self.actor_encoder, obs).unflatten(0, (segments, steps))
        starts = episode_start.view(segments, steps).transpose(0, 1)
        out, _ = self.core(x.transpose(0, 1), state, starts)
        return out.transpose(0, 1).flatten(0, 1)

    def forward(
        self, obs: Tensor, state: Tensor | None = None, episode_start: Tensor | None = None
    ) -> tuple[ActionDist, Tensor]:
        """Runs actor and critic.

        Args:
            obs: Observations, shape [B, obs_dim] (or ``[B, *obs_shape]``). With a core: S
                segments of T steps each, segment-major (row ``s * T + t``).
            state: With a core, the state at the start of each segment, ``[S, state_size]``
                (ignored without one).
            episode_start: With a core, bool [B]: rows whose episode starts there (the state
                is zeroed before that step).

        Returns:
            ``(dist, value)``: the action distribution over B rows and values of shape [B].
        """
        if self.core is not None:
            h = self._core_features(obs, state, episode_start)
            return self._dist(h), self._value(h)
        h_pi, h_v = self._features(obs)
        return self._dist(h_pi), self._value(h_v)

    def get_value(
        self, obs: Tensor, state: Tensor | None = None, episode_start: Tensor | None = None
    ) -> Tensor:
        """Returns V(obs), shape [B]; runs only the critic (and shared trunk). With a core,
        ``state`` and ``episode_start`` as in :meth:`forward`."""
        if self.core is not None:
            return self._value(self._core_features(obs, state, episode_start))
        if self._flatten:
            obs = obs.flatten(1)
        layers = self.actor_encoder if self.critic_encoder is None else self.critic_encoder
        return self._value(self._encode(layers, obs))

    def get_dist(
        self, obs: Tensor, state: Tensor | None = None, episode_start: Tensor | None = None
    ) -> ActionDist:
        """Returns the action distribution for ``obs`` [B, ...]; runs only the actor. With a
        core, ``state`` and ``episode_start`` as in :meth:`forward`."""
        if self.core is not None:
            return self._dist(self._core_features(obs, state, episode_start))
        if self._flatten:
            obs = obs.flatten(1)
        return self._dist(self._encode(self.actor_encoder, obs))

    @torch.no_grad()
    def act(self, obs: Tensor, deterministic: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        """Chooses actions for the collector in one forward pass, without gradient.

        Args:
            obs: Observations, shape [B, obs_dim].
            deterministic: Take the distribution's mode instead of sampling.

        Returns:
            ``(action, log_prob, value)``: actions in the space's encoding (int64 [B] for
            Discrete, int64 [B, k] for MultiDiscrete, float [B, d] for Box and Hybrid), their
            log-probabilities [B] (equal to ``get_dist(obs).log_prob(action)``) and values [B].
        """
        dist, value = self(obs)
        action = dist.mode() if deterministic else dist.sample()
        return action, dist.log_prob(action), value

    @torch.no_grad()
    def step(
        self, obs: Tensor, state: Tensor, episode_start: Tensor, deterministic: bool = False
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """One env step of a recurrent policy: :meth:`act` with the state carried.

        Args:
            obs: Observations [B, ...].
            state: Each row's state before this step, ``[B, state_size]``.
            episode_start: Bool [B]: rows whose episode starts with ``obs`` (their state is
                zeroed first).
            deterministic: Take the distribution's mode instead of sampling.

        Returns:
            ``(action, log_prob, value, state)``; ``state`` is the one after this step.
            Without a core, :meth:`act`'s outputs and the state unchanged.
        """
        if self.core is None:
            return (*self.act(obs, deterministic), state)
        if self._flatten:
            obs = obs.flatten(1)
        h, state = self.core.step(self._encode(self.actor_encoder, obs), state, episode_start)
        dist = self._dist(h)
        action = dist.mode() if deterministic else dist.sample()
        return action, dist.log_prob(action), self._value(h), state

    def evaluate_actions(self, obs: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Scores stored actions for the PPO update (with gradient).

        Args:
            obs: Observations, shape [B, obs_dim].
            action: Actions as returned by :meth:`act`.

        Returns:
            ``(log_prob, entropy, value)``, each of shape [B].
        """
        dist, value = self(obs)
        return dist.log_prob(action), dist.entropy(), value
