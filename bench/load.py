"""Load on the transport: 64 collectors polled like the coordinator polls them, then the same
under a flood of 1,100 half-open connections.

A :class:`~ding_lite.interaction.Master` in this process stands in for the coordinator; 64
:class:`~ding_lite.interaction.Slave` collectors run in 4 child processes. Every collector
writes one 2,048-sample rollout file (about 32 KiB, atomically, named like a real one) into
its folder under a temporary ``path_data`` every 0.5 s, and answers ``collector_data_task``
with the metadata of the files written since its last answer. The master keeps one data task
in flight per collector, asks an idle collector again after the coordinator's idle delay, and
hands every reported file to a consumer thread standing in for the learner, which deletes it.

Phase 1 runs for ``--seconds``. Phase 2 runs as long again while another process holds 1,100
connections to the master's port, each having sent only the start of a request line; it
opens a new one whenever the server drops one (after its idle timeout), so the flood stays at
full size. Each phase prints data tasks, failed tasks, files reported and deleted, and the
control-task round trip (master sends a data task -> its result is back) p50 / p99 / max.
Nothing is asserted; figures are printed.

    python bench/load.py --seconds 60
"""

from __future__ import annotations

import argparse
import os
import queue
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ding_lite.interaction import Master, TaskResult

# ding_lite is imported where it is used, so the flood process starts in a blink.

COLLECTORS = 64
PROCESSES = 4
ROLLOUT_PERIOD_S = 0.5
ROLLOUT_SAMPLES = 2048
ROLLOUT_BYTES = ROLLOUT_SAMPLES * 4 * 4  # about a CartPole rollout: 4 float32 per sample
HALF_OPEN = 1100
TASK_TIMEOUT_S = 10.0  # the coordinator's system.http_timeout
WARM_UP_S = 2.0  # polled before each phase, not counted


