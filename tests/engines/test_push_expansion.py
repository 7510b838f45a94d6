"""The push expansion (docs/algorithm.md §5.12, §5.9 (c); issue 26) without a GPU: the width rule of
engines/sssp/cuda/push.py, the same rule as the header's push_group_shift (a host program compiled
with nvcc calls the device function), the option and how it reaches the engines' plan.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engines import errors, sssp
from engines.sssp.cuda import push, runtime
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION, PUSH_EXPANSIONS

from .test_errors import small_graph

CUDA_DIR = Path(__file__).resolve().parents[2] / "engines" / "sssp" / "cuda"
H200_THREADS = 132 * 4 * 256  # an H200's cooperative grid: 132 SMs, 4 blocks of 256 threads


def _widest(count, threads, cap):
    """The rule by enumeration: the largest w = 2^s, s <= cap, with count * w <= threads."""
    fits = [s for s in range(cap + 1) if count * 2**s <= threads]
    return max(fits) if fits else 0


@pytest.mark.parametrize("cap", range(push.MAX_GROUP_SHIFT + 1))
def test_group_shift_is_the_widest_group_that_fits(cap):
    for count, threads in itertools.product([0, 1, 2, 3, 31, 32, 33, 858, 4224, 4225, 10**5, 10**7],
                                            [1, 32, 256, 4096, H200_THREADS]):
        assert push.group_shift(count, threads, cap) == _widest(count, threads, cap), (count, threads)


def test_group_shift_at_its_edges():
    cap = push.max_shift("group")
    assert cap == push.MAX_GROUP_SHIFT == 5
    assert push.group_shift(1, H200_THREADS, cap) == 5  # a lone vertex: a whole warp
    assert push.group_shift(H200_THREADS // 32, H200_THREADS, cap) == 5
    assert push.group_shift(H200_THREADS // 32 + 1, H200_THREADS, cap) == 4
    assert push.group_shift(H200_THREADS, H200_THREADS, cap) == 0  # the list fills the grid
    assert push.group_shift(10 * H200_THREADS, H200_THREADS, cap) == 0
    assert push.max_shift("vertex") == 0
    assert all(push.group_shift(c, H200_THREADS, 0) == 0 for c in (1, 100, 10**6))


def test_launch_threads_give_each_vertex_its_group():
    cap = push.max_shift("group")
    assert push.launch_threads(100, H200_THREADS, cap) == 3200
    assert push.launch_threads(100, H200_THREADS, 0) == 100
    assert push.launch_threads(10**6, H200_THREADS, cap) == 10**6  # capped grid: one lane each
    assert push.launch_threads(0, H200_THREADS, cap) == 0


def test_bad_width_arguments_raise():
    with pytest.raises(ValueError, match="unknown push expansion 'warp'"):
        push.max_shift("warp")
    for args in ((-1, 10, 5), (1, 0, 5), (1, 10, 6), (1, 10, -1)):
        with pytest.raises(ValueError):
            push.group_shift(*args)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_header_rule_is_the_python_rule(tmp_path):
    """kernels.cuh push_group_shift, called on the host, against push.group_shift."""
    cases = [(c, t, s) for c in (0, 1, 7, 32, 33, 1000, 4224, 4225, 135168, 10**7)
             for t in (32, 256, 135168) for s in (0, 3, 5)]
    body = "\n".join(f'  std::printf("%u\\n", sssp::push_group_shift({c}LL, {t}LL, {s}u));'
                     for c, t, s in cases)
    src = tmp_path / "width.cu"
    src.write_text(f'#include <cstdio>\n#include "kernels.cuh"\nint main() {{\n{body}\n  return 0;\n}}\n')
    exe = tmp_path / "width"
    build = subprocess.run(["nvcc", "-std=c++17", f"-I{CUDA_DIR}", "-o", str(exe), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = [int(x) for x in run.stdout.split()]
    assert got == [push.group_shift(c, t, s) for c, t, s in cases]


def test_push_expansion_is_an_option_of_every_result():
    assert sssp.Options().push_expansion == DEFAULT_PUSH_EXPANSION in PUSH_EXPANSIONS
    g = small_graph()
    r = sssp.compute(g, 0, push_expansion="group")  # the host engine ignores it
    assert r.options.push_expansion == "group"
    plain = sssp.compute(g, 0)
    assert r.to_numpy()[0].tolist() == plain.to_numpy()[0].tolist()
    r.set_options(push_expansion="vertex")
    assert r.options.push_expansion == "vertex"
    with pytest.raises(errors.InvalidArgumentError, match="push_expansion must be one of vertex, group"):
        r.set_options(push_expansion="warp")
    assert r.options.push_expansion == "vertex"  # a rejected option changes nothing
    with pytest.raises(errors.InvalidArgumentError, match="push_expansion"):
        sssp.compute(g, 0, push_expansion=None)


def test_the_option_reaches_the_plan_of_an_update(monkeypatch):
    """update() hands the result's push expansion to the engine in its Plan (the CUDA engines
    read it there; the host engine is observed here, it runs the same dispatch)."""
    from engines.sssp import host

    seen = []
    real = host.update

    def spy(graph, d, p, plan, changes, **engine_args):
        seen.append(plan.push_expansion)
        return real(graph, d, p, plan, changes, **engine_args)

    monkeypatch.setattr(host, "update", spy)
    g = small_graph()
    r = sssp.compute(g, 0, push_expansion="group")
    import engines

    sssp.update(g, engines.Batch.empty(), r)
    assert seen == ["group"]


def test_profile_from_log_median_and_an_incomplete_log():
    log = np.array([5, 1, 9, 3, 0, 0], dtype=np.int32)  # a longer buffer than the run's log
    p = push.profile_from_log(4, log)
    assert p.iterations == 4 and p.complete and p.near_lengths.tolist() == [5, 1, 9, 3]
    assert p.median == 4.0
    assert push.profile_from_log(0, log).median is None  # no push iteration, no median
    full = np.ones(push.NEAR_LOG_CAPACITY, dtype=np.int32)
    over = push.profile_from_log(push.NEAR_LOG_CAPACITY + 5, full)
    assert not over.complete and over.median is None  # an exact median needs every length
    assert len(over.near_lengths) == push.NEAR_LOG_CAPACITY


def test_log_capacity_is_the_headers():
    header = (CUDA_DIR / "kernels.cuh").read_text()
    assert f"#define SSSP_NEAR_LOG_CAPACITY {push.NEAR_LOG_CAPACITY}\n" in header
    assert f"#define SSSP_PUSH_GROUP_SHIFT {push.MAX_GROUP_SHIFT}\n" in header
    assert f"#define SSSP_PUSH_EDGE_BATCH {push.EDGE_BATCH}\n" in header
    # the variants' defaults: a module compiled without a define is the plain one
    for define in runtime.VARIANT_DEFINES:
        assert f"#ifndef {define}\n#define {define} 0\n#endif\n" in header


def test_module_defines_put_only_batched_in_its_own_variant():
    assert push.module_defines("vertex") == push.module_defines("group") == ()
    assert push.module_defines("batched") == ("SSSP_PUSH_BATCHED",)
    for expansion in PUSH_EXPANSIONS:
        assert set(push.module_defines(expansion)) <= set(runtime.VARIANT_DEFINES)
    with pytest.raises(ValueError, match="unknown push expansion"):
        push.module_defines("warp")


def test_variant_code_defines_ahead_of_the_source():
    assert runtime.variant_code("body", ()) == "body"
    both = runtime.variant_code("body", ["SSSP_PUSH_BATCHED", "SSSP_FUSED_SOLO", "SSSP_FUSED_SOLO"])
    assert both == "#define SSSP_FUSED_SOLO 1\n#define SSSP_PUSH_BATCHED 1\nbody"  # sorted, once
    assert runtime.variant_defines(["SSSP_PUSH_BATCHED", "SSSP_FUSED_SOLO"]) == (
        "SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED")
    with pytest.raises(ValueError, match="unknown module variant SSSP_NOPE"):
        runtime.variant_code("body", ["SSSP_NOPE"])


def test_every_engine_variant_is_a_set_of_known_defines():
    from engines.sssp.cuda import fused, operators

    for variants in (fused.VARIANTS, operators.VARIANTS):
        assert () in variants  # the default module
        for defines in variants:
            assert runtime.variant_defines(defines) == tuple(defines)
    for expansion in PUSH_EXPANSIONS:  # every expansion's module is compiled by make cuda-check
        assert push.module_defines(expansion) in operators.VARIANTS
        assert push.module_defines(expansion) in fused.VARIANTS


def test_host_results_have_no_grid_syncs_and_no_push_profile():
    from engines.sssp import cuda

    r = sssp.compute(small_graph(), 0)
    assert r.stats.grid_syncs is None
    with pytest.raises(errors.InvalidArgumentError, match="CUDA result"):
        cuda.push_profile(r)
