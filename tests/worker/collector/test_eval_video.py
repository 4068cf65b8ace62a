"""The evaluator's videos (``evaluator.video_freq``): which evaluations are recorded, what
a recording holds, and that nothing is drawn when videos are off."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import write_policy
from ding_lite.envs import CartPoleEnv, create_env
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector.comm import FlaskFileSystemCollector
from ding_lite.worker.collector.eval_video import EvalVideo
from ding_lite.worker.collector.evaluator import Evaluator

SEED = 7


class PushRight:
    """An eval-mode policy that always pushes the cart right (episodes of about 10 steps)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.ones(obs.shape[0], dtype=torch.long)


class CountingCartPole(CartPoleEnv):
    """A cartpole env that counts its ``render`` calls."""

    renders = 0

    def render(self) -> np.ndarray:
        self.renders += 1
        return super().render()


def copy0_frames(num_envs: int) -> list[np.ndarray]:
    """Copy 0's frames of its first episode under PushRight, stepped by hand."""
    env = create_env("cartpole", num_envs, seed=0)
    env.reset(seed=SEED)
    shown = []
    while True:
        shown.append(env.render())
        _, _, _, _, info = env.step(torch.ones(num_envs, dtype=torch.long))
        if bool(info["done"][0]):
            return shown


def test_video_freq_records_every_nth_evaluation(tmp_path):
    video = EvalVideo(3, tmp_path, ".gif")
    paths = [video.next_path(version) for version in range(10, 17)]
    assert paths == [
        None,
        None,
        tmp_path / "eval_v12.gif",
        None,
        None,
        tmp_path / "eval_v15.gif",
        None,
    ]
    assert EvalVideo(1, tmp_path, ".mp4").next_path() == tmp_path / "eval_v1.mp4"  # no version


def test_from_config_is_none_when_off():
    cfg = SimpleNamespace(evaluator={"video_freq": 0})
    assert EvalVideo.from_config(cfg, "run") is None
    on = EvalVideo.from_config(SimpleNamespace(evaluator={"video_freq": 2}), "run")
    assert on.freq == 2 and on.folder == Path("run") / "videos" and on.suffix in (".mp4", ".gif")


def test_recording_holds_copy_0s_episode_one_frame_per_step():
    expected = copy0_frames(3)
    recorded: list[np.ndarray] = []
    sink = SimpleNamespace(append=recorded.append)
    env = create_env("cartpole", 3, seed=0)
    result = Evaluator(env, PushRight(), seed=SEED).eval(record=sink)
    assert 5 < len(recorded) == len(expected) < 40
    assert all(np.array_equal(a, b) for a, b in zip(recorded, expected, strict=True))
    assert result.n_episodes == 3 and result.video is None  # a sink given: no file of its own


def test_due_evaluations_write_a_video_file(tmp_path):
    pytest.importorskip("PIL")
    env = create_env("cartpole", 2, seed=0)
    evaluator = Evaluator(env, PushRight(), seed=SEED, video=EvalVideo(2, tmp_path, ".gif"))
    first, second = evaluator.eval(version=4), evaluator.eval(version=8)
    assert first.video is None and list(tmp_path.iterdir()) == [tmp_path / "eval_v8.gif"]
    info = second.video
    assert info.path == tmp_path / "eval_v8.gif" and (info.width, info.height) == (600, 400)
    assert info.frames == len(copy0_frames(2)) and info.fps == 50.0
    assert first.return_mean == second.return_mean  # recording changes no result


def test_no_frame_is_drawn_when_videos_are_off():
    env = CountingCartPole(num_envs=4, seed=0)
    Evaluator(env, PushRight(), seed=SEED).eval()
    assert env.renders == 0
    evaluator = Evaluator(env, PushRight(), seed=SEED, video=EvalVideo(2, Path("unused"), ".gif"))
    evaluator.eval()  # the first of every two: not recorded
    assert env.renders == 0


def test_an_env_that_cannot_draw_is_refused_up_front(tmp_path):
    env = create_env("two_agent_meet", 2, seed=0)
    with pytest.raises(ConfigError) as err:
        Evaluator(env, PushRight(), video=EvalVideo(1, tmp_path, ".gif"))
    assert str(err.value).startswith(
        "evaluator.video_freq=1: env 'two_agent_meet' cannot draw frames (it has no render())"
    )
    Evaluator(env, PushRight())  # without videos it evaluates as before


@pytest.mark.timeout(120)
def test_the_parallel_evaluating_collector_records_too(tmp_path):
    """The parallel pipeline's evaluating collector builds the same evaluator: its final
    evaluation of policy v0 lands in the run dir's videos/, named for the version."""
    pytest.importorskip("PIL")
    run = tmp_path / "run"
    overrides = ["env.num_envs=2", "policy.collect.n_steps=8", "evaluator.n_episodes=1"]
    cfg = compile_config("cartpole_ppo", [*overrides, "evaluator.video_freq=1"], exp_dir=str(run))
    policy = create_policy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    path = write_policy(run / "policy", 0, policy.model.state_dict())
    collector = FlaskFileSystemCollector(worker_id="c0")
    try:
        start = {"config": dict(cfg), "seed": 1, "evaluate": True, "policy_path": str(path)}
        collector.start_task({**start, "policy_version": 0})
        evals = collector.close_task({"final_eval": True})["evals"]
    finally:
        collector.close()
    assert [e["policy_version"] for e in evals] == [0]
    videos = list((run / "videos").iterdir())
    assert [p.stem for p in videos] == ["eval_v0"] and videos[0].stat().st_size > 0
