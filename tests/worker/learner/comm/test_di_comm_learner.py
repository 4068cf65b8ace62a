"""DI-engine's comm-learner contract: a BaseCommLearner subclass written as the reference
describes it, and a FlaskFileSystemLearner that stays resident for a second run."""

import queue

import pytest
import torch
from test_flask_fs_learner import rollout, start  # noqa: F401  (fixture)

from ding_lite.utils.errors import DingLiteError
from ding_lite.worker.learner import LearnerHook
from ding_lite.worker.learner.comm import BaseCommLearner
from ding_lite.worker.learner.comm.base_comm_learner import LEARNER_TASKS


class VectorPolicy:
    """``learn_mode.forward(data)`` adds ``data`` to a vector."""

    def __init__(self, dim):
        self.w = torch.zeros(dim)
        self.learn_mode = self

    def forward(self, data):
        self.w += data
        return {"policy_loss": float(self.w.sum())}

    def state_dict(self):
        return {"w": self.w.clone()}


class SendHook(LearnerHook):
    def __init__(self, *args, comm, **kwargs):
        super().__init__(*args, **kwargs)
        self.comm = comm

    def __call__(self, engine):
        self.comm.send_policy(engine.policy.state_dict())
        self.comm.send_learn_info(dict(engine.learn_info, iteration=engine.train_iter))


class QueueCommLearner(BaseCommLearner):
    """Data in through a queue, policies and learn info out through lists: exactly DI-engine's
    four abstract members, nothing else."""

    def __init__(self, cfg=None):
        super().__init__(cfg)
        self.data = queue.Queue()
        self.policies, self.infos, self.asked = [], [], []

    def get_data(self, batch_size):
        self.asked.append(batch_size)
        return self.data.get(timeout=5)

    def send_policy(self, state_dict):
        self.policies.append(state_dict)

    def send_learn_info(self, learn_info):
        self.infos.append(learn_info)

    @property
    def hooks4call(self):
        return [SendHook("send", position="after_iter", comm=self)]


def test_a_di_style_comm_learner_drives_its_learner(tmp_path):
    comm = QueueCommLearner({"name": "q"})
    assert comm._end_flag
    comm.start()
    assert not comm._end_flag
    learner = comm._create_learner(
        {
            "learner_cfg": {"max_iterations": 3, "hook": {"save_ckpt_after_run": False}},
            "policy": VectorPolicy(2),
            "batch_size": 8,
            "exp_dir": tmp_path,
        }
    )
    assert [h.name for h in learner.hooks["after_iter"]][-1] == "send"
    for _ in range(3):
        comm.data.put(torch.ones(2))
    learner.start()  # DI's loop: max_iterations batches from the dataloader (get_data)
    assert learner.train_iter == 3 and set(comm.asked) == {8}
    assert [i["iteration"] for i in comm.infos] == [1, 2, 3]
    assert torch.equal(comm.policies[-1]["w"], torch.full((2,), 3.0))
    comm.close()
    assert comm._end_flag


def test_the_default_handlers_drive_a_run_with_the_four_members(tmp_path):
    comm = QueueCommLearner()
    assert sorted(comm.handlers) == sorted(LEARNER_TASKS)
    with pytest.raises(DingLiteError, match="send learner_start_task first"):
        comm.handlers["learner_get_data_task"]({})
    policy = VectorPolicy(2)
    task = {"learner_cfg": {"hook": {}}, "policy": policy, "batch_size": 4, "exp_dir": tmp_path}
    assert comm.deal_with_learner_start(task) == {"iteration": 0, "policy_version": 0}
    assert comm.handlers["learner_get_data_task"]({}) == {"batch_size": 4, "iteration": 0}
    for n in (1, 2):
        comm.data.put(torch.full((2,), float(n)))
        info = comm.handlers["learner_learn_task"]({"envstep": 10 * n})
        loss = {"policy_loss": 2.0 * (2 * n - 1)}  # w is 1, then 3, in both entries
        assert info == {"iteration": n, "learn_info": loss, "trained": True}
    comm.data.put(None)  # get_data has no batch: nothing trained
    assert comm.deal_with_learner_learn({}) == {"iteration": 2, "learn_info": {}, "trained": False}
    assert comm.asked == [4, 4, 4] and [i["iteration"] for i in comm.infos] == [1, 2]
    assert comm._learner.envstep == 20 and torch.equal(policy.w, torch.full((2,), 3.0))
    assert comm.deal_with_get_data({})["iteration"] == 2
    assert comm.deal_with_learner_close({}) == {"iteration": 2}
    assert [p.name for p in (tmp_path / "ckpt").iterdir()] == ["ckpt_iter00000002.pt"]


@pytest.mark.timeout(120)
def test_the_flask_learner_takes_a_second_start_after_close(tmp_path, start):  # noqa: F811
    learner, first = start(max_train_iter=5)
    info = learner.deal_with_learner_learn({"files": [rollout(tmp_path, 0)]})
    assert info["iteration"] == 1 and info["policy_path"].endswith("policy_v00000001.pt")
    learner.deal_with_learner_close({})
    assert learner.closed.is_set()
    again = learner.deal_with_learner_start({"config": dict(learner.cfg)})  # resident
    assert not learner.closed.is_set() and again["policy_version"] == 0  # a fresh run
    demand = learner.deal_with_get_data({})
    assert demand["stop_reason"] is None
