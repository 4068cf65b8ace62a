"""A recurrent policy end to end: the collector carries the state, the rollout stores it per
segment, the update replays segments from it, and a trained policy predicts with it."""

import numpy as np
import pytest
import torch

from ding_lite.config.config import compile_config
from ding_lite.data.spec import InvalidRolloutError, probe_rollout_spec, validate_rollout
from ding_lite.envs.from_config import build_env
from ding_lite.policy import create_policy
from ding_lite.utils.errors import ConfigError
from ding_lite.worker.collector.evaluator import Evaluator
from ding_lite.worker.collector.serial_collector import SerialCollector

LSTM = [
    "policy.model.core=lstm",
    "policy.model.core_size=8",
    "policy.model.hidden_sizes=[16]",
    "env.kwargs.observe=position",
    "env.num_envs=3",
    "policy.collect.n_steps=24",
    "policy.learn.batch_size=24",
]


def _setup(*overrides, seed=0):
    cfg = compile_config("cartpole_ppo", [*LSTM, *overrides])
    torch.manual_seed(seed)
    env = build_env(cfg, cfg.env.num_envs, "cpu", seed)
    policy = create_policy(
        cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space, device="cpu"
    )
    return cfg, env, policy


def _collect(horizon, rollouts=3, core="lstm"):
    cfg, env, policy = _setup(f"policy.learn.bptt_horizon={horizon}", f"policy.model.core={core}")
    collector = SerialCollector.from_config(env, policy, cfg, seed=0)
    torch.manual_seed(1)
    datas = []
    for _ in range(rollouts):
        datas.append(collector.collect())
        datas[-1]["dones"] = collector._b_dones.clone()  # for the checks only
    return datas, policy


