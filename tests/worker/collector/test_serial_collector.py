import pytest
import torch

from ding_lite.config import get_config
from ding_lite.envs import CartPoleEnv, create_env
from ding_lite.policy import PPOPolicy
from ding_lite.rl_utils import gae
from ding_lite.worker.collector import Evaluator, SerialCollector


def _policy(env, n_steps):
    """A cartpole PPO policy whose advantage step uses the collector's n_steps and
    gamma 0.9, lambda 0.8."""
    cfg = get_config("cartpole_ppo")
    cfg.policy.collect.update(n_steps=n_steps, gamma=0.9, gae_lambda=0.8)
    return PPOPolicy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)


def make(env_name="cartpole", num_envs=3, n_steps=40, seed=0):
    env = create_env(env_name, num_envs, seed=seed)
    policy = _policy(env, n_steps)
    collector = SerialCollector(env, policy.collect_mode, n_steps=n_steps, gamma=0.9, seed=seed)
    return env, policy, collector


def test_collect_shapes_and_counters():
    env, policy, collector = make(n_steps=40)
    data = collector.collect()
    assert data["obs"].shape == (120, 4)
    for key in ("action", "logp", "value", "reward", "next_value", "terminated", "done"):
        assert data[key].shape == (120,), key
    assert data["reward"].dtype == data["next_value"].dtype == torch.get_default_dtype()
    assert data["terminated"].dtype == data["done"].dtype == torch.bool
    assert collector.envstep == 120
    batch = policy.learn_mode.prepare(data)
    for key in ("adv", "ret"):
        assert batch[key].shape == (120,), key
    assert not {"reward", "next_value", "terminated", "done"} & set(batch)
    assert torch.allclose(batch["ret"], batch["adv"] + batch["value"])
    collector.collect()
    assert collector.envstep == 240
    # a random CartPole policy finishes episodes within 80 steps per copy
    assert collector.episodes > 0 and len(collector.recent_returns) == collector.episodes


def test_advantages_match_gae_over_the_rollout():
    """Rebuild the rollout by hand (same env seed, same actions) and compare advantages."""
    env, policy, collector = make(n_steps=30, num_envs=2, seed=4)
    data = collector.collect()
    T, B = 30, 2
    actions = data["action"].view(T, B)
    ref_env = create_env("cartpole", B, seed=4)
    obs, _ = ref_env.reset(seed=4)
    rewards, values, next_values, term, dones = [], [], [], [], []
    for t in range(T):
        with torch.no_grad():
            values.append(policy.model.get_value(obs))
        obs, r, te, tr, info = ref_env.step(actions[t])
        with torch.no_grad():
            next_values.append(policy.model.get_value(info["final_obs"]))
        rewards.append(r)
        term.append(te)
        dones.append(te | tr)
    stack = torch.stack
    adv = gae(
        stack(rewards), stack(values), stack(next_values), stack(term), stack(dones), 0.9, 0.8
    )
    torch.testing.assert_close(policy.learn_mode.prepare(data)["adv"], adv.flatten())
    torch.testing.assert_close(data["value"], stack(values).flatten())
    torch.testing.assert_close(data["reward"], stack(rewards).flatten())
    torch.testing.assert_close(data["next_value"], stack(next_values).flatten())
    assert torch.equal(data["terminated"], stack(term).flatten())
    assert torch.equal(data["done"], stack(dones).flatten())


def test_state_dict_round_trip_continues_identically():
    _, policy_a, a = make(seed=2)
    a.collect()
    state = a.state_dict()
    rng = torch.get_rng_state()
    first = a.collect()
    _, _, b = make(seed=99)
    b.load_state_dict(state)
    torch.set_rng_state(rng)
    b.policy.load_state_dict(policy_a.state_dict())  # the collect mode loads the model
    second = b.collect()
    for key in first:
        assert torch.equal(first[key], second[key]), key
    assert b.envstep == a.envstep


