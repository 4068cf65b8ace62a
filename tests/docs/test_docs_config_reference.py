"""Keeps docs/config.rst (and the flag table of docs/quickstart.rst) in step with the code.

The reference tables of config.rst sit between ``.. begin defaults-table`` and ``.. end
defaults-table``; each bundled experiment's table between ``.. begin experiment NAME`` and
``.. end experiment NAME``. A row is ``* - ``key``  - ``value`` ...``; values are Python
literals compared with the code's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import torch
from helpers import DOCS, extract_blocks, key_value_rows

from ding_lite.config import EXPERIMENTS, compile_config, load_experiment
from ding_lite.config.defaults import DEFAULT_CONFIG, FREE_FORM_KEYS
from ding_lite.entry.cli.command import SHORTHANDS
from ding_lite.envs.from_config import build_env
from ding_lite.utils.errors import ConfigError

CONFIG_RST = DOCS / "config.rst"


def leaves(tree: Mapping, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted keys and values; free-form sections count as one leaf each."""
    for key, value in tree.items():
        dotted = prefix + key
        if isinstance(value, Mapping) and dotted not in FREE_FORM_KEYS:
            yield from leaves(value, dotted + ".")
        else:
            yield dotted, value


def sections(tree: Mapping, prefix: str = "") -> Iterator[str]:
    for key, value in tree.items():
        dotted = prefix + key
        if isinstance(value, Mapping) and dotted not in FREE_FORM_KEYS:
            yield dotted
            yield from sections(value, dotted + ".")


def table_rows(name: str) -> dict[str, Any]:
    """``{dotted key: documented value}`` of the list-table rows in a marked region."""
    return key_value_rows("config.rst", name)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same type (so 0 is not 0.0 and True is not 1)."""
    return type(a) is type(b) and a == b


def test_every_default_is_documented_with_its_value():
    documented = table_rows("defaults-table")
    expected = dict(leaves(DEFAULT_CONFIG))
    missing = sorted(set(expected) - set(documented))
    stale = sorted(set(documented) - set(expected))
    assert not missing, f"keys of DEFAULT_CONFIG missing from docs/config.rst: {missing}"
    assert not stale, f"docs/config.rst documents keys DEFAULT_CONFIG lacks: {stale}"
    wrong = {k: (documented[k], v) for k, v in expected.items() if not same(documented[k], v)}
    assert not wrong, f"documented default != code default (doc, code): {wrong}"


def test_every_section_is_named():
    text = CONFIG_RST.read_text(encoding="utf-8")
    for section in sections(DEFAULT_CONFIG):
        assert f"``{section}``" in text, f"section {section} is not named in docs/config.rst"


@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if not n.startswith("zoo_")])
def test_bundled_experiment_table(name):
    documented = table_rows(f"experiment {name}")
    expected = dict(leaves(load_experiment(name)))
    assert set(documented) == set(expected), (
        f"{name}: documented keys differ; missing {sorted(set(expected) - set(documented))}, "
        f"stale {sorted(set(documented) - set(expected))}"
    )
    wrong = {k: (documented[k], v) for k, v in expected.items() if not same(documented[k], v)}
    assert not wrong, f"{name}: documented value != experiment value (doc, code): {wrong}"


def test_config_file_examples_compile(tmp_path):
    py_file = tmp_path / "wide_cartpole.py"
    py_file.write_text("\n".join(extract_blocks("config.rst", "python-config-example")))
    cfg = compile_config(str(py_file))
    assert cfg.exp_name == "wide_cartpole" and cfg.env.num_envs == 64
    assert cfg.evaluator.stop_value == 475.0  # inherited from cartpole_ppo

    yaml_file = tmp_path / "acrobot.yaml"
    yaml_file.write_text("\n".join(extract_blocks("config.rst", "yaml-config-example", "yaml")))
    cfg = compile_config(str(yaml_file))
    assert cfg.env.name == "gym:Acrobot-v1" and cfg.policy.learn.learning_rate == 1e-3
    assert cfg.evaluator.min_train_return is None


def test_quickstart_lists_every_shorthand_flag():
    text = (DOCS / "quickstart.rst").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^``(--[a-z-]+)``\s+``([a-z_.]+)``", text, flags=re.M))
    expected = {f"--{name.replace('_', '-')}": key for name, (key, _) in SHORTHANDS.items()}
    assert rows == expected


def test_type_rule_statements():
    """The statements of 'Type rules' and of the reference rows that go beyond a type."""
    # grad_clip_norm: a float default that also takes None.
    cfg = compile_config("cartpole_ppo", ["policy.learn.grad_clip_norm=none"])
    assert cfg.policy.learn.grad_clip_norm is None
    # Numbers written as text (what YAML 1.1 makes of 1e-3) for int and float keys.
    cfg = compile_config(
        {"policy": {"learn": {"learning_rate": "1e-3"}}, "env": {"num_envs": "64"}}
    )
    assert cfg.policy.learn.learning_rate == 1e-3 and cfg.env.num_envs == 64
    # ... and for keys whose default is None but that take numbers.
    assert compile_config({"max_env_step": "5e5"}).max_env_step == 500_000
    with pytest.raises(ConfigError, match="must be int"):
        compile_config({"max_env_step": "lots"})
    # The unknown-key hints the page gives.
    with pytest.raises(ConfigError, match=r"did you mean 'policy\.collect\.gamma'"):
        compile_config({"policy": {"learn": {"gamma": 0.9}}})
    # collector is checked like any other section.
    with pytest.raises(ConfigError, match="unknown config key 'collector.window'"):
        compile_config({"collector": {"window": 5}})
    with pytest.raises(ConfigError, match="at least 1"):
        compile_config({"collector": {"stats_window": 0}})


def test_env_dtype_by_name():
    cfg = compile_config("cartpole_ppo", ["env.kwargs.dtype=float64"])
    assert build_env(cfg, 2, "cpu", 0).dtype == torch.float64
    cfg = compile_config("cartpole_ppo", ["env.kwargs.dtype=float65"])
    with pytest.raises(ConfigError, match="unknown torch dtype 'float65'"):
        build_env(cfg, 2, "cpu", 0)