@pytest.mark.parametrize("core", ["lstm", "gru"])
def test_replaying_segments_from_their_stored_state_gives_the_collected_outputs(core):
    """The update's view of a rollout (segments replayed from core_state with the episode
    starts) reproduces the log-probs and values the collector's step-by-step core gave."""
    (*_, data), policy = _collect(horizon=8, core=core)
    data.pop("dones")
    assert data["core_state"].shape == (3 * 24 // 8, policy.model.state_size)
    assert bool(data["episode_start"].any())  # episodes ended inside segments
    with torch.no_grad():
        dist, value = policy.model(data["obs"], data["core_state"], data["episode_start"])
    torch.testing.assert_close(dist.log_prob(data["action"]), data["logp"], rtol=0, atol=1e-6)
    torch.testing.assert_close(value, data["value"], rtol=0, atol=1e-6)


def test_segments_are_consecutive_steps_of_one_copy_and_the_state_resets_at_episode_ends():
    """With horizon 8 the rows are the horizon-1 rows reordered segment by segment; each
    episode_start follows a done of the same copy; the state stored at a segment that starts
    an episode is the carried one (zeroed by the core, not by the collector)."""
    one, policy_one = _collect(horizon=1)
    eight, policy_eight = _collect(horizon=8)
    T, B, H = 24, 3, 8
    for a, b in zip(one, eight, strict=True):
        # The advantage step's adv and ret, in the rollouts' row order.
        a_batch, b_batch = policy_one.learn_mode.prepare(a), policy_eight.learn_mode.prepare(b)
        for key in (
            "obs",
            "action",
            "logp",
            "value",
            "reward",
            "next_value",
            "terminated",
            "done",
            "adv",
            "ret",
            "episode_start",
        ):
            x, y = (a_batch, b_batch) if key in ("adv", "ret") else (a, b)
            by_time = x[key].view(T, B, *x[key].shape[1:])
            expect = by_time.unflatten(0, (T // H, H)).movedim(2, 0).flatten(0, 2)
            assert torch.equal(expect, y[key]), key
        starts = a["episode_start"].view(T, B)
        # An episode starts at the step after one ended, in the same copy.
        assert torch.equal(starts[1:], a["dones"][:-1]) and bool(starts[1:].any())
    assert bool(one[0]["episode_start"].view(T, B)[0].all())  # the first step of all
    assert torch.equal(one[1]["episode_start"].view(T, B)[0], one[0]["dones"][-1])
    # One recurrent state per segment, in segment order: the horizon-1 states at steps 0, 8, 16.
    states = one[-1]["core_state"].view(T, B, -1)[::H].movedim(1, 0).flatten(0, 1)
    assert torch.equal(states, eight[-1]["core_state"])


def test_first_step_of_an_episode_sees_a_zero_state():
    cfg, env, policy = _setup()
    model = policy.model
    obs = torch.randn(4, 2)
    state = torch.randn(4, model.state_size)
    zero = model.initial_state(4)
    starts = torch.tensor([True, False, True, False])
    torch.manual_seed(0)
    _, logp_a, value_a, state_a = model.step(obs, state, starts)
    mixed = torch.where(starts.unsqueeze(1), zero, state)
    torch.manual_seed(0)
    _, logp_b, value_b, state_b = model.step(obs, mixed, torch.zeros(4, dtype=torch.bool))
    assert torch.equal(value_a, value_b) and torch.equal(state_a, state_b)


def test_the_update_trains_a_recurrent_policy_on_segments():
    (first, *_), policy = _collect(horizon=8, rollouts=1)
    first.pop("dones")
    before = [p.detach().clone() for p in policy.model.parameters()]
    info = policy.learn_mode.forward(first)
    assert info["minibatches"] == policy.cfg.learn.n_epochs * (72 // 24)
    names = [name for name, _ in policy.model.named_parameters()]
    after = dict(policy.model.named_parameters())["core.rnn.weight_hh_l0"]
    assert not torch.equal(after, before[names.index("core.rnn.weight_hh_l0")])
    assert all(np.isfinite(v) for v in info.values())


def test_the_rollout_spec_checks_the_state():
    cfg, env, policy = _setup("policy.learn.bptt_horizon=8")
    spec = probe_rollout_spec(env, policy.collect_mode, "cpu", horizon=8)
    collector = SerialCollector.from_config(env, policy, cfg, seed=0)
    data = collector.collect()
    validate_rollout({"data": data}, spec, 72)
    bad = dict(data, core_state=data["core_state"][:-1])
    with pytest.raises(InvalidRolloutError, match="'core_state' has 8 rows for 72 samples"):
        validate_rollout({"data": bad}, spec, 72)
    missing = {k: v for k, v in data.items() if k != "episode_start"}
    with pytest.raises(InvalidRolloutError, match="missing key 'episode_start'"):
        validate_rollout({"data": missing}, spec, 72)
    nan = dict(data, core_state=data["core_state"].clone().fill_(float("nan")))
    with pytest.raises(InvalidRolloutError, match="non-finite"):
        validate_rollout({"data": nan}, spec, 72)


def test_evaluator_carries_the_state():
    cfg, env, policy = _setup()
    result = Evaluator(env, policy.eval_mode, seed=0).eval()
    assert result.n_episodes == 3 and result.length_mean >= 8


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["policy.learn.bptt_horizon=5"], "policy.collect.n_steps=24 is not a multiple of"),
        (
            ["policy.learn.bptt_horizon=8", "policy.learn.batch_size=20"],
            "policy.learn.batch_size=20 is not a multiple of policy.learn.bptt_horizon=8",
        ),
        (["policy.model.core=rnn"], "policy.model.core"),
    ],
)
def test_sizes_that_do_not_divide_name_their_keys(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compile_config("cartpole_ppo", [*LSTM, *overrides])


def test_predict_carries_the_state_as_recurrent_ppo_does(tmp_path):
    """``predict(obs, state=None, episode_start=None)`` returns ``(action, state)``; feeding
    the state back steps the core; ``episode_start`` zeroes a row's state; a single
    observation gives the same as its row in a batch."""
    from ding_lite import load_policy, serial_pipeline

    run = serial_pipeline(
        "cartpole_ppo",
        overrides=[*LSTM, "evaluator.eval_freq=0", "evaluator.stop_value=none"],
        exp_dir=str(tmp_path / "run"),
        max_train_iter=2,
        verbose=0,
    )
    policy = load_policy(tmp_path / "run")
    assert policy.recurrent
    obs = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32) * 0.05
    action, state = policy.predict(obs)
    assert action.shape == (5,) and state.shape == (5, policy.model.state_size)
    zeros = np.zeros_like(state)
    again, state_again = policy.predict(obs, zeros)
    assert np.array_equal(again, action) and np.array_equal(state_again, state)
    # The second step depends on the state carried; episode_start forgets it.
    _, carried = policy.predict(obs, state)
    _, restarted = policy.predict(obs, state, episode_start=np.ones(5, dtype=bool))
    assert not np.array_equal(carried, state_again) and np.array_equal(restarted, state)
    one, one_state = policy.predict(obs[2], state[2])
    assert one.shape == () and one_state.shape == (policy.model.state_size,)
    np.testing.assert_allclose(one_state, carried[2], rtol=0, atol=1e-6)
    # The run's own predict is the same, torch in gives torch out.
    act_t, state_t = run.predict(torch.from_numpy(obs))
    assert isinstance(state_t, torch.Tensor) and torch.equal(act_t, torch.from_numpy(action))
    with pytest.raises(ValueError, match="state of shape"):
        policy.predict(obs, state[:2])
    with pytest.raises(ValueError, match="episode_start has 2 entries for 5 rows"):
        policy.predict(obs, state, episode_start=[True, False])


def test_a_feed_forward_policy_predicts_as_before_and_refuses_a_state(tmp_path):
    from ding_lite import load_policy, serial_pipeline

    serial_pipeline(
        "cartpole_ppo",
        overrides=["env.num_envs=2", "policy.collect.n_steps=8", "evaluator.eval_freq=0"],
        exp_dir=str(tmp_path / "run"),
        max_train_iter=1,
        verbose=0,
    )
    policy = load_policy(tmp_path / "run")
    assert not policy.recurrent
    assert policy.predict(np.zeros(4, dtype=np.float32)).shape == ()
    with pytest.raises(ValueError, match="no memory"):
        policy.predict(np.zeros(4, dtype=np.float32), np.zeros(8))
