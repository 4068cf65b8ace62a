"""``ding-lite plot RUN_DIR ... --out FILE.png``: learning curves of runs, grouped by experiment.

Reads every tensorboard event file under each run's ``tb/`` folder (a serial run's
``tb/``, a parallel run's ``tb/coordinator`` and ``tb/<learner id>``) with
:func:`ding_lite.utils.log.read_tb_events_from`, so no tensorboard install is needed; a
damaged record is skipped with a one-line warning. Runs are grouped by the ``exp_name`` of
their saved ``config.json`` (the folder's name when there is none). For each metric and
group it draws the mean over the group's runs and a band: the runs' min-max, or a 95%
t-interval of the mean.

Runs log at different env steps (or seconds), so each run is interpolated linearly onto a
common grid of :data:`GRID_POINTS` points spanning the range every run of the group covers
(from the latest first point to the earliest last point); nothing is extrapolated. Points a
run logged at the same x (several episodes ending in one iteration) are averaged first.
matplotlib is an optional dependency: ``pip install 'ding-lite[plot]'``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import EVENT_GLOB, read_tb_events_from
from ding_lite.utils.text import printable

EVAL_TAG = "charts/eval_return"
GRID_POINTS = 200
BANDS = ("minmax", "ci")
X_AXES = ("envstep", "wall")
X_LABELS = {"envstep": "env steps", "wall": "seconds since the run's first scalar"}

# Two-sided 95% quantiles of Student's t for 1..10 degrees of freedom; above that, the
# Cornish-Fisher expansion in t_quantile is within 0.01%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


@dataclass
class RunScalars:
    """One run's scalars.

    Attributes:
        path: the run's experiment dir.
        group: its experiment's name (config.json's ``exp_name``, else the folder's name).
        scalars: ``{tag: [(step, value, wall time), ...]}`` over all its event files.
        start: wall time of its first scalar (the origin of ``--x wall``).
        damaged: one line per damaged record skipped (or event file left unread).
    """

    path: Path
    group: str
    scalars: dict[str, list[tuple[int, float, float]]]
    start: float
    damaged: list[str] = field(default_factory=list)


@dataclass
class Curve:
    """A group's curve of one metric on the common grid.

    Attributes:
        x: the grid (env steps or seconds), ``(P,)``.
        mean: mean over the runs at each grid point, ``(P,)``.
        low: lower edge of the band, ``(P,)``.
        high: upper edge of the band, ``(P,)``.
        n_runs: runs averaged.
    """

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_runs: int


def read_run(run_path: str | os.PathLike) -> RunScalars:
    """Every scalar of one run, from all event files under ``<run_path>/tb`` (recursively).

    A damaged record is skipped and an unreadable file left out; both are listed in
    :attr:`RunScalars.damaged`.

    Raises:
        DingLiteError: the folder holds no event file, or none with a readable scalar.
    """
    path = Path(run_path)
    files = sorted(p for p in (path / "tb").rglob(EVENT_GLOB) if p.is_file())
    if not files:
        raise DingLiteError(printable(f"{path}: no tensorboard event files under {path / 'tb'}"))
    scalars: dict[str, list[tuple[int, float, float]]] = {}
    damaged: list[str] = []
    for file in files:
        try:
            got = read_tb_events_from(file, 0)
        except OSError as err:
            damaged.append(printable(f"cannot read {file}: {err.strerror or err}"))
            continue
        damaged += [printable(line) for line in got.damaged]
        for tag, points in got.scalars.items():
            scalars.setdefault(printable(tag), []).extend(points)
    if not scalars and damaged:
        raise DingLiteError(
            f"{printable(str(path))}: no readable scalar in its event files ({damaged[0]})"
        )
    walls = [w for points in scalars.values() for _, _, w in points]
    return RunScalars(path, _experiment_name(path), scalars, min(walls, default=0.0), damaged)


def _experiment_name(path: Path) -> str:
    config, name = path / "config.json", None
    try:
        if config.is_file():  # not a folder or a pipe, which would block the read
            name = json.loads(config.read_text(encoding="utf-8"))["exp_name"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        pass  # unreadable or no name in it: the folder's name
    return printable(name if isinstance(name, str) and name else path.resolve().name, 80)


def series(run: RunScalars, tag: str, x: str = "envstep") -> tuple[np.ndarray, np.ndarray]:
    """``(xs, values)`` of one tag of a run, sorted by x, one value per x (their mean).

    Args:
        run: the run.
        tag: a scalar's tag (``charts/eval_return``).
        x: ``"envstep"`` (the logged step) or ``"wall"`` (seconds since the run's first
            scalar).

    Raises:
        DingLiteError: the run logged no scalar ``tag`` (the message lists those it has).
    """
    points = run.scalars.get(tag)
    if not points:
        known = ", ".join(sorted(run.scalars)) or "none"
        raise DingLiteError(printable(f"{run.path} has no scalar {tag!r}; it has: {known}"))
    if x == "wall":
        raw = np.array([w - run.start for _, _, w in points], dtype=np.float64)
    else:
        raw = np.array([s for s, _, _ in points], dtype=np.float64)
    values = np.array([v for _, v, _ in points], dtype=np.float64)
    xs, inverse = np.unique(raw, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(xs))
    return xs, sums / np.bincount(inverse, minlength=len(xs))


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def aggregate(
    runs: Sequence[tuple[np.ndarray, np.ndarray]], band: str = "minmax", points: int = GRID_POINTS
) -> Curve:
    """Mean and band of several runs' curves on a common grid.

    Each run (``(xs, values)``, xs increasing) is interpolated linearly onto ``points``
    evenly spaced x over the range all runs cover: from the largest first x to the smallest
    last x.

    Args:
        runs: the runs' curves.
        band: ``"minmax"`` (the runs' lowest and highest value) or ``"ci"`` (the 95%
            t-interval of the mean, ``mean +- t(n-1) * std / sqrt(n)``; no width for one run).
        points: grid points.

    Raises:
        DingLiteError: no run given, or the runs' x ranges do not overlap.
    """
    if not runs:
        raise DingLiteError("no run to aggregate")
    if band not in BANDS:
        raise DingLiteError(f"unknown band {band!r}; known: {', '.join(BANDS)}")
    first = max(float(xs[0]) for xs, _ in runs)
    last = min(float(xs[-1]) for xs, _ in runs)
    if first > last:
        raise DingLiteError(
            f"the runs' curves do not overlap (one starts at {first:g}, one ends at {last:g})"
        )
    grid = np.linspace(first, last, points if last > first else 1)
    values = np.stack([np.interp(grid, xs, ys) for xs, ys in runs])  # (runs, P)
    mean = values.mean(axis=0)
    n = len(runs)
    if band == "minmax":
        low, high = values.min(axis=0), values.max(axis=0)
    elif n == 1:
        low, high = mean.copy(), mean.copy()
    else:
        half = t_quantile(n - 1) * values.std(axis=0, ddof=1) / math.sqrt(n)
        low, high = mean - half, mean + half
    return Curve(grid, mean, low, high, n)


def group_curves(runs: Sequence[RunScalars], tag: str, x: str, band: str) -> dict[str, Curve]:
    """``{group: its curve of tag}``, groups in the order first seen."""
    groups: dict[str, list[RunScalars]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    out = {}
    for name, members in groups.items():
        curves = [series(run, tag, x) for run in members]
        try:
            out[name] = aggregate(curves, band)
        except DingLiteError as err:
            raise DingLiteError(f"{tag} of {name}: {err}") from None
    return out


def parse_metrics(items: Sequence[str] | None) -> list[str]:
    """The tags asked for (``--metric`` repeated and/or comma-separated); default eval return."""
    tags = [t.strip() for item in items or () for t in item.split(",") if t.strip()]
    return list(dict.fromkeys(tags)) or [EVAL_TAG]


def parse_size(text: str) -> tuple[int, int]:
    """``"960x600"`` -> ``(960, 600)`` pixels."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = (0, 0)
    if not sep or min(size) < 100 or max(size) > 10_000:
        raise DingLiteError(f"--size must be WIDTHxHEIGHT in pixels (100-10000), got {text!r}")
    return size


