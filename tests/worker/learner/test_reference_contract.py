"""Every interface and property of DI-engine's learner overview (the reference document
../shared/reference/di-engine-learner.rst), used once, with the behaviour it documents.

``monitor`` is the one name left out: docs/migrating.rst says what replaces it.
"""

import queue

import torch
from learner_fakes import VectorPolicy

from ding_lite.config import compile_config
from ding_lite.worker.learner import BaseLearner, Hook, LearnerHook
from ding_lite.worker.learner.comm import BaseCommLearner, FlaskFileSystemLearner


class Recorder(LearnerHook):
    def __init__(self, *args, ext_args=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = ext_args.log

    def __call__(self, engine):
        self.log.append((self.name, self.position, engine.last_iter.val))


class Comm(BaseCommLearner):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.batches, self.sent, self.infos, self.asked = queue.Queue(), [], [], []

    def send_policy(self, state_dict):
        self.sent.append(state_dict)

    def get_data(self, batch_size):
        self.asked.append(batch_size)
        try:
            return self.batches.get(timeout=0.5)
        except queue.Empty:
            return None  # no more data: start() ends

    def send_learn_info(self, learn_info):
        self.infos.append(dict(learn_info))

    @property
    def hooks4call(self):
        comm = self

        class Send(LearnerHook):
            def __call__(self, engine):
                comm.send_policy(engine.policy.state_dict())
                comm.send_learn_info(engine.learn_info)

        return [Send("send", 99, position="after_iter")]

    @property
    def handlers(self):
        return {
            "learner_start_task": lambda task: {"ok": "start"},
            "learner_get_data_task": lambda task: {"ok": "data"},
            "learner_learn_task": lambda task: {"ok": "learn"},
        }


def test_the_reference_document_end_to_end(tmp_path):
    log = []
    # BaseLearner: __init__, register_hook, call_hook, train, properties.
    learner = BaseLearner(
        {"hook": {"save_ckpt_after_run": True}}, VectorPolicy(2), None, "e", "lrn", exp_dir=tmp_path
    )
    assert isinstance(learner, BaseLearner) and issubclass(LearnerHook, Hook)
    assert list(LearnerHook.positions) == ["before_run", "after_run", "before_iter", "after_iter"]
    ext = type("Ext", (), {"log": log})
    for name, priority in (("late", 80), ("early", 5), ("mid", 40)):
        learner.register_hook(Recorder(name, priority, position="after_iter", ext_args=ext))
    hook = learner.hooks["after_iter"][0]
    assert (hook.name, hook.priority, hook.position) == ("early", 5, "after_iter")
    priorities = [h.priority for h in learner.hooks["after_iter"]]
    assert priorities == sorted(priorities)
    learner.call_hook("before_run")
    learner.train(torch.ones(2))
    # hook order by priority; the counter moves once per train call, after the hooks
    assert [n for n, *_ in log] == ["early", "mid", "late"] and {v for *_, v in log} == {0}
    assert learner.last_iter.val == 1
    assert learner.learn_info == {"policy_loss": 2.0} and learner.priority_info is None
    assert learner.name == "lrn" and learner.rank == 0 and learner.tick_time > 0
    assert learner.policy is not None and learner.logger is not None and learner.tb_logger is None
    assert "train_time" in learner.log_buffer and learner.load_path == ""
    # save_checkpoint runs the save_ckpt_after_run hook
    path = learner.save_checkpoint()
    assert path.name == "ckpt_iter00000001.pt"

    # BaseCommLearner: cfg, start, _create_learner (the three callables reach the learner),
    # BaseLearner.setup_dataloader / start (max_iterations batches) / close.
    comm = Comm({"use_distributed": False})
    assert comm._cfg == {"use_distributed": False} and comm._end_flag
    comm.start()
    created = comm._create_learner(
        {
            "learner_cfg": {"max_iterations": 3, "hook": {"save_ckpt_after_run": False}},
            "policy": VectorPolicy(2),
            "batch_size": 16,
            "exp_dir": tmp_path / "comm",
        }
    )
    for _ in range(4):
        comm.batches.put(torch.ones(2))
    created.setup_dataloader()
    created.start()  # three iterations: max_iterations, though a fourth batch waits
    created.close()
    assert created.train_iter == 3 and len(comm.sent) == 3 and len(comm.infos) == 3
    assert set(comm.asked) == {16}
    assert comm.deal_with_learner_start({}) == {"ok": "start"}
    assert comm.deal_with_get_data({}) == {"ok": "data"}
    assert comm.deal_with_learner_learn({}) == {"ok": "learn"}
    comm.close()
    assert comm._end_flag


def test_the_flask_comm_learner_stays_resident_for_a_second_start(tmp_path):
    """The reference's last step: after a run closes, the comm learner waits for the next
    ``learner_start_task`` and builds a new learner for it."""
    cfg = compile_config(
        "cartpole_ppo",
        ["env.num_envs=4", "policy.collect.n_steps=16", "system.collectors=1"],
        exp_dir=str(tmp_path / "run"),
    )
    comm = FlaskFileSystemLearner(None, worker_id="learner0")
    try:
        first = comm.deal_with_learner_start({"config": dict(cfg)})
        assert first["policy_version"] == 0
        assert comm.deal_with_get_data({})["batch_size"] == 64
        comm.deal_with_learner_close({})
        assert comm.closed.is_set()
        second = comm.deal_with_learner_start({"config": dict(cfg, seed=1)})
        assert second["policy_version"] == 0 and not comm.closed.is_set()
        assert comm.cfg.seed == 1  # the new run's config
    finally:
        comm.close()
