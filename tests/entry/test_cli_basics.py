"""The command line's own surface: --version, list, help texts."""

import argparse
import subprocess
import sys

import ding_lite
from ding_lite.config.config import EXPERIMENTS
from ding_lite.entry.cli.command import build_parser


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args], capture_output=True, text=True, timeout=60
    )


def test_version_and_list_in_a_subprocess():
    version = run_cli("--version")
    assert (
        version.returncode == 0 and version.stdout.strip() == f"ding-lite {ding_lite.__version__}"
    )
    listed = run_cli("list")
    assert listed.returncode == 0 and listed.stderr == ""
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(EXPERIMENTS)
    cartpole = next(line for line in lines if line.startswith("cartpole_ppo "))
    assert "cartpole x32" in cartpole and "solved at eval mean >= 475 over 20 episodes" in cartpole
    assert "no target" in next(line for line in lines if line.startswith("mujoco_ppo "))
    # What changes the task and the model is said: hidden velocities, memory, self-play.
    lstm = next(line for line in lines if line.startswith("cartpole_lstm_ppo "))
    assert "cartpole x32 (observe=position); ppo+LSTM;" in lstm
    assert "(opponent=self); ppo;" in next(line for line in lines if "selfplay" in line)


def test_list_into_a_reader_that_is_gone_ends_quietly():
    """``ding-lite list | head -1``: the reader has closed the pipe before the listing is
    written; the command ends with SIGPIPE's exit code and says nothing (it printed a
    BrokenPipeError traceback)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader is gone before the interpreter has even started
    code = proc.wait(timeout=60)
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert code == 141 and "Traceback" not in stderr, (code, stderr)


def subcommands(parser):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_every_flag_and_argument_has_help_text():
    parser = build_parser()
    missing = []
    for name, command in [("ding-lite", parser), *subcommands(parser).items()]:
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {action.option_strings or action.dest}")
    assert not missing


def test_help_of_every_subcommand_does_not_import_torch():
    code = (
        "import sys\n"
        "from ding_lite.entry.cli.command import main\n"
        "for cmd in [[], *[[c] for c in sys.argv[1:]]]:\n"
        "    try:\n"
        "        main([*cmd, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    names = list(subcommands(build_parser()))
    proc = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


def test_flags_of_other_libraries_are_answered_with_ours():
    out = run_cli("serial", "-c", "cartpole_ppo", "--ent-coef", "0.1")
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert "--ent-coef" in last and "policy.learn.entropy_weight" in last
    assert last.endswith("flag --entropy-coef")
    out = run_cli("serial", "-c", "cartpole_ppo", "--no-such-flag")
    assert out.stderr.strip().splitlines()[-1].endswith("unrecognized arguments: --no-such-flag")


def test_an_experiment_named_without_c_is_answered_with_the_command_that_runs_it(capsys):
    from ding_lite.entry.cli.command import main

    assert main(["serial", "cartpole_ppo"]) == 2  # as eval and render take a run dir
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith("(did you mean: ding-lite serial -c cartpole_ppo?)")
    assert main(["parallel", "policy.learn.n_epochs=2"]) == 2  # an override: no guess
    assert capsys.readouterr().err.strip().endswith("or --resume EXP_DIR")
