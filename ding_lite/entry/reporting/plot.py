"""``ding-lite plot RUN_DIR ... --out FILE.png``: learning curves of runs, grouped by experiment.

Reads every tensorboard event file under each run's ``tb/`` folder (a serial run's
``tb/``, a parallel run's ``tb/coordinator`` and ``tb/<learner id>``) with
:func:`ding_lite.utils.log.read_tb_events_from`, so no tensorboard install is needed; a
damaged record is skipped with a one-line warning. Runs are grouped by the ``exp_name`` of
their saved ``config.json`` (the folder's name when there is none). For each metric and
group it draws the mean over the group's runs and a band (the runs' min-max, or a 95%
t-interval of the mean) where the runs overlap, and each run's own curve beside it
(:mod:`.curves`; ``--hold-last`` carries a run that stopped early at its last value). Points
a run logged at the same x (several episodes ending in one iteration) are averaged first.
matplotlib is an optional dependency: ``pip install 'ding-lite[plot]'``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.entry.reporting.curves import BANDS, Curve, aggregate
from ding_lite.utils.errors import DingLiteError
from ding_lite.utils.log import EVENT_GLOB, read_tb_events_from
from ding_lite.utils.text import printable

EVAL_TAG = "charts/eval_return"
X_AXES = ("envstep", "wall")
X_LABELS = {"envstep": "env steps", "wall": "seconds since the run's first scalar"}


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


def read_run(run_path: str | os.PathLike) -> RunScalars:
    """Every scalar of one run, from all event files under ``<run_path>/tb`` (recursively).

    A damaged record is skipped and an unreadable file left out; both are listed in
    :attr:`RunScalars.damaged`.

    Raises:
        DingLiteError: the folder holds no event file, or none with a readable scalar.
    """
    path = Path(run_path)
    if not path.is_dir():
        raise DingLiteError(printable(f"{path}: no such run dir"))
    files = sorted(p for p in (path / "tb").rglob(EVENT_GLOB) if p.is_file())
    if not files:
        why = f"no tensorboard event files under {path / 'tb'}"
        if not (path / "tb").is_dir() and not (path / "config.json").is_file():
            why = "not a run dir (no tb/ folder, no config.json)"
        raise DingLiteError(printable(f"{path}: {why}"))
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


def group_curves(
    runs: Sequence[RunScalars], tag: str, x: str, band: str, hold_last: bool = False
) -> dict[str, Curve]:
    """``{group: its curve of tag}``, groups in the order first seen."""
    groups: dict[str, list[RunScalars]] = {}
    for run in runs:
        groups.setdefault(run.group, []).append(run)
    out = {}
    for name, members in groups.items():
        curves = [series(run, tag, x) for run in members]
        try:
            out[name] = aggregate(curves, band, hold_last=hold_last)
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
    hold_last: bool = False,
) -> dict[str, dict[str, Curve]]:
    """Draws one panel per metric to ``out``: per experiment, the mean and band where its
    runs overlap and each run's own curve.

    Args:
        run_paths: experiment dirs of the runs.
        out: the image to write (PNG; any suffix matplotlib writes: .svg, .pdf), atomically.
        metrics: tags to plot, one panel each.
        x: ``"envstep"`` or ``"wall"``.
        band: ``"minmax"`` or ``"ci"`` (see :func:`aggregate`).
        size: ``(width, height)`` of the image in pixels.
        title: the figure's title (default: none).
        warn: told each damaged record skipped, in one line (default: stderr).
        hold_last: carry each run at its last value to the end of its group's longest run
            (a run that stopped when it solved).

    Returns:
        ``{metric: {group: Curve}}``.

    Raises:
        DingLiteError: matplotlib missing, a dir without event files, a metric a run did
            not log, or an image that cannot be written.
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
    curves = {tag: group_curves(runs, tag, x, band, hold_last) for tag in metrics}
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
        if curve.n_runs > 1 or not curve.overlaps:  # each run's own points, thin
            for j, (xs, ys) in enumerate(curve.runs):
                own = label if not curve.overlaps and j == 0 else None
                ax.plot(xs, ys, color=colour, alpha=0.45, linewidth=0.8, marker=_dot(xs), label=own)
        if curve.overlaps:
            marker = _dot(curve.x)
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


def _dot(xs: np.ndarray) -> str | None:
    """A marker for a curve of one point (a line needs two)."""
    return "o" if len(xs) == 1 else None


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
            head = f"{printable(tag)} {name}: {curve.n_runs} run(s)"
            if not curve.overlaps:
                ends = ", ".join(f"{ys[-1]:.4g} at {_at(xs[-1], x)}" for xs, ys in curve.runs)
                lines.append(f"{head} with no range in common (no mean): last {ends} {unit}")
                continue
            band = f"band {curve.low[-1]:.4g} to {curve.high[-1]:.4g}"
            end = _at(curve.x[-1], x)
            lines.append(f"{head}, final mean {curve.mean[-1]:.4g} ({band}) at {end} {unit}")
    return lines


def _at(value: float, x: str) -> str:
    return f"{value:,.0f}" if x == "envstep" else f"{value:,.1f}"


def plot_command(
    run_paths: Sequence[str],
    out: str,
    metrics: Sequence[str] | None,
    x: str,
    band: str,
    size: str,
    title: str | None,
    hold_last: bool = False,
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
        hold_last=hold_last,
    )
    for line in describe(curves, x):
        print(line)
    print(f"wrote {out}")
    return 0
