"""The Ray launcher (``ding-lite parallel --launcher ray``, extra ``ray``): the run's workers
as Ray actors, on this machine or on a Ray cluster.

The coordinator stays in the calling process. Each collector is one actor asking for
``system.collector_resources``; the N ranks of the learner are N actors in one placement
group (one bundle of ``system.learner_resources`` per rank), so Ray starts them together or
not at all. An actor runs the same worker a launcher's child process runs
(:func:`~ding_lite.entry.roles.run_worker`), logging to the run's ``logs/`` folder, which
must therefore be on a filesystem every Ray node shares, like the data and policy folders.

Failures feed the local launcher's restart policy unchanged: an actor whose worker returned,
or that Ray reports dead (its process or node lost), counts as an exited worker, and its
replacement (the whole group, for a learner rank) is a new set of actors. Without
``system.ray_address`` a local Ray instance is started (no dashboard, CPUs: the machine's
cores or what the run asks for, whichever is more) and shut down with the run; with an
address the run joins that cluster and removes only its own actors.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from ding_lite.entry.launch.local import Launcher, worker_threads
from ding_lite.utils.errors import ConfigError

try:
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
except ImportError:  # the extra is not installed: RayLauncher says so in one line
    ray = None

PLACEMENT_TIMEOUT_S = 60.0  # Ray must place a learner group (or start an actor) this fast
ACTOR_CALL_TIMEOUT_S = 60.0


class WorkerActor:
    """Runs one worker (a collector, or one learner rank) inside a Ray actor process."""

    def where(self) -> tuple[str, int, int]:
        """``(node IP, a free port there, pid)``: where a learner group's store can listen."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        return ray.util.get_node_ip_address(), port, os.getpid()

    def run(self, role: str, options: dict[str, Any], env: dict[str, str], log: str) -> int:
        """Runs ``run_worker(role, **options)`` with ``env`` set; output goes to ``log``."""
        os.environ.update(env)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        from ding_lite.config.config import load_experiment
        from ding_lite.entry.roles import run_worker

        register = options.pop("register", None)
        if register:
            load_experiment(register)
        return run_worker(role, **options)


class RayWorker:
    """One worker actor, seen like a ``subprocess.Popen`` by the launcher's supervision."""

    def __init__(self, actor: Any, ref: Any, pid: int, local: bool) -> None:
        self.actor, self.ref, self.pid, self._local = actor, ref, pid, local
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            ready, _ = ray.wait([self.ref], timeout=0)
            if ready:
                try:
                    self.returncode = int(ray.get(self.ref))
                except Exception:  # the actor died (killed, crashed, node lost)
                    self.returncode = -9
        return self.returncode

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"ray actor {self.pid}", timeout)
            time.sleep(0.05)
        return self.returncode

    def terminate(self) -> None:
        """SIGTERM where the actor's process is on this machine (the worker closes
        cleanly); elsewhere Ray kills it."""
        if self._local:
            try:
                os.kill(self.pid, 15)
            except ProcessLookupError:
                pass
        else:
            self.kill()

    def kill(self) -> None:
        ray.kill(self.actor, no_restart=True)


class RayLauncher(Launcher):
    """A :class:`Launcher` whose workers are Ray actors (see the module's description)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if ray is None:
            raise ConfigError(
                "--launcher ray needs Ray: pip install 'ray[default]' (in a ding_lite "
                "checkout: pip install -e '.[ray]')"
            )
        self._owns_ray = False
        self._groups: dict[str, Any] = {}  # worker id -> its placement group
        self._actor_cls = ray.remote(WorkerActor)

    def start_all(self) -> None:
        system = self.cfg.system
        if system.ray_address:
            ray.init(address=system.ray_address, log_to_driver=False, configure_logging=False)
        else:
            wanted = system.learners * float(system.learner_resources.get("CPU", 1))
            wanted += system.collectors * float(system.collector_resources.get("CPU", 0.5))
            cores = os.cpu_count() or 1
            ray.init(
                num_cpus=max(cores, int(wanted + 0.999)),
                num_gpus=_gpus(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address="127.0.0.1",
            )
            self._owns_ray = True
        self._logger.info(f"Ray: {ray.cluster_resources()}")
        super().start_all()

    def _start_group(self, role: str, worker_id: str, ranks: int) -> list[Any]:
        system = self.cfg.system
        resources = dict(
            system.learner_resources if role == "learner" else system.collector_resources
        )
        cpus, gpus = float(resources.pop("CPU", 1)), float(resources.pop("GPU", 0))
        threads = worker_threads(role, system.collectors, system.learners)
        env = {"DING_LITE_TOKEN": self.token, "OMP_NUM_THREADS": str(max(1, int(cpus) or threads))}
        options: dict[str, Any] = {
            "num_cpus": cpus,
            "num_gpus": gpus,
            "resources": resources or None,
            "max_restarts": 0,
            "runtime_env": {"env_vars": env},
        }
        group = None
        if ranks > 1:
            bundle = {"CPU": cpus, **({"GPU": gpus} if gpus else {}), **resources}
            group = placement_group([bundle] * ranks, strategy="PACK")
            try:
                ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
            except Exception:
                remove_placement_group(group)
                raise ConfigError(
                    f"Ray could not place {ranks} learner ranks of {bundle} within "
                    f"{PLACEMENT_TIMEOUT_S:g} s (cluster: {ray.cluster_resources()})"
                ) from None
            self._groups[worker_id] = group
        actors = []
        for rank in range(ranks):
            opts = dict(options)
            if group is not None:
                opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                    group, placement_group_bundle_index=rank
                )
            actors.append(self._actor_cls.options(**opts).remote())
        places = ray.get([a.where.remote() for a in actors], timeout=ACTOR_CALL_TIMEOUT_S)
        rank_env: dict[str, str] = {}
        if ranks > 1:
            host, port, _ = places[0]
            if self._owns_ray:  # one machine: the group's store on loopback only
                host = "127.0.0.1"
            rank_env = {"WORLD_SIZE": str(ranks), "MASTER_ADDR": host, "MASTER_PORT": str(port)}
        local_ip = "127.0.0.1" if self._owns_ray else ray.util.get_node_ip_address()
        workers = []
        for rank, (actor, (ip, _, pid)) in enumerate(zip(actors, places, strict=True)):
            env = {**rank_env, "RANK": str(rank), "LOCAL_RANK": "0"} if ranks > 1 else {}
            name = f"{worker_id}.rank{rank}" if rank else worker_id
            run_options = {
                "coordinator": self.address,
                "worker_id": worker_id,
                "heartbeat_period": system.heartbeat_period,
                "dist_timeout": system.dist_timeout,
                "register": self.register,
            }
            ref = actor.run.remote(role, run_options, env, str(Path(self.log_dir) / f"{name}.log"))
            workers.append(RayWorker(actor, ref, pid, local=self._owns_ray or ip == local_ip))
        return workers

    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        replaced = super().worker_failed(worker_id, role, reason)
        group = self._groups.pop(worker_id, None)
        if group is not None:
            remove_placement_group(group)
        return replaced

    def stop_all(self) -> None:
        try:
            super().stop_all()
            for group in self._groups.values():
                remove_placement_group(group)
            self._groups.clear()
        finally:
            if ray.is_initialized():
                ray.shutdown()  # a local instance stops with it; a cluster keeps running


def _gpus() -> int:
    """GPUs a local Ray instance offers: what torch sees (no torch import if absent)."""
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:
        return 0
