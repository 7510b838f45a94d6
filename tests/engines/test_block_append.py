"""The block-aggregated near-list appends without a GPU (kernels.cuh SSSP_BLOCK_APPEND, issue 34):
the switch ``ENGINES_BLOCK_APPEND``, the module variant each engine's run loads, the refusal with
the "batched" push expansion (whose module they do not combine with), and the variants make
cuda-check compiles. The GPU side (the same bytes as the host reference) is
tests/gpu/test_block_append.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from engines import errors
from engines.sssp.plan import PUSH_EXPANSIONS
from engines.sssp.cuda import appends, chains, compile_check, fused, jumps, operators, passes, push, runtime

APPEND = appends.DEFINES
WIDE = passes.DEFINES
SOLO = ("SSSP_FUSED_SOLO",)


# the switch's spellings and the plain-push-only rule: test_wide_passes.py, for both variants
# (one mechanism, push.PlainPushVariant)


def test_the_define_is_a_known_variant_of_its_own():
    assert APPEND == ("SSSP_BLOCK_APPEND",) and appends.APPEND_ENV == "ENGINES_BLOCK_APPEND"
    assert set(APPEND) <= set(runtime.VARIANT_DEFINES)
    source = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert "#ifndef SSSP_BLOCK_APPEND\n#define SSSP_BLOCK_APPEND 0\n#endif" in source
    assert "SSSP_BLOCK_APPEND (SSSP_WIDE_PASSES" not in source  # no longer the wide module's


def test_the_appends_combine_with_the_other_variants_of_the_plain_push():
    assert appends.combines(SOLO) and appends.combines(WIDE)
    assert appends.combines(SOLO + WIDE + ("SSSP_FUSED_CAPTURED",))
    assert not appends.combines(("SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED"))


def test_with_appends_adds_the_twin_of_each_combinable_variant():
    assert appends.with_appends(((),)) == ((), APPEND)
    assert appends.with_appends(((), WIDE, ("SSSP_PUSH_BATCHED",))) == (
        (), APPEND, WIDE, runtime.variant_defines(WIDE + APPEND), ("SSSP_PUSH_BATCHED",))
    assert appends.with_appends(()) == ()


def test_the_engines_compile_the_appends_beside_every_plain_push_module():
    # fused: plain, wide, solo and solo + wide, each also with the appends; batched and
    # batched + solo without; each of those also as the captured update (test_fused_capture), and
    # each with the appends also with the chains (test_push_chain), every plain-push one also with
    # multi-hop pointer jumping (test_multi_hop_jump)
    uncaptured = tuple(v for v in fused.VARIANTS if "SSSP_FUSED_CAPTURED" not in v
                       and "SSSP_PUSH_CHAIN" not in v and "SSSP_MULTI_HOP_JUMP" not in v)
    plain = ((), WIDE, SOLO, SOLO + WIDE)
    assert uncaptured == tuple(runtime.variant_defines(v + extra) for v in plain
                               for extra in ((), APPEND)) + (
        ("SSSP_PUSH_BATCHED",), ("SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED"))
    assert tuple(v for v in operators.VARIANTS
                 if "SSSP_PUSH_CHAIN" not in v and "SSSP_MULTI_HOP_JUMP" not in v) == (
        (), APPEND, WIDE, runtime.variant_defines(WIDE + APPEND), ("SSSP_PUSH_BATCHED",))
    for variants in (fused.VARIANTS, operators.VARIANTS):
        assert len(set(variants)) == len(variants)
        assert all(runtime.variant_defines(v) == v for v in variants)
        assert not any(set(APPEND) <= set(v) and "SSSP_PUSH_BATCHED" in v for v in variants)
    cuda_dir = runtime.SOURCE_DIR
    assert compile_check.variants_of(cuda_dir / fused.SOURCE) == fused.CHECKED_VARIANTS
    assert compile_check.variants_of(cuda_dir / operators.SOURCE_FILE) == operators.VARIANTS
    assert compile_check.variants_of(Path("/elsewhere") / fused.SOURCE) == ((),)


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_a_run_loads_the_appends_variant_when_switched_on(monkeypatch, expansion):
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    monkeypatch.delenv(appends.APPEND_ENV, raising=False)
    for name in (fused.SOLO_ENV, passes.WIDE_ENV, chains.CHAIN_ENV, jumps.JUMP_ENV):  # off, whatever their defaults
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")  # the captured variant is tested on its own
    # unset: the batch size decides on the fused engine, every update has them on the operators
    # engine, and the default never applies to "batched"
    assert fused.run_defines(plan) == push.module_defines(expansion)  # compute(): no batch
    assert operators.run_defines(plan) == push.module_defines(expansion)
    for changes in (1, 100, appends.MIN_BATCH_CHANGES - 1, appends.MIN_BATCH_CHANGES, 50_000):
        batch_plan = SimpleNamespace(push_expansion=expansion, batch_changes=changes)
        plain = expansion == "batched"
        fused_on = changes >= appends.MIN_BATCH_CHANGES and not plain
        assert fused.run_defines(batch_plan) == push.module_defines(expansion) + (APPEND if fused_on else ()), changes
        assert operators.run_defines(batch_plan) == push.module_defines(expansion) + (() if plain else APPEND), changes
    batch_plan = SimpleNamespace(push_expansion=expansion, batch_changes=50_000)
    monkeypatch.setenv(appends.APPEND_ENV, "0")
    assert fused.run_defines(batch_plan) == push.module_defines(expansion)  # an explicit 0 wins
    assert fused.run_defines(plan) == push.module_defines(expansion)
    assert operators.run_defines(plan) == push.module_defines(expansion)
    assert fused.module_defines(plan, 0) == fused.module_defines(plan, 0, block_append=False)
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    if expansion == "batched":
        # refused before anything runs: run_defines is what both engines read first
        for run_defines in (fused.run_defines, operators.run_defines):
            with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
                run_defines(plan)
        return
    assert fused.run_defines(plan) == APPEND
    assert operators.run_defines(plan) == APPEND
    monkeypatch.setenv(passes.WIDE_ENV, "1")  # independent of the wide passes, and with them
    assert runtime.variant_defines(fused.run_defines(plan)) == runtime.variant_defines(WIDE + APPEND)
    assert runtime.variant_defines(operators.run_defines(plan)) == runtime.variant_defines(
        WIDE + APPEND)
    monkeypatch.setenv(passes.WIDE_ENV, "0")
    monkeypatch.setenv(fused.SOLO_ENV, "1024")
    assert fused.run_defines(plan) == APPEND + SOLO  # both engines' variants first (variants.defines)
    monkeypatch.delenv(fused.CAPTURE_ENV)
    assert runtime.variant_defines(fused.run_defines(plan)) in fused.VARIANTS
    for edges in (0, 512):
        for wide in (False, True):
            for captured in (False, True):
                for block_append in (False, True):
                    defines = fused.module_defines(plan, edges, wide, captured, block_append)
                    assert runtime.variant_defines(defines) in fused.VARIANTS
    assert runtime.variant_defines(operators.run_defines(plan)) in operators.VARIANTS


def test_the_default_kernels_do_not_see_the_variant():
    """Every change of the appends sits under #if SSSP_BLOCK_APPEND, defined 0 unless the variant
    is: the default modules compile from the same tokens as without it (make cuda-check reports
    their registers)."""
    header = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert header.count("#if SSSP_BLOCK_APPEND\n") >= 4
    code = runtime.variant_code(runtime.read_source(fused.SOURCE), ())
    assert "#define SSSP_BLOCK_APPEND 1" not in code
    assert runtime.variant_code("", APPEND) == "#define SSSP_BLOCK_APPEND 1\n"
    assert runtime.variant_code("", WIDE) == "#define SSSP_WIDE_PASSES 1\n"


def test_an_update_plans_with_its_batch_size_and_compute_with_none(monkeypatch):
    """The appends' default reads Plan.batch_changes: update() sets it to the batch's changes
    (every insertion and deletion), compute() leaves it 0. Checked on the host engine, which builds
    the same plan before its commit."""
    import numpy as np

    import engines
    from engines.sssp import api

    plans, plan_class = [], api.Plan

    def recording_plan(**fields):
        plans.append(plan_class(**fields))
        return plans[-1]

    monkeypatch.setattr(api, "Plan", recording_plan)
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 4])
    graph = engines.Graph.from_edges(src, dst, np.array([1, 2, 3, 4]), num_vertices=6)
    result = engines.sssp.compute(graph, 0, backend="host")
    assert [p.batch_changes for p in plans] == [0]
    batch = engines.Batch(insert_src=np.array([4, 0, 5]), insert_dst=np.array([5, 5, 1]),
                          insert_weights=np.array([1, 9, 1]), delete_src=np.array([2]),
                          delete_dst=np.array([3]))
    engines.sssp.update(graph, batch, result)
    assert [p.batch_changes for p in plans] == [0, 4]
