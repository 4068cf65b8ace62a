"""Checks statements of docs/quickstart.rst against the code: result.json, error messages."""

from __future__ import annotations

import ast
import json
import re
import sys

import pytest
from helpers import DOCS, TINY

from ding_lite import serial_pipeline
from ding_lite.config import compile_config
from ding_lite.envs import create_env
from ding_lite.envs.gym_adapter import import_gymnasium
from ding_lite.utils.errors import ConfigError

QUICKSTART = DOCS / "quickstart.rst"


def documented_result_keys() -> list[str]:
    """The first column of the result.json table."""
    text = QUICKSTART.read_text(encoding="utf-8")
    table = text.split("``result.json`` holds:", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^``([a-z_]+)``\s", table, flags=re.M)


def test_result_json_table_lists_every_key(tmp_path):
    serial_pipeline(
        "cartpole_ppo", seed=0, overrides=TINY, exp_dir=str(tmp_path / "run"), max_train_iter=1
    )
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert sorted(documented_result_keys()) == sorted(result)
    assert result["stop_reason"] == "max_train_iter"


def test_config_error_messages_are_the_code_s():
    """Each ``unknown config key`` / ``config key ... must be`` line, reproduced."""
    text = QUICKSTART.read_text(encoding="utf-8")
    lines = re.findall(r"^    ding-lite: error: ((?:unknown )?config key .*)$", text, flags=re.M)
    assert len(lines) >= 4
    for message in lines:
        if message.startswith("unknown"):
            key = re.match(r"unknown config key '([a-z_.]+)'", message).group(1)
            override = f"{key}=1"
        else:
            key, raw = re.match(
                r"config key '([a-z_.]+)' must .*, got (.+?)(?: \(\w+\))?$", message
            ).groups()
            override = f"{key}={ast.literal_eval(raw)}"
        with pytest.raises(ConfigError) as err:
            compile_config("cartpole_ppo", [override])
        assert str(err.value) == message


def test_unknown_name_messages_are_the_code_s():
    """The ``unknown experiment`` and ``unknown env`` lines, reproduced."""
    text = QUICKSTART.read_text(encoding="utf-8")
    (experiment,) = re.findall(r"^    ding-lite: error: (unknown experiment .*)$", text, flags=re.M)
    (env,) = re.findall(r"^    ding-lite: error: (unknown env .*)$", text, flags=re.M)
    with pytest.raises(ConfigError) as err:
        compile_config("cartpol")
    assert str(err.value) == experiment
    with pytest.raises(ConfigError) as err:
        create_env("cartpol", 1)
    assert str(err.value) == env


def test_missing_gymnasium_message_is_the_code_s(monkeypatch):
    text = QUICKSTART.read_text(encoding="utf-8")
    (line,) = re.findall(r"^    ding-lite: error: (gymnasium is required .*)$", text, flags=re.M)
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # import gymnasium: ImportError
    with pytest.raises(ImportError) as err:
        import_gymnasium()
    assert str(err.value) == line
