"""A user's own gymnasium.Env: ``env.name=gym:module:Id`` (gymnasium's form) once the module is
allowed, ``--import MOD``, an id registered from Python, and the "Your own gymnasium.Env"
section of docs/gymnasium.rst run as printed."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from helpers import tiny

import ding_lite
from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.envs import create_env, env_modules, import_env_modules
from ding_lite.envs.env_modules import check_env_modules
from ding_lite.utils.errors import ConfigError

HERE = Path(__file__).resolve().parent
PAGE = HERE.parents[1] / "docs" / "gymnasium.rst"
# A few iterations of 32 samples: enough to show the run completes and writes its result.
TINY = tiny("env.num_envs=2", "policy.learn.n_epochs=1", "evaluator.eval_freq=1")
CORRIDOR = "gym:gym_corridor:Corridor-v0"


@pytest.fixture
def helper_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))


def _region(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"^\.\. begin {name}\n(.*?)^\.\. end {name}$", text, re.S | re.M)
    assert found, f"docs/gymnasium.rst has no region {name}"
    lines = [line[4:] for line in found.group(1).splitlines() if line.startswith("    ")]
    return "\n".join(lines) + "\n"


def _env_with_path(*folders: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, folders), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def nothing_allowed(monkeypatch):
    """This process as if no env module had been allowed yet (other tests allow some)."""
    monkeypatch.setattr(env_modules, "_allowed", set())


def test_module_colon_id_builds_the_env_once_its_module_is_allowed(helper_on_path, nothing_allowed):
    with pytest.raises(ValueError) as err:
        create_env(CORRIDOR, 3)  # importable, but nobody allowed it
    assert str(err.value) == (
        f"env name '{CORRIDOR}' names module 'gym_corridor', which this process was not "
        "allowed to import: ding_lite imports only the modules its own command line or "
        "config names (--import gym_corridor)"
    )
    import_env_modules(["gym_corridor"])
    env = create_env(CORRIDOR, 3, seed=1)
    try:
        obs, _ = env.reset()
        assert obs.shape == (3, 1) and env.name == CORRIDOR
    finally:
        env.close()


def test_a_module_that_cannot_be_imported_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the run would claim ./gym_ppo
    with pytest.raises(ConfigError) as err:
        import_env_modules(["no_such_module_dl"])
    text = str(err.value)
    assert "cannot import env module 'no_such_module_dl'" in text and "\n" not in text
    with pytest.raises(ConfigError, match="not a module name"):
        import_env_modules(["../no_such_module_dl"])
    cfg = compile_config("gym_ppo", ["env.name=gym:no_such_module_dl:Corridor-v0"])
    with pytest.raises(ConfigError, match="cannot import env module 'no_such_module_dl'"):
        serial_pipeline(cfg)
    assert not list(tmp_path.iterdir())


def test_a_module_that_registers_another_id_says_so(helper_on_path):
    import_env_modules(["gym_corridor"])
    with pytest.raises(ValueError) as err:
        create_env("gym:gym_corridor:Coridor-v0", 1)
    assert str(err.value) == (
        "unknown gymnasium env 'Coridor-v0' (module 'gym_corridor' was imported but did not "
        "register it); did you mean 'Corridor-v0'?"
    )


@pytest.mark.slow
def test_serial_pipeline_trains_a_module_colon_id_env(helper_on_path, tmp_path):
    run = serial_pipeline(
        "gym_ppo",
        overrides=[f"env.name={CORRIDOR}", *TINY],
        exp_dir=str(tmp_path / "run"),
        max_env_step=96,
    )
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["env"] == CORRIDOR and result["envstep"] >= 96
    assert run.result["train_iter"] == result["train_iter"] >= 3


@pytest.mark.slow
def test_an_env_class_registered_from_python_trains(tmp_path):
    sys.path.insert(0, str(HERE))
    try:
        from gym_corridor import Corridor
    finally:
        sys.path.remove(str(HERE))
    gym.register(id="CorridorFromPython-v0", entry_point=Corridor)
    try:
        serial_pipeline(
            "gym_ppo",
            overrides=["env.name=gym:CorridorFromPython-v0", *TINY],
            exp_dir=str(tmp_path / "run"),
            max_env_step=64,
        )
    finally:
        del gym.registry["CorridorFromPython-v0"]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["envstep"] >= 64


@pytest.mark.slow
def test_the_cli_trains_an_env_of_a_module_it_imports(tmp_path):
    """``--import MOD`` imports the module (which registers the id) and records it in the
    run's ``env.import_modules``."""
    cmd = [sys.executable, "-m", "ding_lite", "serial", "-c", "gym_ppo", "--import"]
    cmd += ["gym_corridor", "env.name=gym:Corridor-v0", *TINY, "max_env_step=64"]
    done = subprocess.run(
        [*cmd, "--exp-dir", "run", "-q"],
        cwd=tmp_path,
        env=_env_with_path(HERE),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["env"] == "gym:Corridor-v0"
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["env"]["import_modules"] == ["gym_corridor"]
    # The run dir's config names the module; eval imports it only when asked to.
    evaluate = [sys.executable, "-m", "ding_lite", "eval", "run", "--episodes", "2"]
    for extra, code in (([], 2), (["--import", "gym_corridor"], 0)):
        done = subprocess.run(
            [*evaluate, *extra],
            cwd=tmp_path,
            env=_env_with_path(HERE),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == code, done.stderr[-2000:]
    assert "over 2 episodes" in done.stdout


@pytest.mark.slow
def test_the_documented_example_runs_as_printed(tmp_path, monkeypatch):
    """The page's my_envs.py, its command (with a tiny budget added) and its Python snippet."""
    (tmp_path / "my_envs.py").write_text(_region("custom-gym-env"), encoding="utf-8")
    command = " ".join(_region("custom-gym-command").replace("\\\n", " ").split())
    assert command.startswith("PYTHONPATH=. ding-lite serial -c gym_ppo ")
    args = command.split()[3:]  # after "PYTHONPATH=. ding-lite serial"
    cmd = [sys.executable, "-m", "ding_lite", "serial", *args, *TINY[:5], "max_env_step=64"]
    done = subprocess.run(
        [*cmd, "--exp-dir", "cli_run", "-q"],
        cwd=tmp_path,
        env=_env_with_path(Path(".")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "cli_run" / "result.json").is_file()

    # The Python snippet, with the same small budget and its run dir in tmp_path.
    real = ding_lite.serial_pipeline

    def small(cfg, **options):
        options["overrides"] = [*options.get("overrides", ()), *TINY[:5]]
        return real(cfg, **options, max_env_step=64, exp_dir=str(tmp_path / "py_run"))

    monkeypatch.setattr(ding_lite, "serial_pipeline", small)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        exec(compile(_region("custom-gym-python"), "gymnasium.rst", "exec"), {})
    finally:
        gym.registry.pop("MyCoinFlip-v0", None)
        gym.registry.pop("CoinFlip-v0", None)
        sys.modules.pop("my_envs", None)
    assert json.loads((tmp_path / "py_run" / "result.json").read_text())["envstep"] >= 64


def test_the_documented_errors_are_the_ones_printed(nothing_allowed):
    text = PAGE.read_text(encoding="utf-8")
    printed = re.findall(r"^    ding-lite: error: (.*my_envz.*)$", text, re.M)
    assert len(printed) == 2, printed
    with pytest.raises(ConfigError) as err:
        import_env_modules(["my_envz"])
    assert str(err.value) == printed[0]
    with pytest.raises(ConfigError) as err:
        check_env_modules({"name": "gym:my_envz:CoinFlip-v0", "import_modules": []})
    assert str(err.value) == printed[1]
