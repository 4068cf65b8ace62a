"""SeatedEnv: a two-agent env seen as one agent, agent 1 played by the seated opponents."""

from __future__ import annotations

import pytest
import torch

from ding_lite.envs import create_env
from ding_lite.envs.buffered import BufferedEnv
from ding_lite.envs.seats import SeatedEnv

ROCK, PAPER, SCISSORS = 0, 1, 2


class Always:
    """Plays one action; counts the rows it was asked for."""

    def __init__(self, action: int) -> None:
        self.action = action
        self.rows = 0

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        self.rows += obs.shape[0]
        return torch.full((obs.shape[0],), self.action, dtype=torch.long)


class Seating:
    """Seats names in turn from a list; books every report."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.turn = 0
        self.opponents = {
            "rock": Always(ROCK),
            "paper": Always(PAPER),
            "scissors": Always(SCISSORS),
        }
        self.reports: list[tuple[str, float]] = []

    def pick(self, count: int) -> list[str]:
        picked = [self.names[(self.turn + k) % len(self.names)] for k in range(count)]
        self.turn += count
        return picked

    def opponent(self, name: str) -> Always:
        return self.opponents[name]

    def report(self, name: str, outcome: float) -> None:
        self.reports.append((name, outcome))


def _seated(names: list[str], num_envs: int = 3) -> tuple[SeatedEnv, Seating]:
    seating = Seating(names)
    env = SeatedEnv(create_env("matrix_game", num_envs, payoff="biased_rps"), seating)
    env.reset(seed=0)
    return env, seating


def test_agent_0_plays_the_seated_opponents_and_sees_one_agent():
    env, seating = _seated(["rock", "paper", "scissors"])
    assert env.num_agents == 1 and env.seats == ["rock", "paper", "scissors"]
    obs, reward, terminated, truncated, info = env.step(torch.tensor([PAPER, PAPER, PAPER]))
    assert obs.shape == (3, 1) and info["final_obs"].shape == (3, 1)
    # paper beats rock (+1), draws paper (0), loses to scissors (-1)
    assert reward.tolist() == [1.0, 0.0, -1.0]
    assert info["episode"]["outcome"].tolist() == [1.0, 0.0, -1.0]
    assert info["episode"]["return"].tolist() == [1.0, 0.0, -1.0]
    assert terminated.tolist() == [True] * 3 and truncated.shape == (3,)
    # Each outcome went to the opponent it was played against, then new seats were drawn.
    assert seating.reports == [("rock", 1.0), ("paper", 0.0), ("scissors", -1.0)]
    assert env.seats == ["rock", "paper", "scissors"]  # the list's next turn
    assert [seating.opponents[n].rows for n in ("rock", "paper", "scissors")] == [1, 1, 1]


def test_rock_over_scissors_pays_two_and_seats_stay_for_an_episode():
    env, seating = _seated(["scissors"], num_envs=2)
    _, reward, *_ = env.step(torch.tensor([ROCK, SCISSORS]))
    assert reward.tolist() == [2.0, 0.0]
    assert seating.reports == [("scissors", 1.0), ("scissors", 0.0)]


def test_state_round_trip_keeps_seats_and_agent_1s_view():
    env, _ = _seated(["rock", "paper"], num_envs=4)
    env.step(torch.zeros(4, dtype=torch.long))
    other, _ = _seated(["paper", "rock"], num_envs=4)  # seated the other way round
    assert other.seats != env.seats
    other.load_state_dict(env.state_dict())
    assert other.seats == env.seats
    _, reward_a, *_ = env.step(torch.full((4,), SCISSORS))
    _, reward_b, *_ = other.step(torch.full((4,), SCISSORS))
    assert reward_a.tolist() == reward_b.tolist() == [-2.0, 1.0, -2.0, 1.0]


@pytest.mark.parametrize(
    "state,match",
    [
        ({"seats": ["rock"]}, "do not fit 4 copies"),
        ({"seats": [1, 2, 3, 4]}, "not an opponent's name"),
        ({"seats": ["rock"] * 4, "obs1": torch.zeros(3, 1), "env": {}}, "agent 1 does not fit"),
    ],
)
def test_a_state_that_does_not_fit_is_refused_and_changes_nothing(state, match):
    env, _ = _seated(["rock"], num_envs=4)
    before = list(env.seats)
    with pytest.raises(ValueError, match=match):
        env.load_state_dict(state)
    assert env.seats == before


def test_a_one_agent_env_cannot_be_seated():
    with pytest.raises(ValueError, match="two agents a copy; env 'cartpole' has 1"):
        SeatedEnv(create_env("cartpole", 2), Seating(["rock"]))


def test_an_env_without_outcomes_is_refused_at_its_first_ending():
    env = create_env("matrix_game", 2)

    class NoOutcome:
        def __getattr__(self, name):
            return getattr(env, name)

        def step_wait(self):
            obs, reward, term, trunc, info = env.step_wait()
            del info["episode"]["outcome"]
            return obs, reward, term, trunc, info

    seated = SeatedEnv(NoOutcome(), Seating(["rock"]))
    seated.reset()
    with pytest.raises(ValueError, match="reports no outcome per episode"):
        seated.step(torch.zeros(2, dtype=torch.long))


def test_groups_of_a_buffered_env_are_seated_each():
    seating = Seating(["rock", "paper"])
    groups = [SeatedEnv(create_env("matrix_game", 2), seating) for _ in range(2)]
    env = BufferedEnv(groups)
    env.reset(seed=1)
    for group, action in zip(groups, (torch.tensor([PAPER, PAPER]),) * 2, strict=True):
        group.step_async(action)
    obs, reward, *_ = BufferedEnv.concat([group.step_wait() for group in groups])
    assert obs.shape == (4, 1) and reward.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_mirror_copies_show_agent_1_as_rows_of_their_own():
    seating = Seating(["rock", "scissors"])
    env = SeatedEnv(create_env("matrix_game", 3, payoff="biased_rps"), seating, mirrored=1)
    obs, _ = env.reset(seed=0)
    assert (env.num_envs, env.env_copies, obs.shape) == (4, 3, (4, 1))
    assert env.seats == ["rock", "scissors", "rock"]  # copy 0's seat is never played
    # Rows 0-2: agent 0 of copies 0-2; row 3: agent 1 of copy 0 (the mirror copy).
    obs, reward, terminated, truncated, info = env.step(torch.tensor([PAPER, PAPER, PAPER, ROCK]))
    assert reward.tolist() == [1.0, -1.0, 1.0, -1.0]
    assert info["episode"]["outcome"].tolist() == [1.0, -1.0, 1.0, -1.0]
    assert info["episode"]["return"].tolist() == [1.0, -1.0, 1.0, -1.0]
    assert info["episode"]["mask"].tolist() == [True] * 4
    assert terminated.shape == truncated.shape == (4,) and info["final_obs"].shape == (4, 1)
    # The opponents played copies 1 and 2 only; copy 0 was booked and keeps its seat.
    assert [seating.opponents[n].rows for n in ("rock", "scissors")] == [1, 1]
    assert seating.reports == [("rock", 1.0), ("scissors", -1.0), ("rock", 1.0)]
    assert env.seats[0] == "rock" and env.seats[1:] == ["scissors", "rock"]
    state = env.state_dict()
    assert len(state["seats"]) == 3
    env.load_state_dict(state)
    with pytest.raises(ValueError, match="mirrored=4"):
        SeatedEnv(create_env("matrix_game", 3), seating, mirrored=4)


def test_every_copy_a_mirror_copy_is_plain_self_play():
    seating = Seating(["rock"])
    env = SeatedEnv(create_env("matrix_game", 2, payoff="biased_rps"), seating, mirrored=2)
    env.reset(seed=0)
    _, reward, *_ = env.step(torch.tensor([ROCK, PAPER, SCISSORS, PAPER]))
    # copy 0: rock vs scissors (+2), copy 1: paper vs paper (0), and the other sides
    assert reward.tolist() == [2.0, 0.0, -2.0, 0.0]
    assert seating.opponents["rock"].rows == 0
