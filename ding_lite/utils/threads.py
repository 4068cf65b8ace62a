"""How many intra-op threads torch uses in a run's processes (``system.torch_threads``).

Torch starts with one thread per core, a trap as soon as anything else runs beside a run:
threads that outnumber the free cores wait on each other at every op's barrier, spinning.
On 2 cores, two serial runs side by side, each with torch's default, took 5x (air combat)
to 12x (HalfCheetah) as long as the same two runs with one thread each; alone, one thread
was as fast or faster for CartPole, Pendulum and HalfCheetah and 30% slower for air combat
(docs/benchmarks.rst, "Torch threads"). The default, ``"auto"``, is therefore one thread for
a serial run and for ``eval`` or ``render``, and for the workers the launcher starts the
cores their machine has left for them (:func:`worker_threads`). An ``OMP_NUM_THREADS`` the
user set is left to stand under ``"auto"``; a number in the config wins over both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

AUTO = "auto"
# A run's own choice under "auto" (serial runs, eval, render): one thread.
AUTO_THREADS = 1


def chosen_threads(setting: Any) -> int | None:
    """The threads a serial run, ``eval`` or ``render`` sets for ``setting``: the number
    itself, or under ``"auto"`` one, unless ``OMP_NUM_THREADS`` is set (None: torch read it
    at start-up, and that stands)."""
    if setting != AUTO:
        return int(setting)
    return None if os.environ.get("OMP_NUM_THREADS") else AUTO_THREADS


@contextmanager
def torch_threads(setting: Any) -> Iterator[int]:
    """Runs the block with :func:`chosen_threads` torch threads, then puts back the
    count it found (a run called from Python leaves its caller's torch as it was).

    Yields the number of threads in use.
    """
    import torch

    before = torch.get_num_threads()
    wanted = chosen_threads(setting)
    if wanted is not None and wanted != before:
        torch.set_num_threads(wanted)
    try:
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def worker_threads(role: str, collectors: int, learners: int = 1) -> int:
    """Intra-op threads of a worker process the launcher starts on this machine (``"auto"``).

    Collectors step small batches: one thread each. The learner gets the cores the
    collectors leave, at least one: threads that outnumber the free cores wait on each
    other at every op's barrier. On 2 cores, one learner thread instead of two made the
    learn task of ``pendulum_ppo_parallel`` about 15% shorter while a collector ran beside
    it, and an update alone is no faster on two threads. The ranks of a data-parallel
    learner share those cores.
    """
    if role == "collector":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, ((cores or 1) - collectors) // learners)


def worker_thread_env(
    system: Any, role: str, cpus: float = 0.0, inherit: bool = True
) -> dict[str, str]:
    """The ``OMP_NUM_THREADS`` a launched worker of ``role`` gets (``{}``: it inherits the
    launcher's own).

    ``system``: the run's ``system`` section. A number in ``system.torch_threads`` is given
    to every worker; under ``"auto"`` an ``OMP_NUM_THREADS`` of the launcher's environment
    is inherited where the worker inherits it (``inherit``: a child of this process, not a
    Ray actor), else the worker gets ``cpus`` (a Ray actor's CPUs, when whole) or
    :func:`worker_threads`.
    """
    if system.torch_threads != AUTO:
        return {"OMP_NUM_THREADS": str(int(system.torch_threads))}
    if inherit and os.environ.get("OMP_NUM_THREADS"):
        return {}
    threads = int(cpus) or worker_threads(role, system.collectors, system.learners)
    return {"OMP_NUM_THREADS": str(max(1, threads))}


def set_worker_threads(setting: Any) -> None:
    """In a worker, at the start task: a number in ``system.torch_threads`` applies to it
    (a worker started by hand on another host, which no launcher gave a count); under
    ``"auto"`` the count it started with stands."""
    if setting != AUTO:
        import torch

        torch.set_num_threads(int(setting))
