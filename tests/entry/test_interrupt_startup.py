"""Ctrl-C or SIGTERM at any moment of start-up: one line, exit 130 / 143, nothing left."""

import signal
import subprocess
import sys
import time

import pytest

from ding_lite.utils.stop import RunInterrupted, import_held

ARGS = ["serial", "-c", "cartpole_ppo", "-q", "--max-train-iter", "100000",
        "env.num_envs=4", "policy.collect.n_steps=16", "evaluator.eval_freq=0"]  # fmt: skip


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_start_up_gives_one_line(tmp_path, sig, code):
    # Delays from the interpreter's start through torch's import, config compilation and
    # env building into the first iterations; the slower the machine, the earlier each lands.
    for delay in (0.2, 0.4, 0.7, 1.0, 1.5, 2.5):
        run = tmp_path / f"run{delay}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "ding_lite", *ARGS, "--exp-dir", str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(delay)
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        # A shell reports 130 / 143 both for that exit code and for an exit by the signal
        # itself (-2 / -15 here), which CPython may choose while it shuts down.
        assert proc.returncode in (code, -sig), (delay, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ding-lite: interrupted"), (delay, err)
        # A run that never trained leaves nothing; one that did says how to resume.
        if run.exists():
            assert "--resume" in lines[0] and (run / "result.json").is_file(), (delay, err)
        else:
            assert "--resume" not in lines[0]


def test_a_signal_an_import_swallows_still_ends_the_command(tmp_path, monkeypatch):
    # An extension's initialisation may catch the KeyboardInterrupt of a signal that lands
    # in it (torch._dynamo's import does) and go on; held back, the signal is acted on.
    (tmp_path / "swallows_a_signal.py").write_text(
        "import os, signal, time\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(0.2)\n"
        "except KeyboardInterrupt:\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RunInterrupted) as caught:
        import_held("swallows_a_signal", "no_such_module_at_all")
    assert caught.value.signal_name == "SIGINT" and caught.value.code == 130
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("command", ["serial", "learner"])
def test_a_training_command_imports_up_front_what_its_first_update_imports(command):
    # What is imported after import_for is imported with signals live; a training step
    # then imports nothing (torch._dynamo, which torch.optim's optimizers bring, swallowed
    # a SIGINT that landed in it and the run trained on: ding_lite's Adam does not bring it).
    script = (
        "import sys\n"
        "from ding_lite.entry.cli.interrupts import import_for\n"
        f"import_for({command!r})\n"
        "import torch\n"
        "before = set(sys.modules)\n"
        "net = torch.nn.Linear(2, 2)\n"
        "from ding_lite.policy.ppo.optimizers import Optimizers\n"
        "opt = Optimizers(net, kind='adam', lr=1e-3, eps=1e-5, weight_decay=0.0)\n"
        "net(torch.ones(2)).sum().backward()\n"
        "opt.step([opt.actor], max_norm=0.5)\n"
        "opt.load_state_dict(opt.state_dict())\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
