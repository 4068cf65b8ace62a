"""Data-parallel learners on torch.distributed: the group, and the few collectives they use.

The N ranks of one logical learner form a process group initialised from the environment
(``env://``: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, as ``torchrun``
and the launcher set them). CPU tensors travel over gloo; CUDA tensors over nccl when the
machine has GPUs. Everything here is a no-op with one rank, so single-process code calls it
unconditionally. Messages between ranks are JSON and tensors, never pickles.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from ding_lite.utils.errors import ConfigError, DingLiteError
from ding_lite.utils.interfaces import interface_towards
from ding_lite.utils.ports import free_port  # noqa: F401  (where it was found before)

#: Environment variables that make a process one rank of a group (torchrun sets them all).
RANK_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
LOOPBACK = ("127.0.0.1", "localhost")
#: Set by torchrun's agent, whose own store the ranks then join (``env://``).
AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"
RESTART_COUNT = "TORCHELASTIC_RESTART_COUNT"  # set by torchrun: restarts of the group so far
LOCAL_WORLD = "LOCAL_WORLD_SIZE"  # set by torchrun: the ranks it runs on this machine
_KEEP: list[socket.socket] = []


class GroupLost(DingLiteError):
    """A collective failed: a peer rank died, or did not take part within the timeout. The
    group is out of step and cannot go on; the launcher restarts all of its ranks."""


def _collective(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except RuntimeError as err:  # gloo/nccl report a lost peer or a timeout this way
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise GroupLost(f"{fn.__name__} failed: {first}") from err


def world() -> tuple[int, int]:
    """``(rank, world_size)`` of this process; ``(0, 1)`` outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def env_world_size() -> int:
    """The group size the environment asks for (``WORLD_SIZE``; 1 when unset)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        raise ConfigError(
            f"WORLD_SIZE must be an integer, got {os.environ['WORLD_SIZE']!r}"
        ) from None


def init_from_env(timeout_s: float) -> tuple[int, int]:
    """Joins the process group the environment describes (``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``, ``MASTER_PORT``, as ``env://`` reads them); returns
    ``(rank, world_size)``.

    ``timeout_s`` bounds the rendezvous and every later collective: a rank that waits
    longer for its peers fails instead of hanging.

    Raises:
        ConfigError: a variable of :data:`RANK_ENV` is missing, or torch.distributed is not
            available in this torch build.
    """
    if dist.is_initialized():
        return world()
    missing = [name for name in RANK_ENV if name not in os.environ]
    if missing:
        raise ConfigError(
            f"a distributed learner needs {', '.join(missing)} in its environment "
            "(run it under torchrun, or use ding-lite parallel --learners N)"
        )
    if not dist.is_available():
        raise ConfigError("this torch build has no torch.distributed")
    # gloo for CPU tensors; nccl for CUDA ones where the machine has GPUs.
    backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
    timeout = timedelta(seconds=timeout_s)
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if addr not in LOOPBACK and "GLOO_SOCKET_IFNAME" not in os.environ:
        # gloo's own sockets: on the interface that reaches the group's master, not the
        # one the host name resolves to (which other hosts may not reach at all).
        if (name := interface_towards(addr)) is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = name
    store: dist.Store
    if os.environ.get(AGENT_STORE) == "True":  # torchrun's agent serves the store
        store = dist.TCPStore(addr, port, size, False, timeout=timeout)
    elif addr in LOOPBACK:  # one machine: rank 0 serves it on 127.0.0.1 only
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo's own sockets: loopback too
        store = _loopback_store(rank, size, port, timeout)
    else:  # as env:// does: rank 0 serves it (on every interface, for the other machines)
        store = dist.TCPStore(addr, port, size, rank == 0, timeout=timeout)
    if RESTART_COUNT in os.environ:
        # A group torchrun restarted must not find the addresses its predecessor published
        # in the same store: its ranks would connect to the dead ones.
        store = dist.PrefixStore(f"ding_lite/attempt_{os.environ[RESTART_COUNT]}", store)
    dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timeout)
    return world()


def _loopback_store(rank: int, size: int, port: int, timeout: timedelta) -> dist.TCPStore:
    """The group's rendezvous store on 127.0.0.1 only (``env://`` would listen on every
    interface): rank 0 serves it on a socket it binds itself."""
    if rank != 0:
        return dist.TCPStore("127.0.0.1", port, size, False, timeout=timeout)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    store = dist.TCPStore(
        "127.0.0.1", port, size, True, timeout=timeout, master_listen_fd=sock.fileno()
    )
    _KEEP.append(sock)  # the store serves on this socket for the life of the group
    return store


def require(use_distributed: bool, timeout_s: float = 60.0) -> None:
    """``learner.use_distributed`` (DI-engine's key): a learner that is to be one rank of a
    group joins it from the environment, unless this process is in a group already.

    Raises:
        ConfigError: asked for, but the environment describes no group.
    """
    if use_distributed and not (dist.is_available() and dist.is_initialized()):
        init_from_env(timeout_s)


def ranks_elsewhere() -> range:
    """The ranks of this torchrun group that run on other machines than rank 0's: torchrun
    numbers node 0's ranks first, ``LOCAL_WORLD_SIZE`` of them. Empty outside torchrun, or
    when the whole group runs on one machine."""
    value = os.environ.get(LOCAL_WORLD, "")
    _, size = world()
    return range(int(value), size) if value.isdigit() and int(value) > 0 else range(0)


def wait_until_left(ranks: Iterable[int], timeout_s: float) -> None:
    """Blocks until each of ``ranks`` has left the group (destroyed its process group, or
    ended), ``timeout_s`` seconds at most in all. Nothing is ever sent to these receives:
    each ends when its rank's side of the connection closes, or at the timeout."""
    if world()[1] == 1:
        return
    deadline = time.monotonic() + timeout_s
    works = [dist.irecv(torch.zeros(1), src=src) for src in ranks]  # CPU: gloo, nccl or not
    for work in works:
        try:
            if work is not None:  # None only for a rank outside the default group
                work.wait(timedelta(seconds=max(0.01, deadline - time.monotonic())))
        except RuntimeError:  # the connection closed (or the timeout passed): go on
            pass


def finalize() -> None:
    """Leaves the process group (if any)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def broadcast_json(obj: Any = None, src: int = 0) -> Any:
    """Rank ``src`` sends a JSON-able object; every rank returns it."""
    rank, size = world()
    if size == 1:
        return obj
    if rank == src:
        payload = torch.frombuffer(bytearray(json.dumps(obj).encode()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    _collective(dist.broadcast, length, src)
    if rank != src:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    _collective(dist.broadcast, payload, src)
    return obj if rank == src else json.loads(payload.numpy().tobytes().decode())


def broadcast_tensors(tensors: dict[str, torch.Tensor] | None, src: int = 0) -> dict:
    """Rank ``src`` sends a dict of tensors (names, shapes and dtypes go first, as JSON);
    every rank returns it, on the device the tensors had on ``src``."""
    rank, size = world()
    if size == 1:
        return tensors or {}
    header = None
    if rank == src:
        assert tensors is not None  # the sending rank has them
        header = [
            [k, list(t.shape), str(t.dtype).removeprefix("torch."), t.device.type]
            for k, t in tensors.items()
        ]
    header = broadcast_json(header, src)
    out = {}
    for name, shape, dtype, device in header:
        if rank == src:
            assert tensors is not None
            tensor = tensors[name].contiguous()
        else:
            tensor = torch.empty(shape, dtype=getattr(torch, dtype), device=_local(device))
        _collective(dist.broadcast, tensor, src)
        out[name] = tensor
    return out


def broadcast_module(module: torch.nn.Module, src: int = 0) -> None:
    """Copies rank ``src``'s parameters and buffers into every rank's ``module``."""
    if world()[1] == 1:
        return
    with torch.no_grad():
        for tensor in module.state_dict().values():
            _collective(dist.broadcast, tensor, src)


def broadcast_(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    """Overwrites ``tensor`` with rank ``src``'s, in place; returns it."""
    if world()[1] > 1:
        _collective(dist.broadcast, tensor, src)
    return tensor


def all_mean_(tensor: torch.Tensor) -> torch.Tensor:
    """Replaces ``tensor`` by its mean over the ranks, in place; returns it."""
    size = world()[1]
    if size > 1:
        _collective(dist.all_reduce, tensor, op=dist.ReduceOp.SUM)
        tensor.div_(size)
    return tensor


def average_gradients(params: Iterable[torch.nn.Parameter]) -> None:
    """Averages the gradients over the ranks with one all-reduce of their concatenation.

    Every rank must hold gradients for the same parameters (the same graph on its part of
    the minibatch), which data-parallel PPO guarantees.
    """
    if world()[1] == 1:
        return
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    all_mean_(flat)
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def _local(device_type: str) -> torch.device:
    if device_type == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(device_type)
