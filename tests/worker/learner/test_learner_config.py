"""The learner section: defaults merged, unknown keys refused, DI-engine's keys honoured."""

import logging

import pytest
import torch
from learner_fakes import VectorPolicy

from ding_lite.utils.errors import ConfigError
from ding_lite.worker.learner import BaseLearner
from ding_lite.worker.learner.learner_config import learner_config, to_device


def test_defaults_are_merged():
    cfg = learner_config({"keep_ckpts": 5, "hook": {"log_show_after_iter": 0}})
    assert cfg.keep_ckpts == 5 and cfg.max_iterations == 1_000_000_000
    assert cfg.hook.log_show_after_iter == 0 and cfg.hook.save_ckpt_after_run is True


def test_an_unknown_key_is_a_one_line_error(tmp_path):
    with pytest.raises(ConfigError) as err:
        BaseLearner({"keep_ckpt": 3}, exp_dir=tmp_path)
    text = str(err.value)
    assert text.startswith("unknown learner config key 'keep_ckpt' (did you mean 'keep_ckpts'?)")
    assert "DI-engine's use_cuda, train_iterations, dataloader" in text and "\n" not in text
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


# DI-engine's default learner config as the reference shows it (a DI user's config has it).
DI_DEFAULT = dict(
    use_cuda=False,
    use_distributed=False,
    load_path="",
    max_iterations=10,
    train_iterations=10,
    log_policy=True,
    dataloader=dict(batch_size=2, chunk_size=2, num_workers=0),
    hook=dict(
        load_ckpt_before_run="",
        log_show_after_iter=100,
        save_ckpt_after_iter=10000,
        save_ckpt_after_run=True,
    ),
)


def test_di_engine_s_default_learner_config_is_taken(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        learner = BaseLearner(DI_DEFAULT, exp_dir=tmp_path)
    assert learner.device == torch.device("cpu") and learner.cfg.max_iterations == 10
    assert "dataloader" not in learner.cfg and learner.cfg.use_cuda is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # one warning, naming every ignored key and why
    assert "dataloader: ding_lite's batches come from the collector" in warnings[0]
    assert "AsyncDataLoader" in warnings[0] and "log_policy" in warnings[0]
    learner.policy = VectorPolicy(2)
    learner.train(torch.ones(2))
    assert learner.train_iter == 1


def test_train_iterations_is_max_iterations():
    assert learner_config({"train_iterations": 7}).max_iterations == 7
    with pytest.raises(ConfigError, match="train_iterations .7. and learner.max_iterations .8."):
        learner_config({"train_iterations": 7, "max_iterations": 8})


def test_use_cuda_without_cuda_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError) as err:
        BaseLearner({"use_cuda": True}, exp_dir=tmp_path)
    assert str(err.value) == (
        "learner.use_cuda is true but CUDA is not available on this machine; set it to false "
        "(or drop it) to train on the cpu"
    )
    with pytest.raises(ConfigError, match="must be true or false, got 'yes'"):
        BaseLearner({"use_cuda": "yes"}, exp_dir=tmp_path)


class _PolicyOn(VectorPolicy):
    def __init__(self, device):
        super().__init__(2)
        self.device = torch.device(device)


def test_use_cuda_sets_the_learner_s_device(tmp_path, monkeypatch):
    learner = BaseLearner({"use_cuda": False}, _PolicyOn("cpu"), exp_dir=tmp_path)
    assert learner.device == torch.device("cpu")
    assert BaseLearner({}, _PolicyOn("meta"), exp_dir=tmp_path).device == torch.device("meta")
    with pytest.raises(ConfigError, match="puts the learner on cpu but the policy lives on meta"):
        BaseLearner({"use_cuda": False}, _PolicyOn("meta"), exp_dir=tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    learner = BaseLearner({"use_cuda": True}, exp_dir=tmp_path)
    assert learner.device == torch.device("cuda", 0)
    with pytest.raises(ConfigError) as err:
        learner.policy = _PolicyOn("cpu")
    assert str(err.value) == (
        "learner.use_cuda puts the learner on cuda:0 but the policy lives on cpu; build the "
        "policy with device='cuda:0' or change learner.use_cuda"
    )


def test_batches_go_to_the_learner_s_device():
    batch = {"obs": torch.ones(2, 3), "parts": [torch.zeros(1), (torch.ones(1), 5)], "n": 4}
    moved = to_device(batch, torch.device("meta"))
    assert moved["obs"].device.type == "meta" and moved["obs"].shape == (2, 3)
    assert moved["parts"][0].device.type == "meta" and moved["parts"][1][0].is_meta
    assert moved["parts"][1][1] == 5 and moved["n"] == 4
    assert batch["obs"].device.type == "cpu"  # the caller's batch is left as it was
