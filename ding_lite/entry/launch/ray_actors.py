"""The Ray launcher (``ding-lite parallel --launcher ray``, extra ``ray``): the run's workers
as Ray actors, on this machine or on a Ray cluster.

The actors belong to the supervisor (``ding-lite parallel``), not to the coordinator, which
runs as the supervisor's child: they outlive a coordinator that dies and rejoin its
successor. Each collector is one actor asking for
``system.collector_resources``; the N ranks of the learner are N actors in one placement
group (one bundle of ``system.learner_resources`` per rank), so Ray starts them together or
not at all. An actor runs the same worker a launcher's child process runs
(:func:`~ding_lite.entry.pipelines.worker_process.run_worker`), logging to the run's ``logs/``
folder, which must therefore be on a filesystem every Ray node shares, like the data and policy
folders.

Failures feed the local launcher's restart policy unchanged: an actor whose worker returned,
or that Ray reports dead (its process or node lost), counts as an exited worker, and its
replacement (the whole group, for a learner rank) is a new set of actors. Without
``system.ray_address`` a local Ray instance is started (no dashboard, CPUs: the machine's
cores or what the run asks for, whichever is more) and shut down with the run; with an
address the run joins that cluster and removes only its own actors.

Ray's services can run code for whoever reaches them, so the run guards them: a local
instance has token authentication on, with a token made in this process (it reaches Ray's
processes through their environment only: never argv, the run dir, a log or ``~/.ray``),
and keeps every service on loopback; a cluster is joined only if it refuses clients without
a token, unless ``system.ray_allow_unauthenticated`` says otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ding_lite.config.modules import named_env_modules
from ding_lite.entry.launch.local import Launcher
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.log import get_logger
from ding_lite.utils.threads import worker_thread_env

# Imported by _import_ray(): Ray reads its auth mode and whether it may swap 127.0.0.1 for
# the machine's routable address once, on import, so the environment must be set first.
ray: Any = None

PLACEMENT_TIMEOUT_S = 60.0  # Ray must place a learner group (or start an actor) this fast
ACTOR_CALL_TIMEOUT_S = 60.0
PIN_AMOUNT = 0.001  # of system.learner_node / collector_node each worker asks for
PROBE_TIMEOUT_S = 30.0  # a fresh Python asking a cluster whether it wants a token
# "0": a local node keeps 127.0.0.1 as its address, and Ray's services then bind loopback only
# (Ray's switch for single-machine Ray on macOS and Windows; on Linux it defaults to "1").
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# What Ray gives an actor whose resources name no CPU or GPU (Ray's own defaults, not ours).
RAY_ACTOR_CPUS, RAY_ACTOR_GPUS = 1.0, 0.0
# Run by a fresh Python with authentication off: exit 3 if the cluster's GCS refuses it, 0 if
# it serves (the address as ray.init takes it: host:port, or "auto").
_TOKEN_PROBE = """
import sys
from ray._private.services import canonicalize_bootstrap_address_or_die
from ray._raylet import GcsClient
from ray.exceptions import AuthenticationError
try:
    GcsClient(address=canonicalize_bootstrap_address_or_die(sys.argv[1]))
except AuthenticationError:
    sys.exit(3)
"""
_local_token: str | None = None  # one per process: Ray keeps the first token it loads


class WorkerActor:
    """Runs one worker (a collector, or one learner rank) inside a Ray actor process."""

    def where(self) -> tuple[str, int, int]:
        """``(node IP, a free port there, pid)``: where a learner group's store can listen."""
        import ray  # this runs in the actor's process, a Ray worker

        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        return ray.util.get_node_ip_address(), port, os.getpid()

    def run(self, role: str, options: dict[str, Any], env: dict[str, str], log: str) -> int:
        """Runs ``run_worker(role, **options)`` with ``env`` set; output goes to ``log``."""
        os.environ.update(env)
        # On a node that shares no folder with the driver, its own copy of the logs folder.
        os.makedirs(os.path.dirname(log), exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        from ding_lite.config.config import load_experiment
        from ding_lite.entry.pipelines.worker_process import run_worker

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
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"ray actor {self.pid}", timeout)
            time.sleep(0.05)
        return code

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