def _figure_class() -> Any:
    """matplotlib's ``Figure`` (no pyplot: no GUI backend, no global figures); a one-line
    error when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DingLiteError(
            "plot needs matplotlib: pip install 'ding-lite[plot]' (or pip install matplotlib)"
        ) from None
    return Figure


def plot_runs(
    run_paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    metrics: Sequence[str] = (EVAL_TAG,),
    x: str = "envstep",
    band: str = "minmax",
    size: tuple[int, int] = (960, 600),
    title: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> dict[str, dict[str, Curve]]:
    """Draws one panel per metric, one mean line and band per experiment, to ``out``.

    Args:
        run_paths: experiment dirs of the runs.
        out: the image to write (PNG; any suffix matplotlib writes: .svg, .pdf), atomically.
        metrics: tags to plot, one panel each.
        x: ``"envstep"`` or ``"wall"``.
        band: ``"minmax"`` or ``"ci"`` (see :func:`aggregate`).
        size: ``(width, height)`` of the image in pixels.
        title: the figure's title (default: none).
        warn: told each damaged record skipped, in one line (default: stderr).

    Returns:
        ``{metric: {group: Curve}}``.

    Raises:
        DingLiteError: matplotlib missing, a dir without event files, a metric a run did
            not log, runs that do not overlap, or an image that cannot be written.
    """
    if x not in X_AXES:
        raise DingLiteError(f"unknown --x {x!r}; known: {', '.join(X_AXES)}")
    if band not in BANDS:
        raise DingLiteError(f"unknown --band {band!r}; known: {', '.join(BANDS)}")
    out = Path(out)
    fmt = out.suffix.lstrip(".").lower() or "png"
    figure_cls = _figure_class()  # fail before reading anything when matplotlib is missing
    from matplotlib.backend_bases import FigureCanvasBase

    if fmt not in FigureCanvasBase.get_supported_filetypes():
        raise DingLiteError(f"cannot write a .{fmt} image; use .png, .svg or .pdf")
    runs = [read_run(d) for d in run_paths]
    for run in runs:
        for line in run.damaged:
            (warn or _warn)(line)
    curves = {tag: group_curves(runs, tag, x, band) for tag in metrics}
    dpi = 100
    fig = figure_cls(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
    axes = fig.subplots(len(metrics), 1, squeeze=False)
    for ax, tag in zip(axes[:, 0], metrics, strict=True):
        _draw_panel(ax, tag, curves[tag], x, band)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    _write_bytes(out, _render(fig, fmt, dpi))
    return curves


def _warn(line: str) -> None:
    print(f"ding-lite: warning: {line}", file=sys.stderr, flush=True)


def _draw_panel(ax: Any, tag: str, groups: dict[str, Curve], x: str, band: str) -> None:
    band_text = "min-max" if band == "minmax" else "95% CI of the mean"
    for i, (name, curve) in enumerate(groups.items()):
        colour = f"C{i}"
        label = f"{name} ({curve.n_runs} run{'s' if curve.n_runs != 1 else ''})"
        marker = "o" if len(curve.x) == 1 else None
        ax.plot(curve.x, curve.mean, color=colour, label=label, marker=marker, linewidth=1.6)
        ax.fill_between(curve.x, curve.low, curve.high, color=colour, alpha=0.2, linewidth=0)
    ax.set_title(f"{tag} (mean, band: {band_text})", fontsize="medium")
    ax.set_xlabel(X_LABELS[x])
    if x == "envstep":  # 200k, 1M
        from matplotlib.ticker import EngFormatter

        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylabel(tag.rsplit("/", 1)[-1])
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")


def _render(fig: Any, fmt: str, dpi: int) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=dpi)
    return buffer.getvalue()


def _write_bytes(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temp file in the same folder and a rename."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o644)  # an image to share, not mkstemp's private 0600
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise DingLiteError(f"cannot write {path}: {err.strerror or err}") from None


def describe(curves: dict[str, dict[str, Curve]], x: str) -> list[str]:
    """One line per metric and group: runs, and the mean at the end of the common range."""
    unit = "env steps" if x == "envstep" else "s"
    lines = []
    for tag, groups in curves.items():
        for name, curve in groups.items():
            end = f"{curve.x[-1]:,.0f}" if x == "envstep" else f"{curve.x[-1]:,.1f}"
            lines.append(
                f"{printable(tag)} {name}: {curve.n_runs} run(s), final mean {curve.mean[-1]:.4g} "
                f"(band {curve.low[-1]:.4g} to {curve.high[-1]:.4g}) at {end} {unit}"
            )
    return lines


def plot_command(
    run_paths: Sequence[str],
    out: str,
    metrics: Sequence[str] | None,
    x: str,
    band: str,
    size: str,
    title: str | None,
) -> int:
    """``ding-lite plot``: writes the image and prints one line per metric and group."""
    curves = plot_runs(
        run_paths,
        out,
        metrics=parse_metrics(metrics),
        x=x,
        band=band,
        size=parse_size(size),
        title=title,
    )
    for line in describe(curves, x):
        print(line)
    print(f"wrote {out}")
    return 0
