"""Reset groups (``env.reset_group_size``): the k-th episodes of a group's copies start alike."""

import io
from typing import Any

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.envs import Discrete, create_env
from ding_lite.envs.base import TensorVectorEnv
from ding_lite.envs.buffered import BufferedEnv, build_collector_env
from ding_lite.envs.from_config import build_env
from ding_lite.utils.errors import ConfigError

N, K, EPISODES = 8, 4, 4  # two groups of four copies; episodes 0..3 of each copy
# Short episodes keep the tests fast; random actions end cartpole's in about 20 steps.
ENVS: dict[str, dict[str, Any]] = {
    "cartpole": {},
    "pendulum": {"max_episode_steps": 10},
    "aircombat": {"max_episode_steps": 12},
    "gym:CartPole-v1": {},
    "gym:CartPole-v1 async": {"vector_mode": "async"},
}


def make(name: str, group_size: int | None = K, seed: int = 0, **kwargs: Any) -> TensorVectorEnv:
    options = {**ENVS[name], **kwargs}
    if group_size is not None:
        options["reset_group_size"] = group_size
    return create_env(name.split()[0], N, seed=seed, **options)


def random_action(env: TensorVectorEnv, gen: torch.Generator) -> torch.Tensor:
    space = env.action_space
    if isinstance(space, Discrete):
        return torch.randint(0, space.n, (env.num_envs,), generator=gen)
    return torch.rand(env.num_envs, space.dim, generator=gen) * 2 - 1  # clipped by the env


def episode_starts(env: TensorVectorEnv, seed: int | None = 0) -> torch.Tensor:
    """``[N, EPISODES, *obs_shape]``: each copy's first obs of episodes 0..EPISODES-1."""
    obs, _ = env.reset(seed=seed)
    starts = [[row] for row in obs]
    gen = torch.Generator().manual_seed(1)
    for _ in range(2000):
        if min(len(s) for s in starts) >= EPISODES:
            break
        obs, *_, info = env.step(random_action(env, gen))
        for i in info["done"].nonzero().flatten().tolist():
            starts[i].append(obs[i])  # an ended copy's row is its next episode's first obs
    assert min(len(s) for s in starts) >= EPISODES, "episodes too long for this test"
    return torch.stack([torch.stack(s[:EPISODES]) for s in starts])


def trajectory(env: TensorVectorEnv, steps: int, seed: int = 1) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(random_action(env, gen))
        out += [obs, reward, terminated, truncated, info["final_obs"]]
    return out


