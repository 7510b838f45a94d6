"""Multi-hop pointer jumping without a GPU (kernels.cuh SSSP_MULTI_HOP_JUMP, issues 27, 34): the
module variant each engine's run loads with ``ENGINES_MULTI_HOP_JUMP`` and without it, beside the
other plain-push variants, and the variants make cuda-check compiles. The switch's spellings and
its refusal with the "batched" expansion are the plain-push variants' shared tests
(tests/engines/test_wide_passes.py); the GPU side is tests/gpu/test_multi_hop_jump.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engines import errors
from engines.sssp.cuda import appends, chains, fused, jumps, operators, passes, runtime

JUMP = jumps.DEFINES


def _plan(expansion="group", changes=100):
    return SimpleNamespace(push_expansion=expansion, batch_changes=changes)


@pytest.mark.parametrize("engine", [fused, operators])
@pytest.mark.parametrize("changes", [100, 10 ** 6])
def test_the_run_loads_the_jump_module_only_with_the_switch(monkeypatch, engine, changes):
    for name in (passes.WIDE_ENV, appends.APPEND_ENV, chains.CHAIN_ENV, jumps.JUMP_ENV):
        monkeypatch.delenv(name, raising=False)  # the other variants at their defaults
    monkeypatch.setattr(jumps, "DEFAULT_ON", False)  # the large batches' default: its own test
    plain = runtime.variant_defines(engine.run_defines(_plan(changes=changes)))
    assert not set(JUMP) & set(plain)
    monkeypatch.setenv(jumps.JUMP_ENV, "1")
    hopping = runtime.variant_defines(engine.run_defines(_plan(changes=changes)))
    assert hopping == runtime.variant_defines(plain + JUMP)  # the same module otherwise
    assert plain in engine.VARIANTS and hopping in engine.VARIANTS  # both compile-checked


def test_every_plain_push_module_has_its_jump_twin():
    for variants in (fused.VARIANTS, operators.VARIANTS):
        without = [v for v in variants if "SSSP_MULTI_HOP_JUMP" not in v]
        twins = [v for v in variants if "SSSP_MULTI_HOP_JUMP" in v]
        assert sorted(twins) == sorted(runtime.variant_defines(v + JUMP) for v in without
                                       if "SSSP_PUSH_BATCHED" not in v)
        assert len(set(variants)) == len(variants)
    assert "SSSP_MULTI_HOP_JUMP" in runtime.VARIANT_DEFINES


@pytest.mark.parametrize("engine", [fused, operators])
def test_the_batched_expansion_refuses_it(monkeypatch, engine):
    for name in (passes.WIDE_ENV, appends.APPEND_ENV, chains.CHAIN_ENV):  # no other refusal first
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv(jumps.JUMP_ENV, "1")
    with pytest.raises(errors.InvalidArgumentError, match=jumps.JUMP_ENV):
        engine.run_defines(_plan("batched"))


@pytest.mark.parametrize("engine", [fused, operators])
def test_the_default_by_batch_size(monkeypatch, engine):
    """Unset, the switch follows jumps.DEFAULT_ON for updates of at least MIN_BATCH_CHANGES
    changes only: never for smaller ones, compute() (0 changes) or "batched"; an explicit value
    wins."""
    for name in (passes.WIDE_ENV, appends.APPEND_ENV, chains.CHAIN_ENV, jumps.JUMP_ENV):
        monkeypatch.delenv(name, raising=False)
    big, small = jumps.MIN_BATCH_CHANGES, jumps.MIN_BATCH_CHANGES - 1

    def hops(changes, expansion="group"):
        return bool(set(JUMP) & set(engine.run_defines(_plan(expansion, changes))))

    monkeypatch.setattr(jumps, "DEFAULT_ON", False)
    assert not hops(big) and not hops(small)
    monkeypatch.setattr(jumps, "DEFAULT_ON", True)
    assert hops(big) and hops(10 ** 6)
    assert not hops(small) and not hops(0)
    assert not hops(big, "batched")  # the default never turns a run into the refusal
    monkeypatch.setenv(jumps.JUMP_ENV, "0")
    assert not hops(big)
    monkeypatch.setenv(jumps.JUMP_ENV, "1")
    assert hops(small)
