"""TensorVectorEnv bookkeeping through a minimal subclass, and the autoreset helpers."""

import pytest
import torch

from ding_lite.envs import Box, TensorVectorEnv, create_env
from ding_lite.envs.autoreset import ResetPool, RowSelect


class Walk(TensorVectorEnv):
    """Moves each copy by its action; terminates past +-3.5; obs = [position, 2 * position]."""

    name = "walk"

    def __init__(self, num_envs: int, max_episode_steps: int | None = 6) -> None:
        super().__init__(
            num_envs=num_envs,
            obs_shape=(2,),
            action_space=Box(low=(-1.0,), high=(1.0,)),
            max_episode_steps=max_episode_steps,
        )
        self.pos = torch.zeros(num_envs)

    def _reset_state(self, mask):
        start = torch.rand(self.num_envs, generator=self.generator) * 0.1
        self.pos = start if mask is None else torch.where(mask, start, self.pos)

    def _step_physics(self, action):
        self.pos = self.pos + action[:, 0]
        return action[:, 0] * 10, self.pos.abs() > 3.5

    def _obs(self):
        return torch.stack((self.pos, 2 * self.pos), dim=1)


def test_default_autoreset_and_episode_statistics():
    env = Walk(3)
    env.reset(seed=0)
    start = env.pos.clone()
    actions = torch.tensor([[1.0], [5.0], [0.0]])  # row 1 is clipped to 1.0
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(actions)
        assert torch.equal(reward, torch.tensor([10.0, 10.0, 0.0]))
        assert not (terminated | truncated).any()
        assert torch.equal(info["final_obs"], obs)
    obs, reward, terminated, truncated, info = env.step(actions)  # positions reach 4 + start
    assert terminated.tolist() == [True, True, False]
    final = info["final_obs"]
    assert torch.allclose(final[:2, 0], start[:2] + 4)
    assert torch.allclose(final[:, 1], 2 * final[:, 0])
    assert (obs[:2, 0] < 0.1).all() and torch.equal(obs[2], final[2])
    episode = info["episode"]
    assert episode["mask"].tolist() == [True, True, False]
    assert episode["length"][:2].tolist() == [4, 4]
    assert episode["return"][:2].tolist() == [40.0, 40.0]
    assert torch.equal(info["done"], terminated | truncated)


def test_truncation_and_statistics_restart():
    env = Walk(2, max_episode_steps=2)
    env.reset(seed=0)
    zero = torch.zeros(2, 1)
    flags = [env.step(zero)[3].tolist() for _ in range(5)]
    assert flags == [[False, False], [True, True], [False, False], [True, True], [False, False]]
    _, _, _, truncated, info = env.step(zero)
    assert truncated.all() and info["episode"]["length"].tolist() == [2, 2]


def test_no_time_limit():
    env = Walk(2, max_episode_steps=None)
    env.reset(seed=0)
    for _ in range(20):
        _, _, _, truncated, _ = env.step(torch.zeros(2, 1))
        assert not truncated.any()


def test_step_before_reset_and_bad_shapes():
    env = Walk(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, 1))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \[2, 1\]"):
        env.step(torch.zeros(3, 1))


def test_state_dict_restores_generator_and_statistics():
    env = Walk(4)
    env.reset(seed=3)
    for _ in range(3):
        env.step(torch.full((4, 1), 0.5))
    saved = env.state_dict()
    pos = env.pos.clone()
    after = [env.step(torch.full((4, 1), 1.0)) for _ in range(4)]
    other = Walk(4)
    other.load_state_dict(saved)
    other.pos = pos
    for expected in after:
        got = other.step(torch.full((4, 1), 1.0))
        assert torch.equal(got[0], expected[0])
        assert torch.equal(got[4]["episode"]["return"], expected[4]["episode"]["return"])


@pytest.mark.parametrize(
    ("dtype", "width"),
    [(torch.float32, 4), (torch.float32, 2), (torch.float64, 4), (torch.float32, 3)],
)
def test_row_select_matches_where(dtype, width):
    n = 257
    a = torch.randn(n, width, dtype=dtype)
    b = torch.randn(n, width, dtype=dtype)
    a[0, 0] = float("nan")
    out = torch.empty_like(b)
    mask = torch.rand(n) < 0.3
    mask[0] = True
    RowSelect(a, b, out=out)(mask)
    expected = torch.where(mask.unsqueeze(1), a, b)
    assert torch.equal(out.view(torch.uint8), expected.view(torch.uint8))  # bit-exact
    RowSelect(a, b, out=b)(mask)  # in place into b
    assert torch.equal(b.view(torch.uint8), expected.view(torch.uint8))


def test_reset_pool_bounds_refresh_and_reproducibility():
    def pool(seed):
        gen = torch.Generator().manual_seed(seed)
        return ResetPool(
            num_envs=100,
            low=(-1.0, 10.0),
            high=(1.0, 20.0),
            generator=gen,
            device=torch.device("cpu"),
            refresh_steps=8,
        )

    p = pool(0)
    assert p.values.shape == (100, 2)
    low, high = p.values.min(0).values, p.values.max(0).values
    assert low[0] >= -1 and high[0] <= 1 and low[1] >= 10 and high[1] <= 20
    before = p.values.clone()
    for _ in range(8):
        p.advance()
    assert (p.values != before).all()  # every row redrawn within refresh_steps
    q = pool(0)
    for _ in range(8):
        q.advance()
    assert torch.equal(p.values, q.values)
    assert not torch.equal(pool(1).values, pool(0).values)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", ["cartpole", "pendulum", "aircombat"])
def test_bundled_env_steps_on_cuda_without_host_sync(name):
    env = create_env(name, 64, device="cuda")
    obs, _ = env.reset(seed=0)
    if name == "cartpole":
        actions = [torch.randint(0, 2, (64,), device="cuda") for _ in range(8)]
    elif name == "pendulum":
        actions = [torch.rand(64, 1, device="cuda") * 6 - 3 for _ in range(8)]
    else:  # rudder, throttle, fire; the scripted opponent acts inside step()
        scale = torch.tensor([2.0, 1.0, 1.0], device="cuda")
        shift = torch.tensor([-1.0, 0.0, 0.0], device="cuda")
        actions = [(torch.rand(64, 3, device="cuda") * scale + shift) for _ in range(8)]
        for a in actions:
            a[:, 2].round_()
    ended = torch.zeros((), dtype=torch.int64, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any host sync inside step() raises
    try:
        for i in range(300):
            obs, reward, terminated, truncated, info = env.step(actions[i % 8])
            ended += info["done"].sum()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert obs.device.type == reward.device.type == info["final_obs"].device.type == "cuda"
    assert int(ended) > 0
