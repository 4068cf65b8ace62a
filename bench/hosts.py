"""The parallel protocol across hosts against loopback, in one run on one machine (root).

docs/parallel.rst's per-role commands ("Running on several machines") run twice for each
experiment and seed, on test hosts made as network namespaces (tests/multihost/hosts.py):

- ``loopback``: every role in one host, on 127.0.0.1 (the coordinator on 7235, the learner
  on 7236, the collectors on 7237 and 7238);
- ``hosts``: the page's layout, the coordinator on 10.0.0.1 (``--host 0.0.0.0``), the
  learner on 10.0.0.2, two collectors on 10.0.0.3 and 10.0.0.4, their calls crossing a veth
  pair and a bridge each way.

Each run trains ``--iters`` iterations (no early stop). Prints, per run and then as the
median over seeds: seconds per iteration (wall time over iterations, start-up left out by
the run's own clock), the round trip of a collector's data task (the control call that
carries rollout metadata), the learn task's round trip (the learner reads the rollout
files, trains, publishes), the policy-sync latency (published -> a collector acts with it),
and steady env steps/s. Rollouts and policies travel as files on the shared filesystem in
both placements; what differs is the network path of every call. Asserts nothing.

On one machine a "host" is a namespace of the same kernel: the figures show what leaving
loopback costs (addresses, the bridge, the extra hops), not a real network's latency. Add
the network's round trip to each call for that: one per data task and one per learn task
per iteration, plus one per collector for a policy sync.

With ``--planes`` it compares the two data planes instead, both on the hosts layout:
``files`` (one shared filesystem, as above) and ``http`` (``system.data_plane=http``, every
host's run root an empty tmpfs of its own, so each rollout crosses the network to the
learner and each policy to the collectors). It adds the rollout bytes moved per second
(rollouts written times one rollout's file size, over the run's wall time).

    sudo python bench/hosts.py --seeds 0 1 2
    sudo python bench/hosts.py --planes --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "multihost")]

from hosts import TestHosts, can_make_hosts  # noqa: E402
from roles import RoleRun, layout  # noqa: E402

EXPERIMENTS = {"cartpole_ppo_parallel": 30, "mujoco_ppo_parallel": 12}  # iterations each
FIGURES = (  # (result.json key, header, format of the value in the unit the header says)
    ("s_per_iter", "s/iter", lambda v: f"{v:.3f}"),
    ("control_p50_s", "data p50 ms", lambda v: f"{v * 1e3:.1f}"),
    ("control_p99_s", "data p99 ms", lambda v: f"{v * 1e3:.1f}"),
    ("learn_p50_s", "learn p50 ms", lambda v: f"{v * 1e3:.1f}"),
    ("policy_sync_p50_s", "sync p50 ms", lambda v: f"{v * 1e3:.1f}"),
    ("policy_sync_p99_s", "sync p99 ms", lambda v: f"{v * 1e3:.1f}"),
    ("steady_sps", "steady SPS", lambda v: f"{v:,.0f}"),
    ("rollout_mb_s", "rollout MB/s", lambda v: f"{v:.2f}"),
)


def loopback(argv: dict[str, list[str]]) -> dict[str, list[str]]:
    """The hosts layout's commands with every address 127.0.0.1 and a port per role."""
    ports = {"coordinator": "7235", "learner": "7236", "collector": "7237", "collector2": "7238"}
    out = {}
    for role, words in argv.items():
        words = [w.replace("10.0.0.1:", "127.0.0.1:") for w in words]
        words = ["127.0.0.1" if w in ("0.0.0.0", "10.0.0.2", "10.0.0.3", "10.0.0.4") else w
                 for w in words]  # fmt: skip
        at = words.index("--port")
        out[role] = [*words[: at + 1], ports[role], *words[at + 2 :]]
    return out


