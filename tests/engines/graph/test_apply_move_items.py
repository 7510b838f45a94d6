"""The device apply's entries per thread in apply_move (``ENGINES_APPLY_MOVE_ITEMS``,
device_apply.cu SSSP_MOVE_ITEMS) without a GPU: the switch's reading (one unless set; a bad value
named), the plan (both sides' move takes it as its last argument, its grid sized for that many
entries a thread) and the captured commit's plan key. The bytes are checked on the GPU
(tests/gpu/test_apply_move_items.py)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines import errors
from engines.graph import device_apply

from tests.switch_env import set_switch

from .test_apply_sides import _planned


@pytest.mark.parametrize("text, items", [(None, 1), ("", 1), ("1", 1), ("4", 4), (" 4 ", 4)])
def test_the_switch(monkeypatch, text, items):
    set_switch(monkeypatch, device_apply.MOVE_ITEMS_ENV, text)
    assert device_apply.move_items() == items


@pytest.mark.parametrize("text", ["2", "8", "0", "four", "-1"])
def test_a_bad_value_is_named(monkeypatch, text):
    monkeypatch.setenv(device_apply.MOVE_ITEMS_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=f"{device_apply.MOVE_ITEMS_ENV}=.*one of 1, 4"):
        device_apply.move_items()


def test_the_kernels_items_are_the_hosts():
    source = Path(device_apply.SOURCE).read_text()
    assert re.search(r"#define SSSP_MOVE_ITEMS (\d+)", source).group(1) == device_apply.MOVE_ITEMS[-1]


@pytest.mark.parametrize("text, items", [(None, 1), ("4", 4)])
@pytest.mark.parametrize("parallel", [False, True])
def test_both_sides_moves_take_it(monkeypatch, text, items, parallel):
    """A captured plan on a graph of 20 arc slots: each side's apply_move takes ``items`` last and
    its grid covers ceil(20 / items) threads (operators_blocks here returns the work)."""
    set_switch(monkeypatch, device_apply.MOVE_ITEMS_ENV, text)
    _, steps = _planned(monkeypatch, parallel, touched=False, blocks=lambda work, device: work)
    moves = [step for step in steps if isinstance(step, tuple) and step[0] == "kernel" and step[1] == "apply_move"]
    assert len(moves) == 2
    for step in moves:
        assert int(step[3][-1]) == items and step[2] == -(-20 // items)


def test_a_captured_commit_is_planned_again_for_another_count(monkeypatch):
    cur = SimpleNamespace(serial=1, num_vertices=10, num_edges=20)
    target = SimpleNamespace(serial=2)
    scratch = SimpleNamespace(layout=3, arena=SimpleNamespace(serial=4))
    keys = []
    for text in ("1", "4", "1"):
        monkeypatch.setenv(device_apply.MOVE_ITEMS_ENV, text)
        keys.append(device_apply._plan_key(cur, target, 10, scratch))
    assert keys[0] == keys[2] != keys[1]