# ------------------------------------------------------------------ collectors (children)
class FakeCollector:
    """Writes a rollout file every ``ROLLOUT_PERIOD_S`` and reports the new ones when asked."""

    def __init__(self, worker_id: str, path_data: Path) -> None:
        self.worker_id = worker_id
        self.folder = path_data / worker_id
        self.folder.mkdir(parents=True, exist_ok=True)
        self.seq = 0
        self.next_due = time.monotonic()
        self.lock = threading.Lock()
        self.outbox: list[dict[str, Any]] = []

    def write_due(self, now: float) -> None:
        from ding_lite.utils.paths import rollout_name

        if now < self.next_due:
            return
        path = self.folder / rollout_name(self.seq, 0, ROLLOUT_SAMPLES)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(bytes(ROLLOUT_BYTES))
        os.replace(tmp, path)
        meta = {
            "path": str(path),
            "collector": self.worker_id,
            "seq": self.seq,
            "policy_version": 0,
            "size": ROLLOUT_SAMPLES,
            "created": time.time(),
        }
        with self.lock:
            self.outbox.append(meta)
        self.seq += 1
        # A writer that fell behind (a busy machine) catches up by one file, not a burst.
        self.next_due = max(self.next_due + ROLLOUT_PERIOD_S, now)

    def data_task(self, data: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            files, self.outbox = self.outbox, []
        return {"files": files, "episode_returns": [], "envstep": self.seq * ROLLOUT_SAMPLES}


def run_collectors(first: int, count: int, master: str, path_data: Path) -> None:
    """Child process: ``count`` collectors until stdin closes (the parent ends or is done)."""
    from ding_lite.interaction import Slave

    # As a real worker process does (``WORKER_SWITCH_INTERVAL_S`` of
    # ``entry/pipelines/worker_process.py``, not imported since it pulls in torch): short GIL
    # hand-overs between the HTTP threads.
    sys.setswitchinterval(0.0005)
    collectors = [FakeCollector(f"collector{i}", path_data) for i in range(first, first + count)]
    slaves = [
        Slave(
            "collector",
            c.worker_id,
            master,
            handlers={"collector_data_task": c.data_task},
            register_timeout=30,
        )
        for c in collectors
    ]
    stop = threading.Event()

    def write_loop() -> None:
        while not stop.wait(0.01):
            now = time.monotonic()
            for collector in collectors:
                collector.write_due(now)

    writer = threading.Thread(target=write_loop, daemon=True)
    try:
        for slave in slaves:
            slave.start()
        writer.start()
        print("ready", flush=True)
        sys.stdin.read()  # returns at EOF: the parent closed the pipe
    finally:
        stop.set()
        writer.join(5)
        for slave in slaves:
            slave.stop(timeout=2)


# -------------------------------------------------------------------- flood (child process)
def run_half_open(address: str, count: int) -> None:
    """Child process: holds ``count`` half-sent requests open until stdin closes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    host, port = address.rsplit(":", 1)
    selector = selectors.DefaultSelector()
    opened = 0

    def open_one() -> None:
        nonlocal opened
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(b"POST /master/heartbeat HTTP/1.1\r\nHost: x\r\nAuthorization: Bea")
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        opened += 1

    for _ in range(count):
        open_one()
    print("ready", flush=True)
    stdin_closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
    while not stdin_closed.is_set():
        for key, _ in selector.select(timeout=0.2):
            sock = key.fileobj
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            if not data:  # the server hung up: replace the connection
                selector.unregister(sock)
                sock.close()
                open_one()
    print(f"opened {opened}", flush=True)
    for key in list(selector.get_map().values()):
        key.fileobj.close()


# --------------------------------------------------------------------- coordinator side
class Consumer(threading.Thread):
    """Stands in for the learner: deletes every file it is handed."""

    def __init__(self) -> None:
        super().__init__(name="bench-consumer", daemon=True)
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.deleted = 0
        self.missing = 0

    def run(self) -> None:
        while (path := self.inbox.get()) is not None:
            try:
                os.remove(path)
                self.deleted += 1
            except FileNotFoundError:
                self.missing += 1


class Stats:
    def __init__(self) -> None:
        self.round_trips: list[float] = []
        self.failed: list[str] = []
        self.files = 0


def poll(master: Master, consumer: Consumer, seconds: float, idle_poll: float) -> Stats:
    """Polls every collector for ``seconds``, the way the coordinator does."""
    stats = Stats()
    inflight: dict[str, Future[TaskResult]] = {}
    idle_until: dict[str, float] = {}
    collectors = master.worker_ids("collector")
    end = time.monotonic() + seconds
    while True:
        now = time.monotonic()
        for cid, future in list(inflight.items()):
            if not future.done():
                continue
            del inflight[cid]
            result = future.result()
            if not result.success:
                stats.failed.append(f"{cid}: {result.error}")
                continue
            stats.round_trips.append(result.elapsed_s)
            files = result.result.get("files", [])
            for meta in files:
                consumer.inbox.put(meta["path"])
            stats.files += len(files)
            if not files:
                idle_until[cid] = now + idle_poll
        if now >= end:
            if not inflight:
                return stats
        else:
            for cid in collectors:
                if cid not in inflight and now >= idle_until.get(cid, 0.0):
                    inflight[cid] = master.send_task_async(
                        cid, "collector_data_task", {}, TASK_TIMEOUT_S
                    )
        time.sleep(0.002)


def report(name: str, stats: Stats, seconds: float, deleted: int) -> None:
    trips = sorted(stats.round_trips)

    def ms(q: float) -> float:
        return 1000 * trips[min(len(trips) - 1, int(q * len(trips)))] if trips else float("nan")

    print(
        f"{name}: {len(trips) + len(stats.failed)} data tasks in {seconds:.0f} s "
        f"({(len(trips) + len(stats.failed)) / seconds:.0f}/s), failed {len(stats.failed)}, "
        f"files reported {stats.files} ({stats.files / seconds:.1f}/s), deleted {deleted}; "
        f"round trip p50 {1000 * statistics.median(trips) if trips else float('nan'):.1f} ms, "
        f"p99 {ms(0.99):.1f} ms, max {1000 * trips[-1] if trips else float('nan'):.1f} ms",
        flush=True,
    )
    for line in stats.failed[:5]:
        print(f"  failed: {line}")


def child(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, __file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        raise SystemExit(f"child {args} did not start (said {line!r}, exit {proc.wait(10)})")
    return proc


def finish(proc: subprocess.Popen) -> str:
    """Closes a child's stdin (its signal to stop) and returns what it printed after."""
    if not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    return proc.stdout.read().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    parser.add_argument("--collectors", type=int, default=COLLECTORS)
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--half-open", type=int, default=HALF_OPEN)
    parser.add_argument("--idle-poll", type=float, help="default: the coordinator's")
    parser.add_argument("--child-collectors", nargs=3, metavar=("FIRST", "COUNT", "MASTER"))
    parser.add_argument("--child-flood", nargs=2, metavar=("ADDRESS", "COUNT"))
    parser.add_argument("--path-data")
    args = parser.parse_args()
    if args.child_collectors:
        first, count, master = args.child_collectors
        run_collectors(int(first), int(count), master, Path(args.path_data))
        return
    if args.child_flood:
        run_half_open(args.child_flood[0], int(args.child_flood[1]))
        return

    from ding_lite.coordinator.collectors import idle_poll_interval
    from ding_lite.interaction import Master, generate_token

    if args.idle_poll is None:
        args.idle_poll = idle_poll_interval(args.collectors)
    token = generate_token()
    env = {**os.environ, "DING_LITE_TOKEN": token}
    with tempfile.TemporaryDirectory(prefix="ding_lite_load_") as tmp:
        path_data = Path(tmp) / "data"
        master = Master(token=token, heartbeat_tolerance=10.0, task_timeout=TASK_TIMEOUT_S)
        master.start()
        consumer = Consumer()
        consumer.start()
        children: list[subprocess.Popen] = []
        try:
            per = -(-args.collectors // args.processes)
            for first in range(0, args.collectors, per):
                count = min(per, args.collectors - first)
                children.append(
                    child(
                        [
                            "--child-collectors",
                            str(first),
                            str(count),
                            master.address,
                            "--path-data",
                            str(path_data),
                        ],
                        env,
                    )  # fmt: skip
                )
            print(
                f"master on {master.address}; {len(master.worker_ids('collector'))} collectors "
                f"in {len(children)} processes, one {ROLLOUT_SAMPLES}-sample file each every "
                f"{ROLLOUT_PERIOD_S} s; idle poll {1000 * args.idle_poll:g} ms",
                flush=True,
            )
            poll(master, consumer, WARM_UP_S, args.idle_poll)  # not counted
            before = consumer.deleted
            stats = poll(master, consumer, args.seconds, args.idle_poll)
            report("phase 1 (no flood)", stats, args.seconds, consumer.deleted - before)

            flood = child(["--child-flood", master.address, str(args.half_open)], env)
            try:
                poll(master, consumer, WARM_UP_S, args.idle_poll)  # drains the files of the gap
                before = consumer.deleted
                stats = poll(master, consumer, args.seconds, args.idle_poll)
                report(
                    f"phase 2 ({args.half_open} half-open connections)",
                    stats,
                    args.seconds,
                    consumer.deleted - before,
                )
            finally:
                flood.stdin.close()
                print(f"flood: {finish(flood)} connections in all (dropped ones re-opened)")
        finally:
            for proc in children:
                proc.stdin.close()
            for proc in children:
                finish(proc)
            master.stop()
            consumer.inbox.put(None)
            consumer.join(10)
            left = sum(1 for _ in path_data.rglob("*.pt")) if path_data.exists() else 0
            print(
                f"consumer deleted {consumer.deleted} files ({consumer.missing} already gone); "
                f"{left} left in path_data (written after the last poll)"
            )


if __name__ == "__main__":
    main()
