"""Exporting a trained policy to ONNX or TorchScript (``ding-lite export``).

The file holds :class:`~ding_lite.entry.trained.export_graph.PolicyGraph`: the raw
observation in, the action ``predict`` gives out, with the run's observation normalization
folded in and a recurrent policy's state as an explicit input and output. docs/deploy.rst
shows how to run it from Python (onnxruntime) and C++ (ONNX Runtime).

ONNX files are written by torch's TorchScript-based exporter (``dynamo=False``): it needs
no package beyond ``onnx`` (the ``torch.export``-based one needs ``onnxscript`` too), traces
an ``nn.LSTM`` or ``nn.GRU`` step into ONNX's own recurrent op, and takes a fraction of the
time. Both formats are traced with a batch of two rows and take any batch size.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import NamedTuple

import torch

from ding_lite.entry.trained.export_graph import BATCH, PolicyGraph, TensorSpec
from ding_lite.entry.trained.predict import find_checkpoint, load_policy
from ding_lite.utils.errors import CheckpointError, DingLiteError
from ding_lite.utils.file_io import atomic_write_bytes

__all__ = ["FORMATS", "ONNX_OPSET", "ExportError", "ExportInfo", "export_policy"]

FORMATS = {"onnx": ".onnx", "torchscript": ".pt"}
"""Export formats and the suffix of their default file name."""
ONNX_OPSET = 17
"""The ONNX opset the graphs are written in (ONNX Runtime 1.14 and later run it)."""
INSTALL_HINT = "pip install 'ding-lite[export]'"


class ExportError(DingLiteError, ValueError):
    """An export that cannot be made as asked: an unknown format, an output folder that does
    not exist, or a package the format needs missing."""


class ExportInfo(NamedTuple):
    """What :func:`export_policy` wrote.

    Attributes:
        path: the file written.
        fmt: ``"onnx"`` or ``"torchscript"``.
        checkpoint: the checkpoint the policy was read from.
        train_iter: that checkpoint's iteration.
        sampling: whether the graph samples (from its ``noise`` input) instead of taking
            the deterministic action.
        inputs: the graph's inputs, in order.
        outputs: its outputs, in order.
    """

    path: Path
    fmt: str
    checkpoint: Path
    train_iter: int
    sampling: bool
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def describe(self) -> list[str]:
        """Lines for the command line: the file, then one per input and output."""
        kind = "sampling" if self.sampling else "deterministic"
        lines = [
            f"{self.path}: {self.fmt}, {kind} policy of {self.checkpoint} "
            f"(iteration {self.train_iter})"
        ]
        lines += [f"  input  {spec}" for spec in self.inputs]
        lines += [f"  output {spec}" for spec in self.outputs]
        return lines


def export_policy(
    path: str | Path, fmt: str = "onnx", *, out: str | Path, sampling: bool = False
) -> ExportInfo:
    """Writes a trained policy as an ONNX or TorchScript graph.

    Args:
        path: a run dir, its ``ckpt`` folder or a ``.pt`` checkpoint (the checkpoint is
            chosen as :func:`~ding_lite.entry.trained.predict.load_policy` chooses it).
        fmt: ``"onnx"`` or ``"torchscript"``.
        out: the file to write; its folder must exist. Written atomically (a temp file in
            the same folder, then renamed).
        sampling: export the sampling policy, whose extra ``noise`` input (standard
            normals) is its randomness, instead of the deterministic one.

    Returns:
        An :class:`ExportInfo` naming the file and the graph's inputs and outputs.

    Raises:
        ExportError: an unknown format, a missing output folder (or ``out`` a folder), or
            ONNX asked without the ``onnx`` package.
        CheckpointError: ``path`` is not a run dir, or holds no readable checkpoint.
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    out = Path(out)
    if not out.parent.is_dir():
        raise ExportError(f"cannot write {out}: its folder {out.parent} does not exist")
    if out.is_dir():
        raise ExportError(f"cannot write {out}: it is a folder; name the file to write")
    if fmt == "onnx":
        _require_onnx()
    policy = load_policy(_checkpoint_of(Path(path)))
    graph = PolicyGraph(policy.model, policy.obs_shape, policy.action_space, sampling).eval()
    inputs, outputs = graph.inputs(), graph.outputs()
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer's notes on Python-side shape checks (nn.LSTM's), and the ONNX
        # exporter's own deprecation notice: nothing a user of the file can act on.
        warnings.simplefilter("ignore")
        if fmt == "onnx":
            data = _onnx_bytes(graph, inputs, outputs)
        else:
            data = _torchscript_bytes(graph)
    atomic_write_bytes(data, out)
    assert policy.checkpoint is not None
    return ExportInfo(
        out,
        fmt,
        policy.checkpoint,
        policy.train_iter,
        graph.sampling,
        tuple(inputs),
        tuple(outputs),
    )


def _checkpoint_of(path: Path) -> Path:
    """The checkpoint to export for ``path``; a folder that is no run dir is one line."""
    if path.is_dir() and not (path / "ckpt").is_dir() and not any(path.glob("*.pt")):
        raise CheckpointError(
            f"{path} is not a run dir: it has no ckpt/ folder (pass a run dir, its ckpt/ "
            "folder or a .pt checkpoint)"
        )
    return find_checkpoint(path)


def _require_onnx() -> None:
    """Raises ExportError when the onnx package is missing."""
    try:
        import onnx  # noqa: F401  (the exporter serializes through it)
    except ImportError:
        raise ExportError(f"exporting to ONNX needs the onnx package: {INSTALL_HINT}") from None


def _onnx_bytes(graph: PolicyGraph, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> bytes:
    """The graph as a checked ONNX model, every input and output batch-dynamic."""
    import onnx

    buffer = io.BytesIO()
    torch.onnx.export(
        graph,
        graph.example_inputs(),
        buffer,  # type: ignore[arg-type]  # the TorchScript-based exporter takes a file object
        dynamo=False,
        input_names=[spec.name for spec in inputs],
        output_names=[spec.name for spec in outputs],
        dynamic_axes={spec.name: {0: BATCH} for spec in (*inputs, *outputs)},
        opset_version=ONNX_OPSET,
    )
    data = buffer.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data))
    return data


def _torchscript_bytes(graph: PolicyGraph) -> bytes:
    """The graph traced to TorchScript, as ``torch.jit.save`` writes it."""
    traced = torch.jit.trace(graph, graph.example_inputs(), check_trace=False)
    buffer = io.BytesIO()
    torch.jit.save(traced, buffer)
    return buffer.getvalue()
