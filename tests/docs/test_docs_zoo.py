"""Keeps docs/zoo.rst in step with the zoo: its task table and each experiment's table of
the keys it changes from the base."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from helpers import key_value_rows, marked_region

from ding_lite.config import EXPERIMENTS
from ding_lite.config.zoo import ZOO_BASE, zoo_changes, zoo_row

ZOO = [name for name in EXPERIMENTS if name.startswith("zoo_")]


def leaves(tree: Mapping, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def same_table(documented: dict, expected: dict) -> None:
    assert set(documented) == set(expected), (
        f"missing {sorted(set(expected) - set(documented))}, "
        f"stale {sorted(set(documented) - set(expected))}"
    )
    wrong = {
        k: (documented[k], v)
        for k, v in expected.items()
        if type(documented[k]) is not type(v) or documented[k] != v
    }
    assert not wrong, f"documented value != code value (doc, code): {wrong}"


def test_the_base_table():
    same_table(key_value_rows("zoo.rst", "zoo base"), dict(leaves(ZOO_BASE)))


@pytest.mark.parametrize("name", ZOO)
def test_each_experiment_table_lists_its_changes(name):
    same_table(key_value_rows("zoo.rst", f"zoo {name}"), dict(leaves(zoo_changes(name))))


def test_the_task_table():
    rows = re.findall(
        r"^``(zoo_[a-z_0-9]+)``\s+(\S+)\s+([\d,]+)\s+(-?[\d.]+) \((\S+)\)$",
        marked_region("zoo.rst", "zoo-tasks"),
        flags=re.M,
    )
    assert [r[0] for r in rows] == ZOO
    for name, task, budget, figure, version in rows:
        row = zoo_row(name)
        assert (task, int(budget.replace(",", "")), float(figure), version) == (
            row.task,
            row.budget,
            row.rl_zoo,
            row.rl_zoo_task,
        )
