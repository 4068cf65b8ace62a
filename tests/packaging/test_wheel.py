"""The sdist and wheel, built and installed as a new user would get them.

``python -m build`` makes both from a copy of the checkout (what git tracks, plus the new
files it does not ignore), so nothing is written into the repository. The wheel goes into a
fresh venv in tmp_path (``--system-site-packages``: torch and the other dependencies come
from this machine, nothing is downloaded), and its ``ding-lite`` command runs from a folder
outside the source tree with PYTHONPATH cleared: ``--version``, ``list``, a two-iteration
CartPole training and ``dashboard`` serving its page.

The checkout is installed in this Python in editable mode, and the venv sees this Python's
site-packages, so setuptools' editable finder loads there too. It is appended to
``sys.meta_path``, after the path finder that finds the wheel's copy in the venv's own
site-packages first; the test checks that the command and ``import ding_lite`` do use that
copy.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest
from helpers import TINY, free_port

import ding_lite

ROOT = Path(__file__).resolve().parents[2]
VERSION = ding_lite.__version__
# What setuptools writes beside the sources when it builds in place.
BUILD_LEFTOVERS = ("build", "dist", "ding_lite.egg-info")
# Files the package needs at run time that are not Python modules.
DATA_FILES = [
    "ding_lite/py.typed",
    "ding_lite/entry/live/static/dashboard.html",
    "ding_lite/entry/live/static/dashboard.js",
    "ding_lite/entry/live/static/dashboard.css",
]
COMMAND_TIMEOUT = 60

pytestmark = pytest.mark.slow


def checkout_copy(dest: Path) -> Path:
    """Copies the files of the checkout (tracked, or new and not ignored) into ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() and not name.endswith(".whl"):  # deleted in the work tree: gone
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def user_env(venv: Path) -> dict[str, str]:
    """This process's environment as a new user's shell would have it: the venv's bin first
    on PATH, no PYTHONPATH, one torch thread."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", VIRTUAL_ENV=str(venv))
    env.update(OMP_NUM_THREADS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Runs ``args``; returns its stdout, or fails the test with its output."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def leftovers() -> dict[str, int | None]:
    """The modification time of each of :data:`BUILD_LEFTOVERS` in the checkout (None: absent)."""
    return {
        name: (ROOT / name).stat().st_mtime_ns if (ROOT / name).exists() else None
        for name in BUILD_LEFTOVERS
    }


def py_modules(names: list[str]) -> set[str]:
    return {n for n in names if n.startswith("ding_lite/") and n.endswith(".py")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(source copy, sdist, wheel), built with the build tools of this Python."""
    before = leftovers()
    tmp = tmp_path_factory.mktemp("wheel")
    source = checkout_copy(tmp / "src")
    dist = tmp / "dist"
    # Without an isolated build env: it would download setuptools. Building the sdist and
    # then the wheel from it checks that the sdist holds all that the wheel needs.
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        tmp, dict(os.environ))  # fmt: skip
    assert leftovers() == before, "the build wrote into the checkout"
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return source, sdist, wheel


def test_the_sdist_and_wheel_hold_the_package_its_data_and_the_changelog(built):
    source, sdist, wheel = built
    assert sdist.name == f"ding_lite-{VERSION}.tar.gz"
    assert wheel.name == f"ding_lite-{VERSION}-py3-none-any.whl"
    modules = {
        p.relative_to(source).as_posix()
        for p in (source / "ding_lite").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    experiments = {m for m in modules if m.startswith("ding_lite/config/experiments/")}
    assert "ding_lite/config/experiments/cartpole_ppo.py" in experiments
    with zipfile.ZipFile(wheel) as zipped:
        in_wheel = zipped.namelist()
        entry_points = zipped.read(f"ding_lite-{VERSION}.dist-info/entry_points.txt").decode()
    assert py_modules(in_wheel) == modules  # every package found, nothing stray
    assert set(DATA_FILES) <= set(in_wheel)
    assert "ding-lite = ding_lite.entry.cli.command:main" in entry_points
    with tarfile.open(sdist) as tarred:
        top = f"ding_lite-{VERSION}/"
        in_sdist = [n.removeprefix(top) for n in tarred.getnames()]
    assert py_modules(in_sdist) == modules
    assert {*DATA_FILES, "CHANGELOG.rst", "LICENSE", "README.rst", "setup.py"} <= set(in_sdist)


def test_the_wheel_installed_in_a_fresh_venv_trains_and_serves_the_dashboard(built, tmp_path):
    _, _, wheel = built
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        tmp_path, dict(os.environ))  # fmt: skip
    env = user_env(venv)
    python = str(venv / "bin" / "python")
    # pip comes from the system site-packages; --ignore-installed: the editable ding-lite
    # there is neither taken as the install nor uninstalled.
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir",
         "--ignore-installed", "--quiet", str(wheel)], tmp_path, env)  # fmt: skip
    user = tmp_path / "user"  # a folder outside the source tree
    user.mkdir()
    site = run([python, "-c", "import ding_lite, sysconfig; print(ding_lite.__file__); "
                "print(sysconfig.get_paths()['purelib'])"], user, env).split()  # fmt: skip
    assert site[0] == str(Path(site[1]) / "ding_lite" / "__init__.py")
    assert site[1].startswith(str(venv)) and not site[0].startswith(str(ROOT))
    assert shutil.which("ding-lite", path=env["PATH"]) == str(venv / "bin" / "ding-lite")

    assert run(["ding-lite", "--version"], user, env).strip() == f"ding-lite {VERSION}"
    assert "cartpole_ppo " in run(["ding-lite", "list"], user, env)
    run(["ding-lite", "serial", "-c", "cartpole_ppo", "--seed", "0", "--max-train-iter", "2",
         "--exp-dir", "run", *TINY], user, env)  # fmt: skip
    assert (user / "run" / "result.json").is_file()

    port = free_port()
    dashboard = subprocess.Popen(
        ["ding-lite", "dashboard", "run", "--port", str(port), "--open-for", "60"],
        cwd=user,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = dashboard.stdout.readline()
        assert line.startswith(f"dashboard of 1 run(s) at http://127.0.0.1:{port}/"), line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
            page = answer.read().decode()
        assert answer.status == 200 and "dashboard.js" in page
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/static/dashboard.js", timeout=10
        ) as answer:
            assert answer.status == 200 and answer.read()
    finally:
        dashboard.send_signal(signal.SIGINT)
        try:
            _, err = dashboard.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            dashboard.kill()
            _, err = dashboard.communicate()
    assert dashboard.returncode == 0, err