def run_once(exp: str, iters: int, seed: int, placement: str, folder: Path) -> dict:
    private = placement == "http"  # every host's run root its own
    run_dir = folder / "runs" / "run" if private else folder / "run"
    extra = (f"max_train_iter={iters}", "evaluator.stop_value=none", f"seed={seed}")
    extra += ("system.data_plane=http",) if private else ()
    argv = layout(run_dir, collectors=2, extra=extra)
    argv["coordinator"] = [w if w != "cartpole_ppo_parallel" else exp for w in argv["coordinator"]]
    if placement == "loopback":
        net = TestHosts(["solo"])
        argv = loopback(argv)
        hosts_of = dict.fromkeys(argv, "solo")
    else:
        net = TestHosts(list(argv))
        hosts_of = {role: role for role in argv}
    try:
        if private:
            for host in argv:
                net.own_folder(host, folder / "runs")
        run = RoleRun(net, folder, argv, run_dir, hosts_of=hosts_of, private=private).start()
        codes = run.finish(1800)
        if set(codes.values()) != {0}:
            raise SystemExit(f"{exp} {placement} seed {seed}: exit codes {codes}\n{run.report()}")
        result = run.result()
    finally:
        problems = net.close()
    if problems:
        raise SystemExit("; ".join(problems))
    result["s_per_iter"] = result["wall_s"] / max(1, result["train_iter"])
    written = result["ledger"]["written"] * rollout_bytes(exp)
    result["rollout_mb_s"] = written / max(result["wall_s"], 1e-9) / 1e6
    return result


def rollout_bytes(exp: str, cache: dict[str, int] = {}) -> int:  # noqa: B006 (a memo)
    """The size of one rollout file of ``exp``, as a collector of the run writes it."""
    if exp not in cache:
        from ding_lite.config import compile_config
        from ding_lite.data.files import write_rollout
        from ding_lite.envs.from_config import build_env
        from ding_lite.policy import create_policy
        from ding_lite.worker.collector import SerialCollector

        cfg = compile_config(exp)
        env = build_env(cfg, cfg.env.num_envs, "cpu", 0)
        policy = create_policy(cfg.policy, obs_shape=env.obs_shape, action_space=env.action_space)
        data = SerialCollector.from_config(env, policy, cfg, 0).collect()
        with tempfile.TemporaryDirectory() as tmp:
            meta = write_rollout(tmp, "c0", 0, data, policy_version=0)
            cache[exp] = Path(meta["path"]).stat().st_size
    return cache[exp]


def _cell(value: float | None, fmt) -> str:
    return "-" if value is None else fmt(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS))
    parser.add_argument("--planes", action="store_true", help="files vs http, on hosts")
    args = parser.parse_args()
    placements = ("files", "http") if args.planes else ("loopback", "hosts")
    if why := can_make_hosts():
        raise SystemExit(f"bench/hosts.py: {why}")
    header = f"{'experiment':<24}{'placement':<10}{'seed':>5}" + "".join(
        f"{h:>13}" for _, h, _ in FIGURES
    )
    print(header)
    rows: dict[tuple[str, str], list[dict]] = {}
    for exp in args.experiments:
        for seed in args.seeds:
            for placement in placements:
                with tempfile.TemporaryDirectory() as tmp:
                    result = run_once(exp, EXPERIMENTS[exp], seed, placement, Path(tmp))
                rows.setdefault((exp, placement), []).append(result)
                cells = "".join(f"{_cell(result.get(k), s):>13}" for k, _, s in FIGURES)
                print(f"{exp:<24}{placement:<10}{seed:>5}{cells}", flush=True)
    print("\nmedians over seeds " + " ".join(map(str, args.seeds)))
    print(header.replace("seed", "    "))
    for (exp, placement), results in rows.items():
        cells = ""
        for key, _, scale in FIGURES:
            values = [r[key] for r in results if r.get(key) is not None]
            cells += f"{_cell(statistics.median(values) if values else None, scale):>13}"
        print(f"{exp:<24}{placement:<10}{'':>5}{cells}")


if __name__ == "__main__":
    main()
