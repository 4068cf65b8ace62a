"""FlaskFileSystemCollector driven through its task handlers (no transport): policy paths
confined to path_policy, config failures named by class, rollouts named for adoption."""

from pathlib import Path

import pytest
import torch
from helpers import wait_for

from ding_lite.config import compile_config
from ding_lite.data import read_rollout, write_policy
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.paths import UnsafePathError, parse_rollout_path
from ding_lite.worker.collector.comm import FlaskFileSystemCollector


def make_cfg(tmp_path, *overrides):
    return compile_config(
        "cartpole_ppo",
        ["env.num_envs=4", "policy.collect.n_steps=16", *overrides],
        exp_dir=str(tmp_path / "run"),
    )


def publish(tmp_path, cfg, version, folder=None):
    """A policy file as the learner publishes it (by default in the run's path_policy)."""
    env = build_env(cfg, 1, "cpu", 0)
    policy = create_policy(
        cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space, device="cpu"
    )
    return write_policy(folder or tmp_path / "run" / "policy", version, policy.model.state_dict())


@pytest.fixture
def collectors():
    made = []

    def _make(**kwargs):
        made.append(FlaskFileSystemCollector(**kwargs))
        return made[-1]

    yield _make
    for collector in made:
        collector.close()


def start_data(cfg, policy_path, version=0):
    return {
        "config": dict(cfg),
        "seed": 1,
        "policy_path": str(policy_path),
        "policy_version": version,
    }


@pytest.mark.timeout(120)
def test_a_policy_outside_path_policy_is_never_loaded(tmp_path, collectors):
    cfg = make_cfg(tmp_path)
    elsewhere = publish(tmp_path, cfg, 0, folder=tmp_path / "elsewhere")
    collector = collectors(worker_id="c0")
    forged = [
        elsewhere,
        tmp_path / "run" / "policy" / ".." / ".." / "elsewhere" / elsewhere.name,
        "/etc/passwd",
    ]
    for path in forged:
        with pytest.raises(UnsafePathError, match="is not inside"):
            collector.start_task(start_data(cfg, path))
    assert not (tmp_path / "run" / "data").exists()  # nothing was started

    inside = publish(tmp_path, cfg, 0)
    link = tmp_path / "run" / "policy" / "policy_v00000001.pt"
    link.symlink_to(publish(tmp_path, cfg, 1, folder=tmp_path / "elsewhere"))
    assert collector.start_task(start_data(cfg, inside)) == {"device": "cpu", "num_envs": 4}
    for path in [*forged, link]:
        with pytest.raises(UnsafePathError):
            collector.policy_sync_task({"path": str(path), "version": 1})
    with pytest.raises(ValueError, match="non-negative int"):
        collector.policy_sync_task({"path": str(inside), "version": "1"})
    assert collector.policy_sync_task({"path": str(inside), "version": 0}) == {
        "accepted_version": 0
    }


@pytest.mark.timeout(120)
def test_rollouts_are_named_for_adoption(tmp_path, collectors):
    cfg = make_cfg(tmp_path)
    collector = collectors(worker_id="collector1.r1")
    collector.start_task(start_data(cfg, publish(tmp_path, cfg, 3), 3))
    files = wait_for(lambda: collector.data_task({})["files"])
    assert files, "no rollout written"
    meta = files[0]
    named = parse_rollout_path(meta["path"])
    assert named == {k: meta[k] for k in ("path", "collector", "seq", "policy_version", "size")}
    assert (meta["collector"], meta["policy_version"], meta["size"]) == ("collector1.r1", 3, 64)
    assert Path(meta["path"]).parent == tmp_path / "run" / "data" / "collector1.r1"
    assert read_rollout(meta["path"])["data"]["obs"].shape == (64, 4)
    out = collector.close_task({})
    assert "files" in out and collector.closed.is_set()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_machine_lacks_fails_the_start_as_a_config_error(tmp_path, collectors):
    cfg = make_cfg(tmp_path)
    collector = collectors(worker_id="c0", device="cuda")
    with pytest.raises(ConfigError, match="CUDA is not available; use --device cpu") as info:
        collector.start_task(start_data(cfg, publish(tmp_path, cfg, 0)))
    # The Slave reports "<class>: <message>"; the coordinator does not restart ConfigErrors.
    assert f"{type(info.value).__name__}: {info.value}".startswith("ConfigError: device 'cuda'")


def test_an_id_that_cannot_name_a_folder_fails_the_start(tmp_path, collectors):
    cfg = make_cfg(tmp_path)
    for bad in ("..", ".", "a/b"):
        collector = collectors(worker_id=bad)
        with pytest.raises(ConfigError, match="cannot name a data folder"):
            collector.start_task(start_data(cfg, publish(tmp_path, cfg, 0)))
    assert not (tmp_path / "run" / "data").exists()


@pytest.mark.timeout(120)
def test_a_restarted_coordinators_take_back_keeps_a_running_collector(tmp_path, collectors):
    """A coordinator that could not take the run back from its predecessor's file starts
    the run's collectors with ``take_back``: one running the same run collects on (no
    second env, its count kept), loads the named weights, older ones too; a plain second
    start or another run's is refused and changes nothing."""
    from ding_lite.utils.errors import DingLiteError

    cfg = make_cfg(tmp_path)
    collector = collectors(worker_id="c0")
    collector.start_task(start_data(cfg, publish(tmp_path, cfg, 2), version=2))
    assert wait_for(lambda: collector.data_task({})["envstep"] > 0, 30)
    loop = collector._async

    other = make_cfg(tmp_path / "other")
    older = publish(tmp_path, cfg, 1)
    for refused in (
        start_data(cfg, older, version=1),  # a plain second start
        {**start_data(other, older, version=1), "take_back": True},  # another run
    ):
        with pytest.raises(DingLiteError, match="collector already started"):
            collector.start_task(refused)
    answer = collector.start_task({**start_data(cfg, older, version=1), "take_back": True})
    assert answer["taken_back"] is True and answer["evaluates"] is False
    assert answer["envstep"] > 0 and collector._async is loop
    assert loop._pending_policy[0] == 1  # rolled back from the next rollout on
