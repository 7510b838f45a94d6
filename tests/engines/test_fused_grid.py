"""The fused engine's grid rule (engines/sssp/cuda/fused.py ``work_blocks``, ``grid_rule``): pure
host arithmetic, checked here without a GPU; tests/gpu/test_fused.py runs both rules on one."""

from __future__ import annotations

import pytest

from engines import errors
from engines.sssp.cuda import fused

H200_SMS, H200_CO_RESIDENT = 132, 1056  # an H200's multiprocessors, the fused kernel's full grid


@pytest.mark.parametrize("n, blocks", [
    (1, H200_SMS),                 # never fewer blocks than multiprocessors
    (4039, H200_SMS),
    (114_599, H200_SMS),           # luxembourg_osm: 56 blocks' worth of vertices
    (132 * 2048, H200_SMS),        # exactly one block's vertices per multiprocessor
    (132 * 2048 + 1, H200_SMS + 1),
    (1_090_920, 533),              # roadNet-PA: ceil(n / 2048)
    (24_000_000, H200_CO_RESIDENT),  # road_usa: every co-resident block
])
def test_work_blocks(n, blocks):
    assert fused.work_blocks(n, H200_CO_RESIDENT, H200_SMS) == blocks


def test_work_blocks_never_exceeds_the_co_resident_grid():
    assert fused.work_blocks(10**6, 64, 132) == 64  # a kernel that fits fewer blocks than SMs
    assert fused.work_blocks(10**9, 1, 1) == 1


def test_grid_rule_reads_the_environment(monkeypatch):
    monkeypatch.delenv(fused.GRID_ENV, raising=False)
    assert fused.grid_rule() == "work"
    monkeypatch.setenv(fused.GRID_ENV, "device")
    assert fused.grid_rule() == "device"
    monkeypatch.setenv(fused.GRID_ENV, "whole")
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_FUSED_GRID='whole': expected one of work, device"):
        fused.grid_rule()


def test_a_grid_is_worked_out_once_per_module_and_setting(monkeypatch):
    """A steady stream asks for the same grid every update: the occupancy and the switches are
    worked out once per module, kernel, types, vertex count and switch values."""
    from types import SimpleNamespace

    from engines import errors
    from engines.sssp.cuda import fused, runtime

    asked = []
    monkeypatch.setattr(runtime, "cooperative_grid", lambda *args: asked.append(args) or 528)
    monkeypatch.setattr(runtime, "device_info", lambda device: SimpleNamespace(multiprocessors=132))
    monkeypatch.delenv(fused.GRID_ENV, raising=False)
    monkeypatch.delenv(fused.MAX_BLOCKS_ENV, raising=False)
    module = SimpleNamespace(device=0)
    for _ in range(3):
        assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6) == 489
    assert len(asked) == 1
    assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**4) == 132  # another n
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "7")  # another setting
    assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6) == 7
    other = SimpleNamespace(device=0)  # another module: never answered from the first one's
    monkeypatch.setattr(runtime, "cooperative_grid", lambda *args: asked.append(args) or 5)
    assert fused.grid_blocks(other, "fused_update", "int32", "int32", 10**6) == 5
    assert len(asked) == 4
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "many")  # a refusal is never kept
    for _ in range(2):
        with pytest.raises(errors.InvalidArgumentError, match=fused.MAX_BLOCKS_ENV):
            fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6)
