"""The agent axis through the collector and the evaluator: one policy row per agent."""

import torch

from ding_lite.data.spec import probe_rollout_spec, validate_rollout
from ding_lite.envs import create_env
from ding_lite.envs.two_agent_meet import LEFT, RIGHT
from ding_lite.policy.ppo.advantages import AdvantageStep
from ding_lite.rl_utils import get_adv_estimator
from ding_lite.worker.collector.evaluator import Evaluator
from ding_lite.worker.collector.serial_collector import SerialCollector


class Walkers:
    """A scripted collect and eval mode: agent 0 walks right, agent 1 left (the optimum of
    two_agent_meet: meet on cell 2 after 2 steps, 1.0 each). Rows are copy-major."""

    obs_rms = ret_rms = None
    recurrent = False

    def __init__(self) -> None:
        self.seen: list[torch.Tensor] = []

    def _actions(self, obs: torch.Tensor) -> torch.Tensor:
        self.seen.append(obs.clone())
        agent = torch.arange(obs.shape[0]) % 2
        return torch.where(agent == 0, RIGHT, LEFT)

    def forward(self, obs):
        action = self._actions(obs)
        return action, torch.zeros(obs.shape[0]), torch.zeros(obs.shape[0])

    def get_value(self, obs):
        return torch.zeros(obs.shape[0])


def test_two_agents_per_copy_are_two_rows_and_counts_say_which_they_mean():
    env = create_env("two_agent_meet", 3)
    policy = Walkers()
    collector = SerialCollector(env, policy, n_steps=4, gamma=1.0, seed=0)
    data = collector.collect()
    advantages = AdvantageStep(
        get_adv_estimator("gae_no_norm"), gamma=1.0, lam=1.0, n_steps=4, horizon=1
    )
    # 4 env steps x 3 copies = 12 env steps; 2 agents each: 24 samples (agent steps).
    assert collector.envstep == 12 and data["obs"].shape == (24, 2)
    assert policy.seen[0].shape == (6, 2)  # the policy sees one row per agent
    # Row r of a step is copy r // 2, agent r % 2: agent 0 sees [own, other] = [0, 1].
    assert torch.equal(policy.seen[0][:2], torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    actions = data["action"].view(4, 6)
    assert torch.equal(actions[:, 0], torch.full((4,), RIGHT))
    assert torch.equal(actions[:, 1], torch.full((4,), LEFT))
    # Each agent: 0 on the first step (both moved), 1.0 on meeting, then again.
    rewards = torch.tensor([0.0, 1.0, 0.0, 1.0])
    assert torch.equal(data["reward"].view(4, 6), rewards[:, None].expand(4, 6))
    batch, _ = advantages(data, None)
    ret = batch["ret"].view(4, 6)  # gamma 1, value 0: the rest of the episode's reward
    for row in range(6):
        assert torch.equal(ret[:, row], torch.tensor([1.0, 1.0, 1.0, 1.0])), row
    assert torch.equal(collector._b_rewards[:, 0], rewards)
    # Dones per copy, repeated for both of its agents.
    assert torch.equal(collector._b_dones[:, 0], torch.tensor([False, True, False, True]))
    assert torch.equal(collector._b_dones[:, 0], collector._b_dones[:, 1])
    # 2 episodes per copy = 6 episodes; each agent's return counts: 12 returns of 1.0.
    assert collector.episodes == 6
    assert collector.last_returns == [1.0] * 12 and collector.last_lengths == [2] * 12


def test_the_rollout_spec_and_evaluator_take_agent_rows():
    env = create_env("two_agent_meet", 2)
    policy = Walkers()
    collector = SerialCollector(env, policy, n_steps=2, gamma=0.9, seed=0)
    spec = probe_rollout_spec(create_env("two_agent_meet", 1), policy, n_steps=2)
    validate_rollout({"data": collector.collect()}, spec, 8)

    class Eval(Walkers):
        def forward(self, obs):
            return self._actions(obs)

    result = Evaluator(create_env("two_agent_meet", 3), Eval(), stop_value=0.9).eval()
    # Every agent's episode counts: 3 copies x 2 agents, each returning 1.0 in 2 steps.
    assert result.n_episodes == 6 and result.return_mean == 1.0 and result.length_mean == 2
    assert result.solved
