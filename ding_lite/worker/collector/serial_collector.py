"""SerialCollector: rollouts on a TensorVectorEnv, returned with what the advantage step needs."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from ding_lite.envs.buffered import BufferedEnv, split_env
from ding_lite.envs.reward_fns import build_reward_fn
from ding_lite.model.normalizer import first_statistics
from ding_lite.policy.base import CollectMode
from ding_lite.policy.ppo.advantages import as_rows
from ding_lite.utils.rng import COLLECT_STREAM, RngStream, stream_seed
from ding_lite.worker.collector.collector_state import (
    Carry,
    RecentEpisodes,
    collector_state,
    load_collector_state,
)
from ding_lite.worker.collector.teacher import TeacherTrack, teacher_for


class SerialCollector(RecentEpisodes):
    """Steps ``env`` with the policy's collect mode; the learner computes the advantages.

    The env keeps running across calls: each ``collect()`` continues the episodes the last one
    left. Finished-episode statistics are kept for logging, outcomes (win / loss / draw) too
    when the env reports them in ``info["episode"]["outcome"]``.

    Args:
        env: a ``TensorVectorEnv`` (already created on its device), or a ``BufferedEnv`` of
            K groups of copies (``collector.async_factor``, see below). The collector
            steps it; :meth:`close` closes it.
        policy: the policy's ``collect_mode``.
        n_steps: env steps per copy in one rollout.
        gamma: discount factor (of the running return that ``reward_scale`` divides by).
        seed: seed of the first env reset.
        stats_window: finished episodes kept for ``recent_returns`` / ``recent_lengths`` /
            ``recent_outcomes``.
        horizon: steps per segment (``policy.learn.bptt_horizon``), a divisor of
            ``n_steps``. Above 1, a rollout's rows are ordered segment by segment (each
            segment ``horizon`` consecutive steps of one copy).
        episodes: also ship each row's ``episode`` number (per copy, counted from the first
            reset) and ``group`` (``copy // group_size``), which an episode-level advantage
            estimator needs (``ding_lite.policy.ppo.advantages``).
        group_size: env copies per reset group (``env.reset_group_size``).
        rng: the random stream actions are sampled from (None: torch's global generator);
            :meth:`from_config` gives one seeded from ``seed``, so a parallel collector
            samples what a serial run with its seed samples.
        next_obs: also ship ``next_obs``, the observation after each step (the final one
            where an episode ended), so the learner can recompute ``next_value``
            (``policy.learn.recompute_values``).
        greedy: the first policy row of each reset group acts with the most likely actions
            (the greedy baseline of ``remax``, whose advantage step drops those rows).
        teacher: a scripted teacher's track (``policy.learn.kickstart.teacher=agent:NAME``);
            its actions are shipped as ``teacher_action``.

    A recurrent policy (``policy.recurrent``) is stepped with its state, one per env copy,
    zeroed where an episode starts; each rollout also holds ``episode_start`` and the state
    at the start of every segment (``core_state``), from which the update replays it.

    An env with ``A = env.num_agents`` > 1 agents per copy is one policy row per agent: its
    ``[N, A, ...]`` outputs become ``N * A`` rows (copy-major) and the policy's actions go
    back as ``[N, A, ...]``; what ends per copy (dones, episode lengths) is repeated for each
    of its agents. ``envstep`` counts env steps (``N`` per step), a rollout holds agent steps
    (``T * N * A`` samples), finished-episode returns and outcomes are each agent's, and
    ``episodes`` counts copies' episodes.

    With a ``BufferedEnv`` of K groups, each env step acts for group 0's rows and starts
    its step (``step_async``), then group 1's, ..., then waits for all (``step_wait``):
    gymnasium ``vector_mode="async"`` groups step while the policy acts for the next. Rows
    keep one env's order; the policy draws per group, so sampled actions differ from K = 1.
    """

    def __init__(
        self,
        env: Any,
        policy: CollectMode,
        *,
        n_steps: int,
        gamma: float,
        seed: int = 0,
        stats_window: int = 100,
        horizon: int = 1,
        episodes: bool = False,
        group_size: int = 1,
        rng: RngStream | None = None,
        next_obs: bool = False,
        reward_fn: Callable[..., torch.Tensor] | None = None,
        greedy: bool = False,
        teacher: TeacherTrack | None = None,
    ) -> None:
        if horizon < 1 or n_steps % horizon:
            raise ValueError(f"n_steps={n_steps} is not a whole number of {horizon}-step segments")
        self.env = env
        self.policy = policy
        self.n_steps = n_steps
        self.horizon = horizon
        self.gamma = gamma
        self.rng = rng
        self.next_obs = next_obs
        self.reward_fn = reward_fn  # trained on in place of the env's reward (None: the env's)
        self.teacher = teacher
        self.agents = int(getattr(env, "num_agents", 1))
        rows = env.num_envs * self.agents  # policy rows per env step
        # Each row's reset group, for an episode-level estimator.
        self.stream = 0  #: shipped with episode numbers; a parallel collector draws its own
        copy_of_row = torch.arange(rows, device=env.device) // self.agents
        self._group = copy_of_row // group_size
        # remax's greedy rows: the first of each reset group (None: every row samples).
        self._greedy = None
        if greedy:
            self._greedy = torch.ones(rows, dtype=torch.bool, device=env.device)
            self._greedy[1:] = self._group[1:] != self._group[:-1]
        # The envs stepped in turn and the policy rows of each (one group: every row).
        self._groups = env.groups if isinstance(env, BufferedEnv) else [env]
        self._group_rows = BufferedEnv.row_slices(self._groups, self.agents)
        self.async_factor = len(self._groups)  #: env groups (buffers) stepped in turn
        obs, _ = env.reset(seed=seed)
        self.recurrent = bool(getattr(policy, "recurrent", False))
        self.carry = Carry.start(self._per_agent(obs), policy, episodes, self.recurrent, env.device)
        self.envstep = 0
        self.episodes = 0
        self.recent_returns: deque[float] = deque(maxlen=stats_window)
        self.recent_lengths: deque[int] = deque(maxlen=stats_window)
        #: Outcomes (+1 win, -1 loss, 0 draw); stays empty when the env reports none.
        self.recent_outcomes: deque[float] = deque(maxlen=stats_window)
        #: Returns, lengths and outcomes of the episodes that finished in the last rollout.
        self.last_returns: list[float] = []
        self.last_lengths: list[int] = []
        self.last_outcomes: list[float] = []
        self._alloc()

    @classmethod
    def from_config(cls, env: Any, policy: Any, cfg: Any, seed: int) -> SerialCollector:
        """The collector a run's config asks for, on ``env`` with ``policy`` (a Policy:
        its collect mode acts; an episode-level advantage estimator gets episode numbers).

        With ``collector.async_factor`` K > 1, ``env`` is closed and replaced by K envs of
        ``N / K`` copies built from ``cfg`` like it (``split_env``), owned by the collector.

        Raises:
            ConfigError: ``env.num_envs`` is not a multiple of K, or a group cannot be built.
        """
        if cfg.collector.async_factor > 1 and not isinstance(env, BufferedEnv):
            env = split_env(env, cfg, seed, cfg.collector.async_factor)
        collect = cfg.policy.collect
        return cls(
            env,
            policy.collect_mode,
            n_steps=collect.n_steps,
            gamma=collect.gamma,
            seed=seed,
            stats_window=cfg.collector.stats_window,
            horizon=cfg.policy.learn.bptt_horizon,
            episodes=policy.adv_estimator.episodic,
            group_size=cfg.env.reset_group_size,
            rng=RngStream(stream_seed(seed, COLLECT_STREAM), env.device),
            next_obs=bool(cfg.policy.learn.recompute_values),
            reward_fn=build_reward_fn(cfg.env.reward_fn, cfg.env.reward_fn_kwargs),
            greedy=policy.adv_estimator.greedy_baseline,
            teacher=teacher_for(cfg, env),
        )

    def _alloc(self) -> None:
        """Preallocates the rollout buffers [T, B, ...] on the env's device (B: rows, one
        per agent of every copy)."""
        env, T = self.env, self.n_steps
        B, dev = env.num_envs * self.agents, env.device
        self._b_obs = torch.empty((T, B, *env.obs_shape), device=dev)
        self._b_final_obs = torch.empty_like(self._b_obs)
        self._b_rewards = torch.empty((T, B), device=dev)
        self._b_values = torch.empty((T, B), device=dev)
        self._b_logprobs = torch.empty((T, B), device=dev)
        self._b_terminated = torch.empty((T, B), dtype=torch.bool, device=dev)
        self._b_dones = torch.empty((T, B), dtype=torch.bool, device=dev)
        self._b_ep_return = torch.empty((T, B), device=dev)
        self._b_ep_length = torch.empty((T, B), dtype=torch.long, device=dev)
        self._b_ep_mask = torch.empty((T, B), dtype=torch.bool, device=dev)
        obs_rms, ret_rms = _running_stats(self.policy)
        self._b_raw_obs = torch.empty_like(self._b_obs) if obs_rms is not None else None
        self._b_running_return = torch.empty_like(self._b_rewards) if ret_rms is not None else None
        self._b_actions: torch.Tensor | None = None
        self._b_ep_outcome: torch.Tensor | None = None  # allocated if the env reports outcomes
        if self.carry.episode is not None:
            self._b_episode = torch.empty((T, B), dtype=torch.long, device=dev)
        if self.recurrent:  # the state before each step, and where episodes start
            assert self.carry.core_state is not None  # a recurrent policy's carry has it
            self._b_state = torch.empty((T, *self.carry.core_state.shape), device=dev)
            self._b_start = torch.empty((T, B), dtype=torch.bool, device=dev)

    def collect(self) -> dict[str, torch.Tensor]:
        """Runs one rollout of ``n_steps`` env steps per copy.

        With the policy's running statistics (``obs_rms``, ``ret_rms``), observations are
        normalized and rewards scaled with them as they are (the policy version's), and the
        rollout also carries summaries of the raw observations and running returns it saw.

        Returns:
            Flat [T * B, ...] tensors (segment by segment when ``horizon`` > 1): ``obs``,
            ``action``, ``logp`` (behaviour log-prob) and ``value`` for the policy's update,
            and for its advantage step ``reward`` (scaled with ``reward_scale``),
            ``next_value`` (the value of the observation after the step, the final one
            where an episode ended), ``terminated`` and ``done``; with ``episodes``, also
            ``episode`` and ``group`` (int64); a recurrent policy's ``episode_start`` (bool
            [T * B]) and ``core_state`` ([T * B / horizon, state_size], the state at each
            segment's start); ``obs_norm_update`` and ``ret_norm_update`` (float64
            ``[1, summary size]``) with the statistics on.
        """
        if self.rng is None:
            return self._collect()
        with self.rng:
            return self._collect()

    @torch.inference_mode()
    def _collect(self) -> dict[str, torch.Tensor]:
        obs_rms, ret_rms = _running_stats(self.policy)
        if obs_rms is not None and obs_rms.count == 0:
            obs_rms = first_statistics(obs_rms, self.carry.obs)
        reward_std = ret_rms.std() if ret_rms is not None else 1.0
        raw = self.carry.obs
        for t in range(self.n_steps):
            if obs_rms is not None:
                assert self._b_raw_obs is not None  # allocated with the statistics
                self._b_raw_obs[t] = raw
                obs = obs_rms.normalize(raw)
            else:
                obs = raw
            self._b_obs[t] = obs
            if self.teacher is not None:
                self.teacher.record(t, raw)
            if self.recurrent:
                assert self.carry.core_state is not None and self.carry.episode_start is not None
                self._b_state[t] = self.carry.core_state
                self._b_start[t] = self.carry.episode_start
            action = self._act_and_step(t, obs)
            if self._b_actions is None:
                self._b_actions = torch.empty(
                    (self.n_steps, *action.shape), dtype=action.dtype, device=action.device
                )
            self._b_actions[t] = action
            results = [group.step_wait() for group in self._groups]
            before = raw
            raw, reward, terminated, truncated, info = BufferedEnv.concat(results)
            raw, reward = self._per_agent(raw), self._per_agent(reward)
            if self.reward_fn is not None:
                step = {"obs": before, "action": action, "reward": reward, "next_obs": raw}
                reward = self.reward_fn(**step, info=info)
            terminated, truncated = self._repeat(terminated), self._repeat(truncated)
            self._b_terminated[t] = terminated
            torch.logical_or(terminated, truncated, out=self._b_dones[t])
            if self.teacher is not None:
                self.teacher.ended(self._b_dones[t])
            if self.carry.episode is not None:
                self._b_episode[t] = self.carry.episode
                self.carry.episode += self._b_dones[t]
            if self.recurrent:
                self.carry.episode_start = self._b_dones[t].clone()
            if ret_rms is not None:
                assert self._b_running_return is not None  # allocated with the statistics
                self.carry.running_return.mul_(self.gamma).add_(reward)
                self._b_running_return[t] = self.carry.running_return
                self.carry.running_return.masked_fill_(self._b_dones[t], 0.0)
                reward = reward / reward_std
            self._b_rewards[t] = reward
            self._b_final_obs[t] = self._per_agent(info["final_obs"])
            episode = info["episode"]
            self._b_ep_return[t] = self._per_agent(episode["return"])
            self._b_ep_length[t] = self._repeat(episode["length"])
            self._b_ep_mask[t] = self._repeat(episode["mask"])
            if "outcome" in episode:
                if self._b_ep_outcome is None:
                    self._b_ep_outcome = torch.zeros_like(self._b_rewards)
                self._b_ep_outcome[t] = self._per_agent(episode["outcome"])
        self.carry.obs = raw
        T, B = self._b_rewards.shape
        # The obs after step t is the final obs for copies that ended, the next obs otherwise.
        final_obs = self._b_final_obs.flatten(0, 1)
        if obs_rms is not None:
            final_obs = obs_rms.normalize(final_obs)
        if self.recurrent:
            # The state after step t: the one stored before step t + 1 (before any reset),
            # and for the last step the one carried on.
            assert self.carry.core_state is not None
            after = torch.cat((self._b_state[1:], self.carry.core_state.unsqueeze(0))).flatten(0, 1)
            no_start = torch.zeros(T * B, dtype=torch.bool, device=after.device)
            next_values = self.policy.get_value(final_obs, after, no_start).view(T, B)
        else:
            next_values = self.policy.get_value(final_obs).view(T, B)
        # Env steps, whatever the agents per copy (a seated env's mirror rows step no copy).
        self.envstep += T * getattr(self.env, "env_copies", self.env.num_envs)
        mask = self._b_ep_mask
        self.last_returns = self._b_ep_return[mask].tolist()
        self.last_lengths = self._b_ep_length[mask].tolist()
        self.recent_returns.extend(self.last_returns)
        self.recent_lengths.extend(self.last_lengths)
        if self._b_ep_outcome is not None:
            self.last_outcomes = self._b_ep_outcome[mask].tolist()
            self.recent_outcomes.extend(self.last_outcomes)
        self.episodes += len(self.last_returns) // self.agents
        rows = functools.partial(as_rows, horizon=self.horizon)
        assert self._b_actions is not None  # allocated at the first step
        data = {
            "obs": rows(self._b_obs),
            "action": rows(self._b_actions),
            "logp": rows(self._b_logprobs),
            "value": rows(self._b_values),
            "reward": rows(self._b_rewards),
            "next_value": rows(next_values, copy=False),
            "terminated": rows(self._b_terminated),
            "done": rows(self._b_dones),
        }
        if self.next_obs:
            data["next_obs"] = rows(final_obs.view(self._b_obs.shape))
        if self.teacher is not None:
            assert self.teacher.actions is not None  # recorded at the first step
            data["teacher_action"] = rows(self.teacher.actions).to(data["action"].dtype)
        if self.carry.episode is not None:
            data["episode"] = rows(self._b_episode)
            data["group"] = rows(self._group.expand(T, B))
            dev = self.env.device
            data["stream"] = torch.full((T * B,), self.stream, device=dev)
            first = self.envstep // self.env.num_envs - T  # each row's step number per copy
            data["step"] = rows(torch.arange(first, first + T, device=dev)[:, None].expand(T, B))
        if self.recurrent:
            data["episode_start"] = rows(self._b_start)
            # The state at each segment's start, in the rows' segment order.
            starts = self._b_state[:: self.horizon]  # [T / horizon, B, S]
            if self.horizon > 1:
                starts = starts.movedim(1, 0)
            data["core_state"] = starts.flatten(0, 1).clone()
        if obs_rms is not None:
            assert self._b_raw_obs is not None
            data["obs_norm_update"] = obs_rms.summarize(self._b_raw_obs).unsqueeze(0)
        if ret_rms is not None:
            data["ret_norm_update"] = ret_rms.summarize(self._b_running_return).unsqueeze(0)
        return data

    def _act_and_step(self, t: int, obs: torch.Tensor) -> torch.Tensor:
        """Acts for each group's rows in turn (log-probs and values into step ``t``'s
        buffers) and starts that group's step without waiting; returns every row's action.
        """
        actions, states = [], []
        for group, rows in zip(self._groups, self._group_rows, strict=True):
            if self.recurrent:
                assert self.carry.core_state is not None and self.carry.episode_start is not None
                action, logp, value, state = self.policy.step(
                    obs[rows], self.carry.core_state[rows], self.carry.episode_start[rows]
                )
                states.append(state)
            else:
                action, logp, value = self.policy.forward(obs[rows])
                if self._greedy is not None:  # remax: each group's first row acts greedily
                    greedy = self._greedy[rows]
                    g_action, g_logp, _ = self.policy.forward(obs[rows][greedy], True)
                    action, logp = action.clone(), logp.clone()
                    action[greedy], logp[greedy] = g_action, g_logp
            self._b_logprobs[t, rows] = logp
            self._b_values[t, rows] = value
            group.step_async(self._per_copy_action(action))
            actions.append(action)
        if self.recurrent:
            self.carry.core_state = states[0] if len(states) == 1 else torch.cat(states)
        return actions[0] if len(actions) == 1 else torch.cat(actions)

    def _per_agent(self, x: torch.Tensor) -> torch.Tensor:
        """An env output with an agent axis ``[N, A, ...]`` as policy rows ``[N * A, ...]``."""
        return x if self.agents == 1 else x.flatten(0, 1)

    def _repeat(self, x: torch.Tensor) -> torch.Tensor:
        """A per-copy env output ``[N, ...]`` as policy rows, repeated for each agent."""
        return x if self.agents == 1 else x.repeat_interleave(self.agents, dim=0)

    def _per_copy_action(self, action: torch.Tensor) -> torch.Tensor:
        """The policy's actions ``[N * A, ...]`` as the env takes them, ``[N, A, ...]``."""
        return action if self.agents == 1 else action.unflatten(0, (-1, self.agents))

    def state_dict(self) -> dict[str, Any]:
        """Env state, current observation, counters and random stream, so a resumed run
        continues exactly."""
        return collector_state(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned (see :func:`load_collector_state`)."""
        load_collector_state(self, state)

    def close(self) -> None:
        """Closes the env it steps (all groups: gymnasium subprocesses end)."""
        self.env.close()


def _running_stats(policy: Any) -> tuple[Any, Any]:
    """The collect mode's ``(obs_rms, ret_rms)``; None for a policy without them."""
    return getattr(policy, "obs_rms", None), getattr(policy, "ret_rms", None)
