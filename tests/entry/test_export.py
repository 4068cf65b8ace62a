"""``ding-lite export``: ONNX and TorchScript graphs act exactly as ``load_policy(...).predict``.

One tiny run per experiment (one iteration), exported to both formats; the graphs' actions
are compared with ``predict``'s on observations from the env (reset, then random actions)
and random ones far outside them (where the normalization's clip matters).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnxruntime as ort  # the test extra's, as ding-lite[export]'s
import pytest
import torch
from helpers import tiny

from ding_lite import load_policy, serial_pipeline
from ding_lite.config import compile_config
from ding_lite.entry.cli.command import main
from ding_lite.entry.trained.export import FORMATS, ExportError, ExportInfo, export_policy
from ding_lite.envs.from_config import build_env
from ding_lite.envs.spaces import Discrete, Hybrid, MultiDiscrete, space_to_dict
from ding_lite.model import build_model
from ding_lite.utils.file_io import atomic_torch_save
from ding_lite.worker.learner.checkpoint import CKPT_FORMAT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:FutureWarning"),
]

# experiment -> overrides on top of the tiny run's (pendulum_lstm_ppo's 64-step segments do
# not fit a 16-step rollout).
EXPERIMENTS = {
    "cartpole_ppo": [],
    "pendulum_ppo": [],
    "pendulum_lstm_ppo": ["policy.learn.bptt_horizon=8"],
    "mujoco_ppo": [],
    "aircombat_ppo": [],
}
N_OBS = 1000
N_RANDOM = 200  # of the N_OBS, drawn at random rather than met in the env
STEPS = 200  # of the recurrent comparison
ATOL = 1e-5


class Exported(NamedTuple):
    name: str
    run: Path
    files: dict[str, ExportInfo]


def _overrides(name: str) -> list[str]:
    return tiny("policy.learn.n_epochs=1", *EXPERIMENTS[name])


@pytest.fixture(scope="module")
def trained(tmp_path_factory, request) -> Callable[[str], Exported]:
    """``trained(name)``: the experiment's tiny run, exported to both formats (made once;
    aircombat_ppo's is the session's one-iteration run)."""
    made: dict[str, Exported] = {}

    def get(name: str) -> Exported:
        if name not in made:
            folder = tmp_path_factory.mktemp("export")
            if name == "aircombat_ppo":
                run = request.getfixturevalue("aircombat_ckpt").parent
            else:
                run = folder / name
                overrides = _overrides(name)
                serial_pipeline(name, overrides=overrides, exp_dir=str(run), max_train_iter=1)
            files = {
                fmt: export_policy(run, fmt, out=folder / f"policy{ext}")
                for fmt, ext in FORMATS.items()
            }
            made[name] = Exported(name, run, files)
        return made[name]

    return get


def _random_actions(space, n: int, gen: torch.Generator) -> torch.Tensor:
    if isinstance(space, Discrete):
        return torch.randint(0, space.n, (n,), generator=gen)
    if isinstance(space, Hybrid):
        d = space.continuous.dim
        cont = torch.rand(n, d, generator=gen) * 2 - 1
        disc = [torch.randint(0, k, (n, 1), generator=gen) for k in space.discrete]
        return torch.cat([cont, *(p.float() for p in disc)], 1)
    if isinstance(space, MultiDiscrete):
        return torch.stack([torch.randint(0, k, (n,), generator=gen) for k in space.nvec], 1)
    return torch.rand(n, space.dim, generator=gen) * 2 - 1  # the env clips


def env_trajectory(name: str, steps: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations ``[steps, copies, *obs_shape]`` of the experiment's env under random
    actions from a reset, and whether each starts an episode ``[steps, copies]``."""
    cfg = compile_config(name, _overrides(name))
    env = build_env(cfg, copies, "cpu", seed=7)
    gen = torch.Generator().manual_seed(7)
    obs, _ = env.reset()
    start = torch.ones(copies, dtype=torch.bool)
    observations, starts = [], []
    for _ in range(steps):
        observations.append(obs.reshape(copies, *env.obs_shape).float())
        starts.append(start)
        obs, _, _, _, info = env.step(_random_actions(env.action_space, copies, gen))
        start = info["done"].reshape(copies).bool()
    env.close()
    return torch.stack(observations).numpy(), torch.stack(starts).numpy()


