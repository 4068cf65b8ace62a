"""``ding-lite plot``: curves of three CartPole seeds to a PNG, the aggregation, the errors."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from helpers import TINY_CARTPOLE, tiny

from ding_lite import serial_pipeline
from ding_lite.entry.cli.command import main
from ding_lite.entry.reporting.curves import aggregate, t_quantile
from ding_lite.entry.reporting.plot import RunScalars, parse_metrics, plot_runs, series
from ding_lite.utils.log import read_tb_scalars

TINY = TINY_CARTPOLE
ITERS = 3
STEPS_PER_ITER = 4 * 16


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three 3-iteration CartPole runs (seeds 0, 1, 2), evaluated after every iteration."""
    root = tmp_path_factory.mktemp("curves")
    dirs = []
    for seed in range(3):
        exp_dir = root / f"cartpole_s{seed}"
        serial_pipeline(
            "cartpole_ppo", seed=seed, overrides=TINY, exp_dir=str(exp_dir), max_train_iter=ITERS
        )
        dirs.append(exp_dir)
    return dirs


def eval_returns(run_dir):
    """``{env step: eval return}`` of one run, read straight from its event file."""
    (events,) = (run_dir / "tb").glob("events.out.tfevents.*")
    return dict(read_tb_scalars(events)["charts/eval_return"])


def test_plot_writes_a_png_of_the_requested_size(runs, tmp_path, capsys):
    import matplotlib.image

    out = tmp_path / "figs" / "curves.png"
    argv = ["plot", *map(str, runs), "--out", str(out), "--size", "640x480"]
    argv += ["--metric", "charts/eval_return,charts/episodic_return", "--metric", "charts/SPS"]
    assert main(argv) == 0
    image = matplotlib.image.imread(out)
    assert image.shape[:2] == (480, 640)
    assert image.std() > 0.01  # something is drawn
    printed = capsys.readouterr().out
    for tag in ("charts/eval_return", "charts/episodic_return", "charts/SPS"):
        assert f"{tag} cartpole_ppo: 3 run(s), final mean" in printed
    assert [p.name for p in out.parent.iterdir()] == ["curves.png"]  # no temp file left


def test_grouped_mean_is_the_mean_of_the_runs_at_a_grid_point(runs, tmp_path):
    curves = plot_runs(runs, tmp_path / "c.png", band="ci")
    curve = curves["charts/eval_return"]["cartpole_ppo"]
    assert curve.n_runs == 3
    # Every run evaluated at the same env steps: the grid spans them, ends included.
    first, last = STEPS_PER_ITER, ITERS * STEPS_PER_ITER
    assert (curve.x[0], curve.x[-1]) == (first, last)
    values = [eval_returns(d) for d in runs]
    for i, step in ((0, first), (-1, last)):
        by_hand = sum(v[step] for v in values) / 3
        assert curve.mean[i] == pytest.approx(by_hand)
        std = np.std([v[step] for v in values], ddof=1)
        assert curve.high[i] - curve.mean[i] == pytest.approx(4.303 * std / math.sqrt(3))


def test_aggregate_interpolates_over_the_common_range():
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = (np.array([5.0, 15.0, 25.0]), np.array([1.0, 1.0, 1.0]))
    curve = aggregate([a, b], points=4)  # grid 5, 10, 15, 20
    assert curve.x.tolist() == [5.0, 10.0, 15.0, 20.0]
    assert curve.mean.tolist() == [3.0, 5.5, 8.0, 10.5]
    assert curve.low.tolist() == [1.0, 1.0, 1.0, 1.0]
    assert curve.high.tolist() == [5.0, 10.0, 15.0, 20.0]


def test_ci_band_is_the_t_interval_of_the_mean():
    xs = np.array([0.0, 1.0])
    runs = [(xs, np.array([c, c])) for c in (1.0, 2.0, 3.0)]
    curve = aggregate(runs, band="ci", points=2)
    assert curve.mean.tolist() == [2.0, 2.0]
    assert curve.high - curve.mean == pytest.approx([4.303 / math.sqrt(3)] * 2)
    one = aggregate(runs[:1], band="ci", points=2)
    assert one.low.tolist() == one.high.tolist() == [1.0, 1.0]
    assert t_quantile(1) == 12.706 and t_quantile(30) == pytest.approx(2.0423, abs=1e-4)
    assert t_quantile(1000) == pytest.approx(1.9623, abs=1e-4)


