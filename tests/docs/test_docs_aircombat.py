"""Checks docs/aircombat.rst against the code: constants, observation, opponents, commands."""

from __future__ import annotations

import math
import re
import shlex

import pytest
from helpers import DOCS

from ding_lite.config import compile_config
from ding_lite.entry.cli.command import build_parser
from ding_lite.entry.trained import ppo_agent  # noqa: F401  (the page lists "ppo" too)
from ding_lite.envs.aircombat import physics as P
from ding_lite.envs.aircombat.agents import AGENT_REGISTRY
from ding_lite.envs.aircombat.observe import OBS_DIM, observe_dim

PAGE = DOCS / "aircombat.rst"
ROW_NAME = re.compile(r"^   \* - ``([A-Z_0-9]+)``$")
ROW_VALUE = re.compile(r"^     - ([\d,.]+)(?: (.+))?$")


def region(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    begin, end = f"\n.. begin {name}\n", f"\n.. end {name}\n"
    assert text.count(begin) == 1 and text.count(end) == 1, f"markers of '{name}' missing"
    return text.split(begin, 1)[1].split(end, 1)[0]


def documented_constants() -> dict[str, float]:
    """``{name: value in SI units}`` of the constants table; degrees become radians."""
    lines = region("physics-constants").splitlines()
    constants = {}
    for i, line in enumerate(lines):
        name = ROW_NAME.match(line)
        if not name:
            continue
        value = ROW_VALUE.match(lines[i + 1])
        assert value, f"{name.group(1)}: no number in the value column: {lines[i + 1]!r}"
        number = float(value.group(1).replace(",", ""))
        unit = value.group(2) or ""
        constants[name.group(1)] = math.radians(number) if unit.startswith("deg") else number
    return constants


def test_constants_table_matches_physics():
    documented = documented_constants()
    in_code = {k: v for k, v in vars(P).items() if k.isupper() and isinstance(v, (int, float))}
    assert sorted(documented) == sorted(in_code), "the table must list every constant"
    for name, value in documented.items():
        # Values are printed to about 6 significant digits (the diagonal is rounded).
        assert math.isclose(value, in_code[name], rel_tol=1e-5), (name, value, in_code[name])


def test_observation_table_has_one_row_per_feature():
    indices = re.findall(r"^   \* - (\d+)$", region("observation-table"), flags=re.M)
    assert [int(i) for i in indices] == list(range(OBS_DIM))
    extra = re.findall(r"^   \* - (\d+)$", region("missile-table"), flags=re.M)
    assert [int(i) for i in extra] == list(range(OBS_DIM, observe_dim("stock")))


def test_opponents_are_the_registered_agents():
    names = re.findall(r"^``([a-z_]+)``", region("opponents"), flags=re.M)
    assert sorted(names) == sorted(AGENT_REGISTRY.names())


def test_experiment_fixes_the_throttle_as_stated():
    assert compile_config("aircombat_ppo").env.kwargs.throttle == 1.0


COMMANDS = re.findall(r"^    (ding-lite .+)$", PAGE.read_text(encoding="utf-8"), flags=re.M)


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_parse_and_their_overrides_compile(command):
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert args.command in ("serial", "eval", "render")
    overrides = getattr(args, "overrides", None)
    if overrides is None:  # eval and render: RUN_DIR and the overrides share the positionals
        overrides = [a for a in args.paths if "=" in a]
    # Without -c, eval reads the run dir's config.json; this page's run dirs are named after
    # their experiment (``ding-lite serial -c aircombat_ppo`` writes ./aircombat_ppo).
    compile_config(args.config or "aircombat_ppo", overrides)


def test_every_command_is_shown():
    assert {shlex.split(c)[1] for c in COMMANDS} == {"serial", "eval", "render"}