def test_evaluator_runs_one_episode_per_copy_and_decides_stop():
    env, policy, _ = make()
    eval_env = create_env("cartpole", 5, seed=1)
    evaluator = Evaluator(eval_env, policy.eval_mode, stop_value=5.0, seed=1)
    result = evaluator.eval()
    assert result.n_episodes == 5
    assert result.return_mean >= 8  # CartPole episodes last at least ~8 steps
    assert result.solved
    again = evaluator.eval()
    assert again.return_mean == result.return_mean  # same seed, deterministic actions
    assert not Evaluator(eval_env, policy.eval_mode, stop_value=1e9, seed=1).eval().solved


class _ScoredCartPole(CartPoleEnv):
    """CartPole that reports outcomes: an even episode length wins, an odd one loses."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        episode = info["episode"]
        episode["outcome"] = torch.where(episode["length"] % 2 == 0, 1.0, -1.0)
        return obs, reward, terminated, truncated, info


def _collector(env, stats_window=100):
    policy = _policy(env, 40)
    kwargs = dict(n_steps=40, gamma=0.9)
    return SerialCollector(env, policy.collect_mode, stats_window=stats_window, **kwargs), policy


def test_outcomes_are_kept_like_returns_and_give_rates():
    collector, _ = _collector(_ScoredCartPole(num_envs=8, seed=0), stats_window=7)
    assert collector.outcome_rates() is None  # no episode finished yet
    collector.collect()
    collector.collect()
    assert len(collector.recent_outcomes) == len(collector.recent_returns) == 7
    expected = [1.0 if n % 2 == 0 else -1.0 for n in collector.recent_lengths]
    assert list(collector.recent_outcomes) == expected
    assert len(collector.last_outcomes) == len(collector.last_returns)
    wins = expected.count(1.0) / 7
    assert collector.outcome_rates() == pytest.approx(
        {"win_rate": wins, "loss_rate": 1.0 - wins, "draw_rate": 0.0}
    )
    # Checkpoints carry the outcomes; ones written before outcomes existed load as empty.
    state = collector.state_dict()
    fresh, _ = _collector(_ScoredCartPole(num_envs=8, seed=5), stats_window=7)
    fresh.load_state_dict(state)
    assert fresh.recent_outcomes == collector.recent_outcomes
    del state["recent_outcomes"]
    fresh.load_state_dict(state)
    assert not fresh.recent_outcomes and fresh.outcome_rates() is None


def test_envs_without_outcomes_report_none():
    _, _, collector = make()
    collector.collect()
    assert collector.episodes > 0
    assert not collector.recent_outcomes and collector.outcome_rates() is None
    assert collector.state_dict()["recent_outcomes"] == []


def test_evaluator_counts_first_episode_outcomes():
    _, policy = _collector(_ScoredCartPole(num_envs=1))
    eval_env = _ScoredCartPole(num_envs=6, seed=2)
    result = Evaluator(eval_env, policy.eval_mode, seed=2).eval()
    # Replay the same evaluation by hand to get each copy's first episode length.
    obs, _ = eval_env.reset(seed=2)
    lengths = torch.zeros(6, dtype=torch.long)
    while (lengths == 0).any():
        obs, _, _, _, info = eval_env.step(policy.eval_mode.forward(obs))
        ended = info["episode"]["mask"] & (lengths == 0)
        lengths[ended] = info["episode"]["length"][ended]
    wins = int((lengths % 2 == 0).sum())
    assert (result.wins, result.losses, result.draws) == (wins, 6 - wins, 0)
    assert result.win_rate == wins / 6
    aircombat = create_env("aircombat", 4, seed=0, opponent="placeholder", max_episode_steps=5)
    acting = PPOPolicy(
        get_config("aircombat_ppo").policy,
        obs_shape=aircombat.obs_shape,
        action_space=aircombat.action_space,
    )
    draws = Evaluator(aircombat, acting.eval_mode).eval()  # all truncated: draws
    assert (draws.wins, draws.losses, draws.draws, draws.win_rate) == (0, 0, 4, 0.0)
    plain = Evaluator(create_env("cartpole", 2, seed=1), policy.eval_mode).eval()
    assert plain.wins is None and plain.win_rate is None