def test_runs_that_do_not_overlap_keep_their_own_curves_and_get_no_mean():
    early = (np.array([0.0, 10.0]), np.array([0.0, 1.0]))
    late = (np.array([20.0, 30.0]), np.array([0.0, 1.0]))
    curve = aggregate([early, late])
    assert not curve.overlaps and curve.n_runs == 2
    assert [xs.tolist() for xs, _ in curve.runs] == [[0.0, 10.0], [20.0, 30.0]]
    held = aggregate([early, late], points=3, hold_last=True)  # early held at 1.0 to 30
    assert held.x.tolist() == [20.0, 25.0, 30.0]
    assert held.mean.tolist() == [0.5, 0.75, 1.0]
    assert held.runs[0][0].tolist() == [0.0, 10.0, 30.0]


def test_runs_of_unequal_length_are_drawn_not_refused(tmp_path, capsys):
    """A run that solved stops at its first evaluation; a seed beside it evaluates later."""
    short, long = tmp_path / "short", tmp_path / "long"
    serial_pipeline("cartpole_ppo", overrides=TINY, exp_dir=str(short), max_train_iter=1)
    overrides = tiny("policy.learn.n_epochs=1", "evaluator.eval_freq=2")
    serial_pipeline("cartpole_ppo", overrides=overrides, exp_dir=str(long), max_train_iter=3)
    capsys.readouterr()
    out = tmp_path / "c.png"
    assert main(["plot", str(short), str(long), "--out", str(out)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("charts/eval")]
    assert "2 run(s) with no range in common (no mean): last" in line
    assert out.stat().st_size > 0
    assert main(["plot", str(short), str(long), "--out", str(out), "--hold-last"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("charts/eval")]
    assert "2 run(s), final mean" in line and line.endswith(f"at {3 * STEPS_PER_ITER} env steps")


def test_values_logged_at_one_step_are_averaged():
    run = RunScalars(
        path=None,  # type: ignore[arg-type]
        group="g",
        scalars={"charts/episodic_return": [(64, 10.0, 5.0), (64, 20.0, 5.1), (128, 7.0, 6.0)]},
        start=4.0,
    )
    xs, ys = series(run, "charts/episodic_return")
    assert xs.tolist() == [64.0, 128.0] and ys.tolist() == [15.0, 7.0]
    xs, _ = series(run, "charts/episodic_return", x="wall")
    assert xs.tolist() == pytest.approx([1.0, 1.1, 2.0])


def test_metrics_repeat_and_split():
    assert parse_metrics(None) == ["charts/eval_return"]
    assert parse_metrics(["a,b", "c", "a"]) == ["a", "b", "c"]


def test_wall_time_axis(runs, tmp_path):
    # charts/SPS comes with the first scalars of every iteration: each run's starts near 0 s.
    curves = plot_runs(runs, tmp_path / "w.png", metrics=["charts/SPS"], x="wall")
    curve = curves["charts/SPS"]["cartpole_ppo"]
    assert 0 <= curve.x[0] < curve.x[-1] < 600


def error_line(capsys):
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_dir_without_event_files(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)
    assert main(["plot", str(run), "--out", str(tmp_path / "x.png")]) == 2
    assert "no tensorboard event files" in error_line(capsys)
    assert not (tmp_path / "x.png").exists()


def test_a_missing_dir_or_one_that_is_no_run_dir_says_so(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nope"), "--out", str(tmp_path / "x.png")]) == 2
    assert error_line(capsys).endswith("nope: no such run dir")
    assert main(["plot", str(tmp_path), "--out", str(tmp_path / "x.png")]) == 2
    assert error_line(capsys).endswith("not a run dir (no tb/ folder, no config.json)")
    assert main(["eval", str(tmp_path)]) == 2
    assert error_line(capsys).endswith("not a run dir (no ckpt/ folder, no config.json)")
    assert not (tmp_path / "x.png").exists()


def test_an_unknown_metric_lists_the_tags(runs, tmp_path, capsys):
    argv = [
        "plot",
        str(runs[0]),
        "--metric",
        "charts/eval_retrun",
        "--out",
        str(tmp_path / "x.png"),
    ]
    assert main(argv) == 2
    err = error_line(capsys)
    assert "no scalar 'charts/eval_retrun'" in err and "charts/eval_return" in err


def test_missing_matplotlib(runs, tmp_path, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot", str(runs[0]), "--out", str(tmp_path / "x.png")]) == 2
    assert "pip install 'ding-lite[plot]'" in error_line(capsys)


def test_a_bad_size(runs, tmp_path, capsys):
    assert main(["plot", str(runs[0]), "--size", "big", "--out", str(tmp_path / "x.png")]) == 2
    assert "--size must be WIDTHxHEIGHT" in error_line(capsys)
