"""Too many non-finite optimizer steps in a row stop the learner as diverged."""

import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.policy import PPOPolicy
from ding_lite.worker.learner import BaseLearner


def _ppo(overrides):
    cfg = compile_config("cartpole_ppo", ["policy.learn.batch_size=32", *overrides])
    torch.manual_seed(0)
    return PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))


def _batch(policy, n=64):
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(n, 4, generator=g)
    action, logp, value = policy.collect_mode.forward(obs)
    adv = torch.randn(n, generator=g)
    return {"obs": obs, "action": action, "logp": logp, "value": value, "adv": adv,
            "ret": value + adv}  # fmt: skip


def test_learner_stops_as_diverged_after_max_skipped_steps(tmp_path):
    policy = _ppo(["policy.learn.learning_rate=1e30", "policy.learn.max_skipped_steps=10"])
    learner = BaseLearner({}, policy, exp_dir=tmp_path)
    data = _batch(policy)
    iterations = 0
    while learner.stop_reason is None and iterations < 20:
        learner.train(data)
        iterations += 1
    assert learner.stop_reason == "diverged"
    # 8 optimizer steps per iteration (2 minibatches x 4 epochs): the first is applied and
    # blows the weights up, then 10 in a row are skipped within the second iteration.
    assert iterations == 2 and learner.learn_info["skipped_steps"] >= 10


def test_a_sane_learning_rate_never_stops_the_learner(tmp_path):
    policy = _ppo(["policy.learn.max_skipped_steps=1"])
    learner = BaseLearner({}, policy, exp_dir=tmp_path)
    data = _batch(policy)
    for _ in range(3):
        learner.train(data)
    assert learner.stop_reason is None and learner.learn_info["skipped_steps"] == 0
