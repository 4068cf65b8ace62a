"""Without a shared filesystem: ``system.data_plane=http`` across test hosts whose run
roots are folders of their own (docs/parallel.rst, "Without a shared filesystem").

Every host gets an empty tmpfs at the same path (``TestHosts.own_folder``), so the run dir
of the coordinator's host, the learner's and each collector's are different folders with
the same name, as on machines that share none. Rollouts go to the learner and policies
come from it over the service's own connections; checkpoints and result.json end up at
the run's home, the coordinator's host.
"""

from __future__ import annotations

import os
import signal

import pytest
from roles import RoleRun, balanced, layout

RUN_TIMEOUT_S = 240
HTTP = ("system.data_plane=http",)


def test_a_folder_of_its_own_is_seen_by_its_host_only(hosts, tmp_path):
    net = hosts("a", "b")
    root = tmp_path / "runs"
    net.own_folder("a", root)
    net.own_folder("b", root)
    assert net.run("a", ["sh", "-c", f"echo from-a > {root}/marker"]).returncode == 0
    assert net.read("a", root / "marker") == "from-a\n"
    assert net.read("b", root / "marker") is None and net.files("b", root) == []
    assert list(root.iterdir()) == []  # this machine does not see it either


def _private_run(hosts, tmp_path, names, experiment="cartpole_ppo_parallel", extra=()):
    net = hosts(*names)
    root = tmp_path / "runs"
    for name in names:
        net.own_folder(name, root)
    run_dir = root / "cartpole_1"
    argv = layout(run_dir, sum(n.startswith("collector") for n in names), (*HTTP, *extra))
    argv["coordinator"] = [
        experiment if w == "cartpole_ppo_parallel" else w for w in argv["coordinator"]
    ]
    return RoleRun(net, tmp_path, argv, run_dir, private=True), root


def _nothing_stray(run: RoleRun, root, dead: tuple[str, ...] = ()) -> None:
    """No process left; no rollout or temp file on any host (but on ``dead`` ones, whose
    killed learner held what it had received: the ledger books those as dropped); nothing
    of the run on a collector's host; the checkpoints at home."""
    assert not run.nothing_running()
    for host in set(run.net.hosts) - set(dead):
        files = run.net.files(host, root)
        name = os.path.basename
        stray = [f for f in files if "/data/" in f or name(f).endswith(".tmp")]
        assert not stray, (host, stray)
        if host.startswith("collector"):
            assert files == [], (host, files)
    home = run.net.files("coordinator", root)
    assert any(f.startswith("cartpole_1/ckpt/ckpt_iter") for f in home), home
    assert "cartpole_1/result.json" in home, home


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize(
    "experiment, trouble",
    [("cartpole_ppo_parallel", "collector cut"), ("pendulum_ppo_parallel", "learner killed")],
)
def test_the_http_plane_solves_across_hosts_that_share_no_folder(
    hosts, tmp_path, experiment, trouble
):
    # On CartPole the collector's host is cut off for 8 s mid-run: it keeps sending, so a
    # PUT is in flight or queued when the link goes, and each rollout is stored once. On
    # Pendulum the learner's process is killed once its checkpoint of iteration 5 went
    # home, and a learner started on a fifth host resumes from it.
    names = ["coordinator", "learner", "collector", "collector2"]
    names += ["learner2"] if trouble == "learner killed" else []
    run, root = _private_run(hosts, tmp_path, names, experiment)
    if trouble == "learner killed":
        spare = {"10.0.0.2": "10.0.0.5", "learner-a": "learner-b"}
        run.argv["learner2"] = [spare.get(w, w) for w in run.argv["learner"]]
        run.hosts_of["learner2"] = "learner2"
    run.start([name for name in names if name != "learner2"])
    if trouble == "collector cut":
        run.wait_iteration(3)
        run.cut_for("collector", 8.0)
    else:
        run.wait_iteration(7)  # past the checkpoint of iteration 5, which went home
        for pid in run.net.pids("learner"):
            os.kill(pid, signal.SIGKILL)
        run.start(["learner2"])
    codes = run.finish(RUN_TIMEOUT_S)
    if trouble == "learner killed":
        assert codes.pop("learner") == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, 0), run.report()
    result = run.result()
    assert result["solved"] and result["stop_reason"] == "solved", result
    assert balanced(result["ledger"]), (result["ledger"], run.report())
    assert result["ledger"]["trained"] > 0, result["ledger"]
    assert not [h for h in run.argv if "Traceback" in run.out(h)], run.report()
    if trouble == "learner killed":
        spare_out = run.out("learner2")
        assert "fetched checkpoint ckpt_iter" in spare_out, run.report()
        resumed = int(spare_out.split("resumed from iteration ", 1)[1].split()[0].rstrip(",."))
        assert resumed >= 5, spare_out
        # What the killed learner held stays on its host; the ledger booked it as dropped.
        held = [f for f in run.net.files("learner", root) if "/data/" in f]
        dropped = sum(v for k, v in result["ledger"].items() if k.startswith("dropped_"))
        assert len(held) <= dropped, (held, result["ledger"])
    _nothing_stray(run, root, dead=("learner",) if trouble == "learner killed" else ())
