"""The fused engine's solo push without a GPU (fused.cu solo_push, issue 34): the switch
``ENGINES_FUSED_SOLO``, the longest list a solo stretch takes, the module variant a run loads, the
grid barriers a run with solo stretches counts, and the variants make cuda-check compiles.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.graph import device_apply
from engines.sssp.plan import PUSH_EXPANSIONS
from engines.sssp.cuda import compile_check, fused, operators, push, runtime, workspace

from tests.switch_env import set_switch


@pytest.mark.parametrize("text, edges", [(None, fused.SOLO_DEFAULT), ("", fused.SOLO_DEFAULT), ("0", 0), ("off", 0),
                                         (" OFF ", 0), ("1", 1), ("1024", 1024), (" 4096 ", 4096)])
def test_solo_edges_reads_the_switch(monkeypatch, text, edges):
    set_switch(monkeypatch, fused.SOLO_ENV, text)
    assert fused.solo_edges() == edges


@pytest.mark.parametrize("text", ["-1", "many", "1.5", "on"])
def test_a_bad_switch_is_an_error_naming_it(monkeypatch, text):
    monkeypatch.setenv(fused.SOLO_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=fused.SOLO_ENV):
        fused.solo_edges()


def test_solo_limit_is_the_edge_budget_over_the_mean_degree():
    # a road-like graph: 114,599 vertices, 239,332 arcs (mean out-degree about 2.09)
    assert fused.solo_limit(114_599, 239_332, 1024) == 1024 * 114_599 // 239_332 == 490
    assert fused.solo_limit(4039, 176_000, 1024) == 23  # a dense graph: few vertices per stretch
    assert fused.solo_limit(10, 20, 0) == 0  # off
    assert fused.solo_limit(0, 0, 1024) == 0  # nothing to push
    assert fused.solo_limit(1000, 10**9, 1) == 1  # at least one vertex
    assert fused.solo_limit(1000, 10, 10**9) == 1000  # at most every vertex
    assert fused.solo_limit(1000, 0, 5) == 1000  # no edges: the mean degree is taken as <= 1


def test_the_run_loads_the_variant_of_its_expansion_and_switch():
    group, batched = SimpleNamespace(push_expansion="group", batch_changes=0), SimpleNamespace(push_expansion="batched", batch_changes=0)
    assert fused.module_defines(group, 0) == ()
    assert fused.module_defines(group, 512) == ("SSSP_FUSED_SOLO",)
    assert fused.module_defines(batched, 0) == ("SSSP_PUSH_BATCHED",)
    assert runtime.variant_defines(fused.module_defines(batched, 512)) in fused.VARIANTS
    for plan in (group, batched):
        for edges in (0, 512):
            assert runtime.variant_defines(fused.module_defines(plan, edges)) in fused.VARIANTS
        assert operators.run_defines(plan) in operators.VARIANTS


def _record(**values):
    record = np.zeros((), dtype=workspace.fused_control_dtype(np.int32))
    for name, value in values.items():
        record[name] = value
    return record


def test_grid_syncs_count_one_barrier_per_solo_stretch():
    plain = _record(rounds=3, iterations=10, epochs=1)
    assert fused.grid_syncs(plain, update=True, packed=True) == 6 + 3 + 10 + 2
    # 7 of the 10 iterations in 2 stretches: 3 grid iterations, 2 stretch barriers
    solo = _record(rounds=3, iterations=10, epochs=1, solo_runs=2, solo_iterations=7)
    assert fused.grid_syncs(solo, update=True, packed=True) == 6 + 3 + 3 + 2 + 2
    assert fused.grid_syncs(solo, update=True, packed=False) == 6 + 3 + 3 + 2 + 2 + 2
    assert fused.grid_syncs(solo, update=False, packed=True) == 1 + 3 + 2 + 2
    every = _record(iterations=40, solo_runs=1, solo_iterations=40)  # one stretch did everything
    assert fused.grid_syncs(every, update=False, packed=True) == 1 + 1


def test_cuda_check_compiles_every_variant_of_each_engine():
    cuda_dir = runtime.SOURCE_DIR
    assert compile_check.variants_of(cuda_dir / fused.SOURCE) == fused.CHECKED_VARIANTS
    assert compile_check.variants_of(cuda_dir / operators.SOURCE_FILE) == operators.VARIANTS
    assert compile_check.variants_of(Path(device_apply.SOURCE)) == ((),)
    assert Path(device_apply.SOURCE) in compile_check.checked_sources()
    assert compile_check.variants_of(Path("/elsewhere") / fused.SOURCE) == ((),)  # not an engine's


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_the_kernels_get_the_shift_cap_of_the_expansion(expansion):
    """fused._scalars, the arguments both fused kernels take, without a GPU (a name it calls that
    no longer exists would otherwise wait for a device to fail)."""
    plan = SimpleNamespace(num_vertices=5, source=0, device_delta=10, push_expansion=expansion, batch_changes=0,
                           packing=SimpleNamespace(bits=3, no_parent=7, bound=100))
    scalars = fused._scalars(plan, np.int32, (0, 4))  # no chains (test_push_chain)
    assert scalars[6] == push.max_shift(expansion) and scalars[6].dtype == np.uint32
    assert scalars[0] == 5 and scalars[0].dtype == np.int32 and scalars[-1] is np.int32
