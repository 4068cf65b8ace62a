"""One rank of the data-parallel equivalence test (run as a script by the test).

With RANK/WORLD_SIZE/MASTER_* in the environment it joins the gloo group; without, it is
the single-process reference. Either way it trains a PPO policy for two iterations on the
same batch and saves the parameters, the normalizer and the learn info to argv[1].
"""

import sys

import torch

from ding_lite.config import compile_config
from ding_lite.envs.spaces import Discrete
from ding_lite.model.normalizer import summarize
from ding_lite.policy import PPOPolicy
from ding_lite.utils import distributed
from ding_lite.worker.learner import BaseLearner

OVERRIDES = [
    "policy.learn.batch_size=64",
    "policy.learn.n_epochs=6",
    "policy.learn.target_kl=0.004",  # stops the first iteration's epochs early
    "policy.learn.learning_rate=0.003",
    "policy.model.obs_norm=true",
]


def main(out: str) -> None:
    torch.set_num_threads(1)
    if distributed.env_world_size() > 1:
        distributed.init_from_env(timeout_s=60)
    cfg = compile_config("cartpole_ppo", OVERRIDES)
    torch.manual_seed(0)
    policy = PPOPolicy(cfg.policy, obs_shape=(4,), action_space=Discrete(2))
    # DI-engine's learner view of the group (use_distributed: already joined above).
    learner = BaseLearner({"use_distributed": distributed.env_world_size() > 1}, policy)
    rank, size = distributed.world()
    assert (learner.rank, learner.world_size) == (rank, size)
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(256, 4, generator=g) * 3 + 1
    action, logp, value = policy.collect_mode.forward(obs)
    adv = torch.randn(256, generator=g) * 5 + 2  # far from normalized
    data = {"obs": obs, "action": action, "logp": logp, "value": value, "adv": adv,
            "ret": value + adv, "obs_norm_update": summarize(obs, (4,))[None]}  # fmt: skip
    torch.manual_seed(2)  # the minibatch order; a follower's draw is replaced by rank 0's
    infos = [policy.learn_mode.forward(data) for _ in range(2)]
    params = torch.cat([p.detach().flatten() for p in policy.model.parameters()])
    rms = policy.obs_rms
    torch.save(
        {"params": params, "mean": rms.mean, "m2": rms.m2,
         "minibatches": torch.tensor([i["minibatches"] for i in infos]),
         "approx_kl": torch.tensor([i["approx_kl"] for i in infos])},
        out,
    )  # fmt: skip
    distributed.finalize()


if __name__ == "__main__":
    main(sys.argv[1])