def assert_same(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    assert len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", list(ENVS))
def test_kth_episodes_of_a_group_start_alike(name):
    env = make(name)
    assert env.reset_group_size == K
    starts = episode_starts(env).flatten(2)  # [N, EPISODES, obs]
    env.close()
    by_group = starts.view(N // K, K, EPISODES, -1)
    assert torch.equal(by_group, by_group[:, :1].expand_as(by_group)), "a group's copies differ"
    # Independent draws: other groups and other episodes start elsewhere.
    assert (by_group[0, 0] != by_group[1, 0]).any(dim=-1).all()
    assert (starts[:, 1:] != starts[:, :-1]).any(dim=-1).all()


def test_aircombat_dense_path_groups_like_the_compact_one():
    """Off the CPU the env resets by masks (the dense path); force it here."""
    compact = episode_starts(make("aircombat"))
    env = make("aircombat")
    env._compact = False
    assert torch.equal(episode_starts(env), compact)


@pytest.mark.parametrize("name", ["cartpole", "pendulum", "aircombat", "gym:CartPole-v1"])
def test_group_size_1_is_the_plain_env(name):
    plain, one = make(name, group_size=None), make(name, group_size=1)
    assert plain.reset_group_size == one.reset_group_size == 1
    assert torch.equal(plain.reset(seed=3)[0], one.reset(seed=3)[0])
    assert_same(trajectory(plain, 150), trajectory(one, 150))
    plain.close()
    one.close()


def test_every_env_has_the_attribute():
    assert TensorVectorEnv.reset_group_size == 1
    assert create_env("two_agent_meet", 2).reset_group_size == 1


@pytest.mark.parametrize("name", ["cartpole", "gym:CartPole-v1"])
def test_same_seed_same_starts_and_a_new_seed_new_ones(name):
    env = make(name)
    first = episode_starts(env, seed=5)
    assert torch.equal(episode_starts(env, seed=5), first)
    assert not torch.equal(episode_starts(env, seed=6), first)
    # A full reset without a seed continues the generator: new groups.
    assert not torch.equal(episode_starts(env, seed=None)[:, 0], first[:, 0])
    env.close()


@pytest.mark.parametrize("name", ["cartpole", "pendulum", "aircombat"])
def test_state_dict_resumes_exactly(name):
    env = make(name, seed=2)
    env.reset()
    trajectory(env, 37)
    buffer = io.BytesIO()
    torch.save(env.state_dict(), buffer)
    expected = trajectory(env, 60) + [env.reset()[0]] + trajectory(env, 20)
    buffer.seek(0)
    resumed = make(name, seed=9)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    assert_same(trajectory(resumed, 60) + [resumed.reset()[0]] + trajectory(resumed, 20), expected)


def test_state_of_another_group_size_is_refused():
    grouped, plain = make("cartpole"), make("cartpole", group_size=None)
    grouped.reset()
    plain.reset()
    with pytest.raises(ValueError, match="reset_group_size=4, this env has 1"):
        plain.load_state_dict(grouped.state_dict())
    with pytest.raises(ValueError, match="reset_group_size=1, this env has 4"):
        grouped.load_state_dict(plain.state_dict())


def test_gym_state_dict_carries_the_episode_counters():
    env = make("gym:CartPole-v1")
    env.reset(seed=0)
    trajectory(env, 60)
    state = env.state_dict()["reset_groups"]
    seeds = state["group_seed"].view(N // K, K)
    assert torch.equal(seeds, seeds[:, :1].expand_as(seeds)) and state["episode"].sum() > 0
    other = make("gym:CartPole-v1")
    other.reset(seed=1)
    with pytest.warns(UserWarning, match="cannot be restored"):
        other.load_state_dict(env.state_dict())
    restored = other.state_dict()["reset_groups"]
    assert torch.equal(restored["episode"], state["episode"])
    assert torch.equal(restored["group_seed"], state["group_seed"])


@pytest.mark.parametrize("name", ["cartpole", "pendulum", "aircombat", "gym:CartPole-v1"])
@pytest.mark.parametrize("bad", [3, 0, 2.0, True])
def test_bad_group_sizes_are_refused(name, bad):
    match = "does not divide num_envs=8" if bad == 3 else "must be a positive int"
    with pytest.raises(ValueError, match=match):
        make(name, group_size=bad)


def config(**env: Any) -> Any:
    return compile_config({"env": {"num_envs": N, **env}})


def test_config_checks_the_group_size():
    with pytest.raises(ConfigError, match=r"env.num_envs=8 is not a multiple of env.reset_group"):
        config(reset_group_size=3)
    with pytest.raises(ConfigError, match="at least 1"):
        config(reset_group_size=0)
    with pytest.raises(ConfigError, match=r"async_factor = 2 is not a multiple of env.reset_gr"):
        compile_config({"env": {"reset_group_size": 4}, "collector": {"async_factor": 4}})
    assert config().env.reset_group_size == 1


def test_build_env_passes_the_group_size_but_not_to_evaluation():
    cfg = config(reset_group_size=K)
    assert build_env(cfg, N, "cpu", 0).reset_group_size == K
    assert build_env(cfg, N, "cpu", 0, evaluation=True).reset_group_size == 1


def test_an_env_without_groups_is_a_one_line_config_error():
    cfg = config(name="two_agent_meet", reset_group_size=2)
    with pytest.raises(ConfigError) as err:
        build_env(cfg, N, "cpu", 0)
    message = str(err.value)
    assert "\n" not in message and "two_agent_meet" in message
    assert "env.reset_group_size=2" in message and "does not support reset groups" in message
    with pytest.raises(ConfigError, match="set env.reset_group_size instead"):
        build_env(config(kwargs={"reset_group_size": 2}), N, "cpu", 0)


def test_split_envs_keep_whole_groups():
    cfg = compile_config(
        {"env": {"num_envs": N, "reset_group_size": 2}, "collector": {"async_factor": 2}}
    )
    env = build_collector_env(cfg, N, "cpu", 0)
    assert isinstance(env, BufferedEnv) and env.reset_group_size == 2
    assert [part.reset_group_size for part in env.groups] == [2, 2]
    obs, _ = env.reset(seed=0)
    pairs = obs.view(N // 2, 2, -1)
    assert torch.equal(pairs[:, 0], pairs[:, 1])  # episode 0 of each reset group
    assert len({tuple(p[0].tolist()) for p in pairs}) == N // 2  # four groups, four starts
    with pytest.raises(ConfigError, match="not a multiple of env.reset_group_size=2"):
        build_collector_env(cfg, N, "cpu", 0, k=8)