def observations(name: str, obs_shape: tuple[int, ...]) -> np.ndarray:
    """``N_OBS`` observations: from the env, and ``N_RANDOM`` random ones, some far out."""
    met, _ = env_trajectory(name, (N_OBS - N_RANDOM) // 8, 8)
    rng = np.random.default_rng(0)
    scale = np.abs(met).reshape(-1, *obs_shape).max(0) + 1.0
    wild = rng.normal(size=(N_RANDOM, *obs_shape)) * scale * 3
    return np.concatenate([met.reshape(-1, *obs_shape), wild]).astype(np.float32)


class Graphs:
    """The two exported files of a run, called alike: ``(obs, *extra) -> outputs``."""

    def __init__(self, files: dict[str, ExportInfo]) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # as the tests' torch: no spinning second thread
        self.onnx = ort.InferenceSession(str(files["onnx"].path), options)
        self.names = [spec.name for spec in files["onnx"].inputs]
        self.script = torch.jit.load(str(files["torchscript"].path))

    def run(self, fmt: str, *inputs: np.ndarray) -> list[np.ndarray]:
        """The outputs of the ``fmt`` file for ``inputs``, in the graph's order."""
        if fmt == "onnx":
            return self.onnx.run(None, dict(zip(self.names, inputs, strict=True)))
        out = self.script(*(torch.from_numpy(x) for x in inputs))
        return [x.numpy() for x in (out if isinstance(out, tuple) else (out,))]

    def both(self, *inputs: np.ndarray) -> dict[str, list[np.ndarray]]:
        """``{format: outputs}`` of both files for ``inputs``."""
        return {fmt: self.run(fmt, *inputs) for fmt in FORMATS}


def assert_actions_equal(got: np.ndarray, want: np.ndarray, discrete: bool) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if discrete:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_graphs_act_as_predict(trained, name: str) -> None:
    exported = trained(name)
    policy = load_policy(exported.run)
    discrete = isinstance(policy.action_space, Discrete | MultiDiscrete)
    obs = observations(exported.name, policy.obs_shape)
    graphs = Graphs(exported.files)
    if policy.recurrent:  # every row from a fresh state: the state is the next test's
        state = np.zeros((N_OBS, policy.model.state_size), np.float32)
        start = np.ones(N_OBS, dtype=bool)
        want, want_state = policy.predict(obs, state, start)
        for fmt, (action, next_state) in graphs.both(obs, state, start).items():
            assert_actions_equal(action, want, discrete)
            np.testing.assert_allclose(next_state, want_state, rtol=0, atol=ATOL, err_msg=fmt)
        return
    want = policy.predict(obs)
    for outputs in graphs.both(obs).values():
        assert len(outputs) == 1
        assert_actions_equal(outputs[0], want, discrete)


def test_recurrent_state_carried_over_an_episode(trained) -> None:
    exported = trained("pendulum_lstm_ppo")
    policy = load_policy(exported.run)
    copies = 4
    obs, starts = env_trajectory(exported.name, STEPS, copies)
    # Episode starts the env did not make too (a pendulum episode outlasts the sequence).
    starts = starts | (np.random.default_rng(1).random(starts.shape) < 0.03)
    zeros = np.zeros((copies, policy.model.state_size), np.float32)
    graphs = Graphs(exported.files)
    state = {"predict": zeros, "onnx": zeros, "torchscript": zeros}
    for t in range(STEPS):
        want, state["predict"] = policy.predict(obs[t], state["predict"], starts[t])
        for fmt in ("onnx", "torchscript"):
            outputs = graphs.run(fmt, obs[t], state[fmt], starts[t])
            np.testing.assert_allclose(outputs[0], want, rtol=0, atol=ATOL, err_msg=f"{fmt} {t}")
            state[fmt] = outputs[1]
    assert starts[1:].any(), "no episode started after the first step"
    assert np.abs(state["predict"]).max() > 0


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_files_record_their_inputs_and_outputs(trained, name: str) -> None:
    exported = trained(name)
    policy = load_policy(exported.run)
    info = exported.files["onnx"]
    session = ort.InferenceSession(str(info.path))
    assert [i.name for i in session.get_inputs()] == [s.name for s in info.inputs]
    assert [o.name for o in session.get_outputs()] == [s.name for s in info.outputs]
    assert [i.shape for i in session.get_inputs()] == [list(s.shape) for s in info.inputs]
    assert info.inputs[0].shape == ("batch", *policy.obs_shape)
    assert [s.name for s in info.inputs] == (
        ["obs", "state", "episode_start"] if policy.recurrent else ["obs"]
    )
    assert info.checkpoint == policy.checkpoint and info.train_iter == 1
    left = [p.name for p in info.path.parent.iterdir() if p.name.endswith(".tmp")]
    assert not left, f"temp files left: {left}"


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_sampling_graphs_draw_from_the_policy(trained, name: str, tmp_path: Path) -> None:
    exported = trained(name)
    policy = load_policy(exported.run)
    files = {
        fmt: export_policy(exported.run, fmt, out=tmp_path / f"sampling{ext}", sampling=True)
        for fmt, ext in FORMATS.items()
    }
    noise_spec = files["onnx"].inputs[-1]
    assert noise_spec.name == "noise" and noise_spec.shape[0] == "batch"
    rows = 4000
    obs = np.repeat(env_trajectory(exported.name, 1, 1)[0][0], rows, axis=0)
    noise = np.random.default_rng(2).standard_normal((rows, noise_spec.shape[1]))
    noise = noise.astype(np.float32)
    memory = []
    if policy.recurrent:
        memory = [np.zeros((rows, policy.model.state_size), np.float32), np.ones(rows, bool)]
    outputs = Graphs(files).both(obs, *memory, noise)
    action = outputs["onnx"][0]
    discrete = isinstance(policy.action_space, Discrete | MultiDiscrete)
    assert_actions_equal(outputs["torchscript"][0], action, discrete)

    with torch.no_grad():  # the policy's distribution at that observation
        x = policy.model.normalize_obs(torch.from_numpy(obs[:1]))
        dist = policy.model.get_dist(x, *(torch.from_numpy(m[:1]) for m in memory))
    space = policy.action_space
    if isinstance(space, Discrete):
        assert_frequencies(action, dist.probs[0].numpy())
    elif isinstance(space, Hybrid):
        d = space.continuous.dim
        cont = torch.tanh(dist.gauss.mean + dist.gauss.std * torch.from_numpy(noise[:, :d]))
        cont = cont.clamp(-1 + 1e-6, 1 - 1e-6)
        if dist.bounds is not None:
            cont = dist.bounds.loc + dist.bounds.scale * cont
        np.testing.assert_allclose(action[:, :d], cont.numpy(), rtol=0, atol=ATOL)
        for j, n in enumerate(space.discrete):
            assert_frequencies(action[:, d + j].astype(np.int64), dist.cat.probs[0, j, :n].numpy())
    else:  # Box: mean + std * noise, clipped to the bounds as predict clips
        want = dist.mean + dist.std * torch.from_numpy(noise)
        want = want.clamp(policy._low, policy._high)
        np.testing.assert_allclose(action, want.numpy(), rtol=0, atol=ATOL)
        assert action.std(0).min() > 0


def assert_frequencies(actions: np.ndarray, probs: np.ndarray) -> None:
    """How often each choice was drawn matches its probability (4 standard errors)."""
    freq = np.bincount(actions, minlength=len(probs)) / len(actions)
    tolerance = 4 * np.sqrt(probs * (1 - probs) / len(actions)) + 1e-3
    assert (np.abs(freq - probs) <= tolerance).all(), (freq, probs)


def test_cli_prints_the_file_and_its_inputs(trained, tmp_path: Path, capsys) -> None:
    exported = trained("pendulum_lstm_ppo")
    out = tmp_path / "lstm.pt"
    assert main(["export", str(exported.run), "--format", "torchscript", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{out}: torchscript, deterministic policy of ")
    assert lines[1:] == [
        "  input  obs float32 [batch, 2]",
        "  input  state float32 [batch, 256]",
        "  input  episode_start bool [batch]",
        "  output action float32 [batch, 1]",
        "  output next_state float32 [batch, 256]",
    ]
    assert torch.jit.load(str(out)) is not None


def run_failing(args: list[str], capsys) -> str:
    """The one line a failing ``ding-lite`` command prints (its exit code is 2)."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_refuses_what_it_cannot_export(tmp_path: Path, capsys, monkeypatch) -> None:
    out = str(tmp_path / "p.onnx")
    err = run_failing(["export", str(tmp_path / "gone"), "--out", out], capsys)
    assert "no such checkpoint file or run dir" in err
    (tmp_path / "notes").mkdir()
    err = run_failing(["export", str(tmp_path / "notes"), "--out", out], capsys)
    assert "is not a run dir: it has no ckpt/ folder" in err
    (tmp_path / "empty" / "ckpt").mkdir(parents=True)
    err = run_failing(["export", str(tmp_path / "empty"), "--out", out], capsys)
    assert "no readable checkpoint" in err
    missing = tmp_path / "no" / "p.onnx"
    err = run_failing(["export", str(tmp_path / "empty"), "--out", str(missing)], capsys)
    assert f"its folder {missing.parent} does not exist" in err
    err = run_failing(["export", str(tmp_path / "empty"), "--out", str(tmp_path)], capsys)
    assert err.endswith("it is a folder; name the file to write")
    with pytest.raises(ExportError, match="unknown export format 'tflite'; known: onnx, "):
        export_policy(tmp_path / "empty", "tflite", out=out)
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path / "empty"), "--format", "tflite"])
    assert "invalid choice: 'tflite'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if not installed
    err = run_failing(["export", str(tmp_path / "empty"), "--out", out], capsys)
    assert err.endswith("needs the onnx package: pip install 'ding-lite[export]'")
    assert not list(tmp_path.glob("*.onnx"))


def test_multi_discrete_policy_exports_alike(tmp_path: Path) -> None:
    """No bundled experiment acts in a MultiDiscrete space (gymnasium's do): a checkpoint of
    one, written as the learner writes them, exports and acts as predict does."""
    space = MultiDiscrete((2, 3, 5))
    options = {"hidden_sizes": [16], "obs_norm": True, "ortho_init": False}
    model = build_model((3, 2), space, **options)
    model.obs_rms.merge(model.obs_rms.summarize(torch.randn(64, 3, 2) * 4 + 1))
    arch = {"obs_shape": [3, 2], "action_space": space_to_dict(space), "options": options}
    ckpt = {"format": CKPT_FORMAT, "train_iter": 7, "policy": {"model": model.state_dict()}}
    ckpt["policy"]["arch"] = arch
    (tmp_path / "ckpt").mkdir()
    atomic_torch_save(ckpt, tmp_path / "ckpt" / "ckpt_iter00000007.pt")
    files = {
        fmt: export_policy(tmp_path, fmt, out=tmp_path / f"policy{ext}")
        for fmt, ext in FORMATS.items()
    }
    assert files["onnx"].outputs[0].shape == ("batch", 3) and files["onnx"].train_iter == 7
    obs = (np.random.default_rng(3).normal(size=(N_OBS, 3, 2)) * 6).astype(np.float32)
    want = load_policy(tmp_path).predict(obs)
    for outputs in Graphs(files).both(obs).values():
        assert_actions_equal(outputs[0], want, discrete=True)

    sampling = {
        fmt: export_policy(tmp_path, fmt, out=tmp_path / f"sampling{ext}", sampling=True)
        for fmt, ext in FORMATS.items()
    }
    assert sampling["onnx"].inputs[-1].shape == ("batch", 3 * 5)
    rows = 4000
    noise = np.random.default_rng(4).standard_normal((rows, 15)).astype(np.float32)
    outputs = Graphs(sampling).both(np.repeat(obs[:1], rows, axis=0), noise)
    np.testing.assert_array_equal(outputs["onnx"][0], outputs["torchscript"][0])
    with torch.no_grad():
        dist = model.get_dist(model.normalize_obs(torch.from_numpy(obs[:1])))
    for j, n in enumerate(space.nvec):
        assert_frequencies(outputs["onnx"][0][:, j], dist.cat.probs[0, j, :n].numpy())
