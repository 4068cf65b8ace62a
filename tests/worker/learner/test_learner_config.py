"""The learner section: defaults merged, unknown and DI-engine-only keys refused."""

import pytest

from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner import BaseLearner
from ding_lite.worker.learner.learner_config import learner_config


def test_defaults_are_merged():
    cfg = learner_config({"keep_ckpts": 5, "hook": {"log_show_after_iter": 0}})
    assert cfg.keep_ckpts == 5 and cfg.max_iterations == 1_000_000_000
    assert cfg.hook.log_show_after_iter == 0 and cfg.hook.save_ckpt_after_run is True


@pytest.mark.parametrize(
    "key, message",
    [
        ("use_cuda", "learner.use_cuda (DI-engine) is not a ding_lite key: the run's device"),
        ("dataloader", "learner.dataloader (DI-engine) is not a ding_lite key"),
        ("keep_ckpt", "unknown learner config key 'keep_ckpt' (did you mean 'keep_ckpts'?)"),
    ],
)
def test_unknown_keys_are_one_line_errors(tmp_path, key, message):
    with pytest.raises(ConfigError) as err:
        BaseLearner({key: True}, exp_dir=tmp_path)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_use_distributed_without_a_group_is_a_one_line_error(tmp_path, monkeypatch):
    """DI-engine's key is accepted; outside torchrun (no RANK, ...) it says what to do."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError) as err:
        BaseLearner({"use_distributed": True}, exp_dir=tmp_path)
    text = str(err.value)
    assert "needs RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT" in text and "torchrun" in text
    assert "\n" not in text and not list(tmp_path.iterdir())
    learner = BaseLearner({"use_distributed": False}, exp_dir=tmp_path)
    assert (learner.rank, learner.world_size) == (0, 1)
