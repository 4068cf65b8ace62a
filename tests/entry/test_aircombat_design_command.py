"""The air-combat design's minimal check, as the design writes it (its flags are ding-lite
shorthands): at least one update, nothing NaN or infinite, losses within +-100."""

import json
import math
import subprocess
import sys

from ding_lite.utils.log import read_tb_scalars

DESIGN = (
    "--agent ppo --opponent rule_based --reward zero --num-envs 8 --n-steps 256 --max-steps 1000"
)


def test_the_design_command_trains_one_update_with_sane_losses(tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "aircombat_ppo", *DESIGN.split()]
    proc = subprocess.run(
        [*cmd, "--exp-dir", str(run), "-q"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    config = json.loads((run / "config.json").read_text())
    assert config["policy"]["type"] == "ppo" and config["max_env_step"] == 1000
    assert config["env"]["kwargs"]["opponent"] == "rule_based"
    assert config["env"]["kwargs"]["reward"] == "zero"
    assert (config["env"]["num_envs"], config["policy"]["collect"]["n_steps"]) == (8, 256)
    result = json.loads((run / "result.json").read_text())
    assert result["train_iter"] >= 1 and result["envstep"] >= 1000
    (events,) = (run / "tb").glob("events*")
    scalars = read_tb_scalars(events)
    for name in ("losses/policy_loss", "losses/value_loss", "losses/entropy"):
        values = [value for _, value in scalars[name]]
        assert values and all(math.isfinite(v) and -100 < v < 100 for v in values), name
    assert math.isfinite(result["eval_return_mean"])
