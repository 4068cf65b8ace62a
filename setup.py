"""Installs ding_lite and its ``ding-lite`` command."""

import re
from pathlib import Path

from setuptools import find_packages, setup


def read_version() -> str:
    """Reads ``__version__`` from ding_lite/__init__.py without importing the package.

    Importing it would need its dependencies installed before they are; the version lives in
    that one line only.
    """
    text = Path(__file__).with_name("ding_lite").joinpath("__init__.py").read_text("utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if match is None:
        raise RuntimeError('no __version__ = "X.Y.Z" line in ding_lite/__init__.py')
    return match.group(1)


setup(
    name="ding-lite",
    version=read_version(),
    description="A small, fast, hook-driven RL training service (PPO) in PyTorch",
    long_description=open("README.rst", encoding="utf-8").read(),
    long_description_content_type="text/x-rst",
    # An SPDX id; no "License ::" classifier, which setuptools now deprecates in its favour.
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["ding_lite", "ding_lite.*"]),
    package_data={
        "ding_lite.config": ["experiments/*.py"],
        # The dashboard page (ding-lite dashboard): served from the package, nothing fetched.
        "ding_lite.entry.live": ["static/*"],
        # PEP 561: users' type checkers read ding_lite's annotations.
        "ding_lite": ["py.typed"],
    },
    install_requires=[
        "torch>=2.1",
        "numpy",
        "easydict",
        "tensorboardX",
        "tqdm",
        "pyyaml",
        "flask",
        "requests",
        # Production WSGI server for the coordinator and workers: connection limits and
        # timeouts for idle and half-sent requests (werkzeug's dev server has neither).
        "waitress>=3",
    ],
    extras_require={
        "gym": ["gymnasium>=1.0"],
        # gymnasium's MuJoCo envs (HalfCheetah-v5, Hopper-v5, ...): the mujoco wheel and
        # what those envs import.
        "mujoco": ["gymnasium[mujoco]>=1.0"],
        # LunarLander-v3 and LunarLanderContinuous-v3 (zoo_lunarlander*): gymnasium's Box2D
        # envs import Box2D, whose PyPI wheels need no compiler (gymnasium's own box2d extra
        # builds box2d-py from source with swig).
        "box2d": ["gymnasium>=1.0", "Box2D>=2.3.10"],
        "render": ["matplotlib"],
        # ding-lite render --out FILE.mp4|.gif and evaluator.video_freq: imageio's ffmpeg
        # plugin (ships an ffmpeg binary) writes .mp4, Pillow (an imageio dependency) .gif.
        "video": ["imageio[ffmpeg]"],
        # ding-lite plot: learning curves of runs to an image.
        "plot": ["matplotlib"],
        # logger.wandb=true: mirror runs to Weights & Biases.
        "wandb": ["wandb"],
        # ding-lite tune: Optuna studies (JournalStorage needs 4.0), its plots with matplotlib.
        "tune": ["optuna>=4.0", "matplotlib"],
        # ding-lite parallel --launcher ray: workers as Ray actors, on one machine or a cluster.
        "ray": ["ray>=2.9"],
        # ding-lite export: onnx writes and checks the graph (torch's TorchScript-based
        # exporter, no onnxscript needed), onnxruntime runs it.
        "export": ["onnx>=1.14", "onnxruntime>=1.16"],
        # The docs site: sphinx-build -W -b html docs build/docs (docs/conf.py).
        "docs": ["sphinx>=7", "furo"],
        # The tests build the docs site too (tests/docs), so they need what it needs.
        "test": [
            "pytest",
            "pytest-timeout",
            # Two test processes (pyproject's addopts -n 2): many tests wait on servers,
            # heartbeats and cut links, so a second one fills a core the first leaves idle.
            "pytest-xdist>=3.2",  # --dist worksteal
            "gymnasium[mujoco]>=1.0",
            "matplotlib",
            "wandb",
            "imageio[ffmpeg]",
            "gymnasium[classic-control]>=1.0",  # pygame: gym:CartPole-v1 draws frames
            "Box2D>=2.3.10",  # the zoo's LunarLander smoke tests
            "ray>=2.9",
            "sphinx>=7",
            "furo",
            "docutils",  # the reST parser under the docs tests' Sphinx build
            # Drives Debian's chromium (installed by .ci/run) to check the dashboard page.
            "selenium>=4.10",
            # Property tests: the coordinator's state round-trips every field it has.
            "hypothesis>=6",
            # tests/entry/test_export.py: the exported graphs against predict.
            "onnx>=1.14",
            "onnxruntime>=1.16",
            "optuna>=4.0",  # tests/entry/test_tune.py, tests/multihost/test_tune_hosts.py
            # tests/packaging: sdist and wheel (python -m build), and the type checker.
            "build>=1",
            "mypy>=1.10",
        ],
        "bench": ["gymnasium[mujoco]>=1.0", "Box2D>=2.3.10", "stable-baselines3"],
    },
    entry_points={"console_scripts": ["ding-lite=ding_lite.entry.cli.command:main"]},
)