class FailedStart:
    """A worker whose actor died before it ran: it reads as a process that exited (-9), so
    the launcher replaces it as it does any worker that died."""

    pid, returncode = 0, -9

    def poll(self) -> int:
        return self.returncode

    def wait(self, timeout: float) -> int:
        return self.returncode

    def terminate(self) -> None:
        pass

    def kill(self) -> None:
        pass


class RayLauncher(Launcher):
    """A :class:`Launcher` whose workers are Ray actors (see the module's description)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if importlib.util.find_spec("ray") is None:
            raise ConfigError(
                "--launcher ray needs Ray: pip install 'ray[default]' (in a ding_lite "
                "checkout: pip install -e '.[ray]')"
            )
        self._owns_ray = False
        self._groups: dict[str, Any] = {}  # worker id -> its placement group
        self._actor_cls: Any = None

    def start_all(self) -> None:
        if self.cfg.system.ray_address:
            self._join_cluster(self.cfg.system.ray_address)
        else:
            self._start_local()
        self._actor_cls = ray.remote(WorkerActor)
        super().start_all()

    def _start_local(self) -> None:
        """Starts a Ray instance for this run: token authentication on, with a token of this
        process's making, and every service (GCS, raylet, object manager, workers, agents)
        on 127.0.0.1."""
        global _local_token
        if ray is None and "ray" in sys.modules:
            raise ConfigError(
                "Ray was imported before the run could set up its local Ray instance (token, "
                "loopback): import ray after the run starts, or join a cluster (ray_address)"
            )
        system = self.cfg.system
        wanted = system.learners * float(system.learner_resources.get("CPU", RAY_ACTOR_CPUS))
        wanted += system.collectors * float(system.collector_resources.get("CPU", RAY_ACTOR_CPUS))
        cores = os.cpu_count() or 1
        _local_token = _local_token or secrets.token_hex(32)
        auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": _local_token, LOOPBACK_ENV: "0"}
        with _environ(auth):  # read by Ray here, and inherited by every process it starts
            _import_ray()
            ray.init(
                num_cpus=max(cores, int(wanted + 0.999)),
                num_gpus=_gpus(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address="127.0.0.1",
            )
        self._owns_ray = True
        self._logger.info(
            f"Ray: a local instance at {ray.get_runtime_context().gcs_address} (token "
            f"authentication, loopback only): {ray.cluster_resources()}"
        )

    def _join_cluster(self, address: str) -> None:
        """Joins the Ray cluster at ``address`` if it refuses clients without a token (or
        ``system.ray_allow_unauthenticated``), presenting the token of the user's environment
        (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)."""
        allow = self.cfg.system.ray_allow_unauthenticated
        requires = _requires_token(address)
        if requires is False and not allow:
            raise ConfigError(
                f"the Ray cluster at {address} does not require a token (anyone reaching it can "
                "run code): start it with RAY_AUTH_MODE=token, or set "
                "system.ray_allow_unauthenticated=true to join it anyway"
            )
        if requires is None and not allow:
            raise ConfigError(
                f"could not check that the Ray cluster at {address} requires a token; set "
                "system.ray_allow_unauthenticated=true to join it without the check"
            )
        with _environ({"RAY_AUTH_MODE": "token"} if requires else {}):
            _import_ray()
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except (ray.exceptions.AuthenticationError, ConnectionError) as err:
                if not requires:
                    raise
                # no token: AuthenticationError at once; a wrong one: ConnectionError (20 s)
                raise ConfigError(
                    f"could not join the Ray cluster at {address}, which requires a token "
                    f"({type(err).__name__}): set RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH to its "
                    "token (ray get-auth-token on its head node)"
                ) from None
        auth: dict[object, str] = {True: "token authentication", False: "NO token authentication"}
        self._logger.info(
            f"Ray: joined the cluster at {ray.get_runtime_context().gcs_address} "
            f"({auth.get(requires, 'token not checked')}): {ray.cluster_resources()}"
        )

    def _start_group(self, role: str, worker_id: str, ranks: int) -> list[Any]:
        system = self.cfg.system
        resources = dict(
            system.learner_resources if role == "learner" else system.collector_resources
        )
        cpus = float(resources.pop("CPU", RAY_ACTOR_CPUS))
        gpus = float(resources.pop("GPU", RAY_ACTOR_GPUS))
        if node := (system.learner_node if role == "learner" else system.collector_node):
            resources[node] = PIN_AMOUNT  # only nodes started with it have any
        threads = worker_thread_env(system, role, cpus, inherit=False)
        env = {"DING_LITE_TOKEN": self.token, **threads}
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
            group = ray.util.placement_group([bundle] * ranks, strategy="PACK")
            try:
                ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
            except Exception:
                ray.util.remove_placement_group(group)
                raise ConfigError(
                    f"Ray could not place {ranks} learner ranks of {bundle} within "
                    f"{PLACEMENT_TIMEOUT_S:g} s (cluster: {ray.cluster_resources()})"
                ) from None
            self._groups[worker_id] = group
        if group is None and not self._owns_ray:  # a cluster: spread over its nodes
            options["scheduling_strategy"] = "SPREAD"
        actors = []
        for rank in range(ranks):
            opts = dict(options)
            if group is not None:
                opts["scheduling_strategy"] = (
                    ray.util.scheduling_strategies.PlacementGroupSchedulingStrategy(
                        group, placement_group_bundle_index=rank
                    )
                )
            actors.append(self._actor_cls.options(**opts).remote())
        try:
            places = ray.get([a.where.remote() for a in actors], timeout=ACTOR_CALL_TIMEOUT_S)
        except Exception as err:  # placed on a node being lost, or never placed in time
            get_logger("launcher").warning(
                f"{role} {worker_id} could not start on Ray ({type(err).__name__}); it is "
                "replaced like a worker that died"
            )
            for actor in actors:
                ray.kill(actor, no_restart=True)
            return [FailedStart() for _ in actors]
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
                # On a cluster the actor serves on its node's address, which the coordinator
                # calls back (127.0.0.1 there would be the coordinator's own machine).
                "host": "127.0.0.1" if self._owns_ray else ip,
                "heartbeat_period": system.heartbeat_period,
                "master_timeout": system.master_timeout,
                "dist_timeout": system.dist_timeout,
                "register": self.register,
                "env_modules": named_env_modules(self.cfg.env),  # as --import does
            }
            ref = actor.run.remote(role, run_options, env, str(Path(self.log_dir) / f"{name}.log"))
            workers.append(RayWorker(actor, ref, pid, local=self._owns_ray or ip == local_ip))
        return workers

    def worker_failed(self, worker_id: str, role: str, reason: str) -> bool:
        replaced = super().worker_failed(worker_id, role, reason)
        group = self._groups.pop(worker_id, None)
        if group is not None:
            ray.util.remove_placement_group(group)
        return replaced

    def stop_all(self) -> None:
        try:
            super().stop_all()
            for group in self._groups.values():
                ray.util.remove_placement_group(group)
            self._groups.clear()
        finally:
            if ray is not None and ray.is_initialized():
                ray.shutdown()  # a local instance stops with it; a cluster keeps running


def _import_ray() -> None:
    """Imports Ray as this module's ``ray``, under the environment the caller has set."""
    global ray
    import ray.util.scheduling_strategies  # binds ``ray``; the submodule is used by name


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` updated with ``values`` inside the block, as it was after it."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _requires_token(address: str) -> bool | None:
    """Whether the Ray cluster at ``address`` refuses a client without a token (None: the
    probe could not tell). A fresh Python asks its GCS, with authentication off and no token:
    this process cannot, as Ray fixes its auth mode when imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    env["RAY_AUTH_MODE"] = "disabled"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _TOKEN_PROBE, address],
            env=env,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None
    return {0: False, 3: True}.get(done.returncode)


def _gpus() -> int:
    """GPUs a local Ray instance offers: what torch sees (no torch import if absent)."""
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:
        return 0
