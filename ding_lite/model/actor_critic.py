"""Actor-critic MLPs with heads built from the env's action space."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..envs.spaces import ActionSpace
from .dists import ActionDist
from .encoders import ACTIVATIONS, ENCODERS, Encoder, build_encoder
from .heads import PolicyHead
from .layers import layer_init
from .normalizer import RunningNorm
from .recurrent import CORES, RecurrentCore


class ActorCritic(PolicyHead):
    """An actor and critic (MLP or CNN encoders) whose policy head fits the action space.

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
        share_encoder: Use one trunk (encoder) for actor and critic instead of two.
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
            :class:`~ding_lite.model.recurrent.RecurrentCore` between the encoder and the
            heads. With ``share_encoder`` actor and critic share encoder and core; without,
            each has its own (the critic's memory then cannot disturb the actor's, as with
            SB3-contrib's ``enable_critic_lstm``), and the state holds both cores' states,
            the actor's first. The state is carried by the caller (see :meth:`step` and
            :meth:`forward`).
        core_size: Hidden size of the recurrent core.
        critic: Build a critic (value head, and its own trunk unless shared). Without one,
            for critic-free estimators, every value is 0 and the model holds no critic
            parameter at all.
        sde: For ``Box``, state-dependent exploration (:mod:`~ding_lite.model.sde`): a
            ``[features, d]`` log-std matrix ``sde_log_std`` instead of ``log_std``.
        sde_sample_freq: With ``sde``, samples between new exploration matrices.
        encoder: ``"mlp"`` (observations flattened) or ``"cnn"`` (``[C, H, W]``
            observations through convolutions, then ``hidden_sizes``); see
            :mod:`~ding_lite.model.encoders`.
        cnn_channels: With ``encoder="cnn"``, the output channels of each convolution.
        cnn_kernel: With ``encoder="cnn"``, the side of each convolution's kernel.

    Raises:
        ValueError: For an unknown activation, encoder or core, a ``cnn`` encoder on
            observations not shaped ``[C, H, W]``, an unsupported or empty action space,
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
        critic: bool = True,
        sde: bool = False,
        sde_sample_freq: int = 4,
        encoder: str = "mlp",
        cnn_channels: Sequence[int] = (32, 32),
        cnn_kernel: int = 3,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; known: {', '.join(ACTIVATIONS)}")
        if encoder not in ENCODERS:
            raise ValueError(
                f"unknown policy.model.encoder {encoder!r}; known: {', '.join(ENCODERS)}"
            )
        if core not in ("none", *CORES):
            raise ValueError(f"unknown core {core!r}; known: none, {', '.join(CORES)}")
        shape = (obs_dim,) if isinstance(obs_dim, int) else tuple(int(s) for s in obs_dim)
        flat_dim = math.prod(shape)
        if flat_dim < 1:
            raise ValueError(f"observation shape {shape} is empty")
        self.action_space = action_space
        self.critic = bool(critic)
        share_encoder = share_encoder or not critic  # no critic trunk to build
        self.share_encoder = share_encoder
        hidden_sizes = tuple(int(h) for h in hidden_sizes)

        def trunk() -> Encoder:
            return build_encoder(
                encoder, shape, hidden_sizes, activation, ortho_init, cnn_channels, cnn_kernel
            )

        self.actor_encoder = trunk()
        self.critic_encoder = None if share_encoder else trunk()
        feat_dim = self.actor_encoder.out_dim
        #: The recurrent core (None: a feed-forward policy, no state); the actor's only
        #: when ``critic_core`` is set.
        self.core = None if core == "none" else RecurrentCore(core, feat_dim, int(core_size))
        self.critic_core = (
            None
            if self.core is None or share_encoder
            else RecurrentCore(core, feat_dim, int(core_size))
        )
        if self.core is not None:
            feat_dim = self.core.hidden_size

        self._kind, head_dim, log_std_cols = self._plan_heads(action_space, state_dependent_std)
        self.policy_head = layer_init(nn.Linear(feat_dim, head_dim), 0.01, ortho_init)
        self.value_head = layer_init(nn.Linear(feat_dim, 1), 1.0, ortho_init) if critic else None
        if zero_init_value and self.value_head is not None:
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)
        if log_std_cols is not None:
            with torch.no_grad():
                self.policy_head.bias[log_std_cols].fill_(log_std_init)
        self._plan_sde(sde, sde_sample_freq, feat_dim, log_std_init, state_dependent_std)
        # A state-independent log-std, one per action dimension (Box only).
        self.log_std: nn.Parameter | None = None
        if self._kind == "box" and not state_dependent_std and not sde:
            self.log_std = nn.Parameter(torch.full((self._act_dim,), float(log_std_init)))
        # Statistics are buffers: they go out with every policy file and checkpoint.
        self.obs_rms = RunningNorm(shape, clip=obs_clip) if obs_norm else None
        self.ret_rms = RunningNorm(()) if return_norm else None

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``; with ``strict``, a mismatch is one ``RuntimeError``
        line naming the first missing, unexpected or misshapen entries (torch's own message
        puts them on later lines, after a heading)."""
        if strict:
            problem = self._mismatch(state_dict)
            if problem:
                raise RuntimeError(problem)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def _mismatch(self, state_dict: Any) -> str:
        """One line describing how ``state_dict`` differs from this model's ("" if it fits)."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        shapes = [
            f"{k} {list(v.shape)} (the model has {list(own[k].shape)})"
            for k, v in state_dict.items()
            if k in own and isinstance(v, Tensor) and v.shape != own[k].shape
        ]
        parts = [
            f"{label} {', '.join(keys[:3])}"
            + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
            for label, keys in (
                ("missing", missing),
                ("unexpected", unexpected),
                ("shape of", shapes),
            )
            if keys
        ]
        if not parts:
            return ""
        critic_only = all(k.startswith(("critic_core.", "critic_encoder.")) for k in missing)
        if self.critic_core is not None and missing and critic_only and not unexpected:
            parts.append(
                "its recurrent actor and critic share one trunk: load it with "
                "policy.model.share_encoder=true"
            )
        return "model state does not fit: " + "; ".join(parts)

    def normalize_obs(self, obs: Tensor) -> Tensor:
        """Raw observations ``[B, *obs_shape]`` normalized with the running statistics
        (unchanged without ``obs_norm``)."""
        return obs if self.obs_rms is None else self.obs_rms.normalize(obs)

    def _encode(self, encoder: Encoder, x: Tensor) -> Tensor:
        return encoder.encode(x)  # functional: skips nn.Module.__call__

    def _features(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        h_pi = self._encode(self.actor_encoder, obs)
        if self.critic_encoder is None:
            return h_pi, h_pi
        return h_pi, self._encode(self.critic_encoder, obs)

    def _value(self, h_v: Tensor) -> Tensor:
        head = self.value_head
        if head is None:
            return h_v.new_zeros(h_v.shape[0])
        return F.linear(h_v, head.weight, head.bias).squeeze(-1)

    @property
    def recurrent(self) -> bool:
        """Whether the model has a recurrent core (a state to carry between steps)."""
        return self.core is not None

    @property
    def state_size(self) -> int:
        """Width of the flat recurrent state (0 without a core)."""
        if self.core is None:
            return 0
        return self.core.state_size * (1 if self.critic_core is None else 2)

    def initial_state(self, batch: int, device: str | torch.device | None = None) -> Tensor:
        """The state every episode starts from: zeros ``[batch, state_size]``."""
        weight = self.policy_head.weight
        device = weight.device if device is None else device
        return torch.zeros(batch, self.state_size, device=device, dtype=weight.dtype)

    def _segments(
        self, obs: Tensor, state: Tensor | None, episode_start: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Checks a recurrent input: ``obs`` holds ``S`` segments of ``T`` steps,
        segment-major (``[S * T, ...]``), ``state`` their start states ``[S, state_size]``,
        ``episode_start`` bool ``[S * T]``. Returns the observations ``[S * T, ...]``,
        the states and the episode starts ``[T, S]``."""
        if state is None or episode_start is None:
            raise ValueError("a recurrent model needs the state and episode_start of its inputs")
        segments = state.shape[0]
        rows = obs.shape[0]
        if segments < 1 or rows % segments:
            raise ValueError(f"{rows} rows do not split into {segments} segments")
        starts = episode_start.view(segments, rows // segments).transpose(0, 1)
        return obs, state, starts

    def _replay(
        self,
        encoder: Encoder,
        core: RecurrentCore,
        obs: Tensor,
        state: Tensor,
        starts: Tensor,
    ) -> Tensor:
        """One trunk (encoder then core) over segments; features ``[S * T, core_size]``."""
        segments, steps = state.shape[0], starts.shape[0]
        x = self._encode(encoder, obs).unflatten(0, (segments, steps))
        out, _ = core(x.transpose(0, 1), state, starts)
        return out.transpose(0, 1).flatten(0, 1)

    def _actor_features(self, obs: Tensor, state: Tensor, starts: Tensor) -> Tensor:
        assert self.core is not None
        return self._replay(
            self.actor_encoder, self.core, obs, state[:, : self.core.state_size], starts
        )

    def _critic_features(self, obs: Tensor, state: Tensor, starts: Tensor) -> Tensor:
        if self.critic_core is None:
            return self._actor_features(obs, state, starts)
        assert self.critic_encoder is not None and self.core is not None
        own = state[:, self.core.state_size :]
        return self._replay(self.critic_encoder, self.critic_core, obs, own, starts)

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
            obs, state, starts = self._segments(obs, state, episode_start)
            h_pi = self._actor_features(obs, state, starts)
            h_v = h_pi if self.critic_core is None else self._critic_features(obs, state, starts)
            return self._dist(h_pi), self._value(h_v)
        h_pi, h_v = self._features(obs)
        return self._dist(h_pi), self._value(h_v)

    def get_value(
        self, obs: Tensor, state: Tensor | None = None, episode_start: Tensor | None = None
    ) -> Tensor:
        """Returns V(obs), shape [B]; runs only the critic (and shared trunk). With a core,
        ``state`` and ``episode_start`` as in :meth:`forward`. Without a critic: zeros."""
        if self.value_head is None:
            return obs.new_zeros(obs.shape[0])
        if self.core is not None:
            return self._value(self._critic_features(*self._segments(obs, state, episode_start)))
        layers = self.actor_encoder if self.critic_encoder is None else self.critic_encoder
        return self._value(self._encode(layers, obs))

    def get_dist(
        self, obs: Tensor, state: Tensor | None = None, episode_start: Tensor | None = None
    ) -> ActionDist:
        """Returns the action distribution for ``obs`` [B, ...]; runs only the actor. With a
        core, ``state`` and ``episode_start`` as in :meth:`forward`."""
        if self.core is not None:
            return self._dist(self._actor_features(*self._segments(obs, state, episode_start)))
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
        size = self.core.state_size
        h, actor_state = self.core.step(
            self._encode(self.actor_encoder, obs), state[:, :size], episode_start
        )
        h_v = h
        if self.critic_core is not None:
            assert self.critic_encoder is not None
            h_v, critic_state = self.critic_core.step(
                self._encode(self.critic_encoder, obs), state[:, size:], episode_start
            )
            actor_state = torch.cat((actor_state, critic_state), dim=1)
        dist = self._dist(h)
        action = dist.mode() if deterministic else dist.sample()
        return action, dist.log_prob(action), self._value(h_v), actor_state

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
