"""Two gloo ranks on halves of every minibatch take the step one process takes on the
whole: same parameters (1e-5), same early stop, same normalizer, same logged means."""

import os
import subprocess
import sys
from pathlib import Path

import torch
from helpers import exit_codes

from ding_lite.utils.distributed import free_port

SCRIPT = Path(__file__).with_name("rank_update.py")


def _run(out: Path, env: dict) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        if name not in env or env[name] is None:
            env.pop(name, None)
    return subprocess.Popen([sys.executable, str(SCRIPT), str(out)], env=env)


def test_two_ranks_on_halves_equal_one_rank_on_the_whole(tmp_path):
    port = str(free_port())
    group = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    procs = [
        _run(tmp_path / "single.pt", {"RANK": None, "WORLD_SIZE": None}),
        _run(tmp_path / "rank0.pt", {**group, "RANK": "0", "LOCAL_RANK": "0"}),
        _run(tmp_path / "rank1.pt", {**group, "RANK": "1", "LOCAL_RANK": "1"}),
    ]
    assert exit_codes(procs, 120) == [0, 0, 0]
    single, rank0, rank1 = (
        torch.load(tmp_path / f"{n}.pt", weights_only=True) for n in ("single", "rank0", "rank1")
    )
    # The KL early stop cut the first iteration short, the same way everywhere.
    assert single["minibatches"][0] < 6 * 4
    for got in (rank0, rank1):
        assert torch.equal(got["minibatches"], single["minibatches"])
        torch.testing.assert_close(got["params"], single["params"], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got["approx_kl"], single["approx_kl"], rtol=1e-4, atol=1e-6)
        assert torch.equal(got["mean"], single["mean"]) and torch.equal(got["m2"], single["m2"])
    assert torch.equal(rank0["params"], rank1["params"])  # the ranks agree bit for bit
