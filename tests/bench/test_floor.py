"""bench/floor.py on the CPU: the floor model's arithmetic with given constants and fake stats, the
pieces of the measurement that need no device (the slope, the chase permutation, the profiler
refusal), the micro-benchmark's source (compiled as the engines' are, by make cuda-check), and the
engine table's floor columns."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from bench import engine_table as et
from bench import floor

H200ISH = floor.FloorConstants(barrier_us=1.8, chain_us=2.7, blocks=528, device_name="GPU", phase_us=4.4)


@dataclass(frozen=True)
class FakeStats:
    grid_syncs: int | None


def test_floor_is_grid_syncs_times_barrier_plus_chain():
    assert H200ISH.per_sync_us == pytest.approx(4.5)
    # the numbers: roadNet-PA safe50k 106 grid syncs, road_usa local10k about 2,617
    assert floor.floor_ms(106, H200ISH) == pytest.approx(0.477)
    assert floor.floor_ms(2617, H200ISH) == pytest.approx(11.7765)
    assert floor.floor_ms(0, H200ISH) == 0.0
    assert floor.floor_ms(None, H200ISH) is None and floor.floor_ms(106, None) is None
    other = floor.FloorConstants(barrier_us=1.0, chain_us=0.5, blocks=132)
    assert floor.floor_ms(1000, other) == pytest.approx(1.5)


def test_floor_from_stats():
    assert floor.stats_floor_ms(FakeStats(200), H200ISH) == pytest.approx(0.9)
    assert floor.stats_floor_ms(FakeStats(None), H200ISH) is None  # operators, host
    assert floor.stats_floor_ms(object(), H200ISH) is None  # no grid_syncs at all
    assert floor.stats_floor_ms(FakeStats(200), None) is None


def test_over_floor():
    assert floor.over_floor(2.4, 0.48) == pytest.approx(5.0)
    assert floor.over_floor(None, 0.48) is None
    assert floor.over_floor(2.4, None) is None and floor.over_floor(2.4, 0.0) is None


def test_per_phase_us_is_the_slope_between_two_phase_counts():
    # launch 10 us + 2 us a phase: 128 phases 0.266 ms, 1152 phases 2.314 ms
    low = (10 + 2 * floor.PHASES_LOW) / 1e3
    high = (10 + 2 * floor.PHASES_HIGH) / 1e3
    assert floor.per_phase_us(low, high) == pytest.approx(2.0)
    assert floor.per_phase_us(1.0, 3.0, 0, 1000) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        floor.per_phase_us(1.0, 2.0, 10, 10)


def test_constants_describe_and_round_trip():
    line = H200ISH.describe()
    assert line == ("floor constants (GPU, 528 blocks): barrier 1.80 µs + chain of 4 loads and an atomic "
                    "2.70 µs = 4.50 µs a grid sync (together: 4.40 µs)")
    record = H200ISH.to_dict()
    assert record["per_sync_us"] == pytest.approx(4.5) and record["blocks"] == 528
    assert floor.FloorConstants.from_dict(record) == H200ISH
    bare = floor.FloorConstants(barrier_us=1.0, chain_us=2.0, blocks=132)
    assert bare.describe() == ("floor constants (132 blocks): barrier 1.00 µs + chain of 4 loads and an atomic "
                               "2.00 µs = 3.00 µs a grid sync")


def test_chase_permutation_is_one_cycle_through_every_entry():
    nxt = floor.chase_permutation(1000, seed=5)
    assert nxt.dtype == np.int32 and sorted(nxt.tolist()) == list(range(1000))
    seen, at = set(), 0
    for _ in range(1000):
        seen.add(at)
        at = int(nxt[at])
    assert at == 0 and len(seen) == 1000  # back at the start after exactly every entry
    assert np.array_equal(nxt, floor.chase_permutation(1000, seed=5))
    assert floor.chase_permutation().size == floor.CHASE_ENTRIES


@pytest.mark.parametrize("environ,needle", [
    ({"CUDA_INJECTION64_PATH": "/opt/nsight/libToolsInjection64.so"}, "CUDA_INJECTION64_PATH"),
    ({"NVTX_INJECTION64_PATH": "/x/libnvtx.so"}, "NVTX_INJECTION64_PATH"),
    ({"LD_PRELOAD": "/usr/lib/libcompute-sanitizer.so"}, "sanitizer"),
])
def test_profiler_attached_sees_the_tools(environ, needle):
    assert needle in floor.profiler_attached(environ)


def test_no_profiler_in_a_plain_environment():
    assert floor.profiler_attached({"PATH": "/usr/bin", "LD_PRELOAD": "", "CUDA_INJECTION64_PATH": ""}) is None


def test_measure_refuses_with_a_profiler_attached_before_touching_the_device(monkeypatch):
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so")
    monkeypatch.setattr(floor, "load_module", lambda device: pytest.fail("loaded the module"))
    with pytest.raises(floor.FloorError, match="profiler attached"):
        floor.measure(0, 132)


# -- the micro-benchmark's source ---------------------------------------------------------------------
def test_source_is_checked_by_cuda_check_and_loads_like_an_engine_source():
    from engines.sssp.cuda import compile_check, runtime

    assert floor.SOURCE.name == "floor.cu" and floor.SOURCE.parent == Path(floor.__file__).resolve().parent
    assert floor.SOURCE in compile_check.checked_sources()
    assert set(compile_check.sources()) <= set(compile_check.checked_sources())
    code = runtime.read_source(str(floor.SOURCE))  # what get_module hands NVRTC
    assert (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text() in code
    assert compile_check.template_kernels(code) == [floor.KERNEL]
    for line in floor.SOURCE.read_text().splitlines():  # NVRTC: no host standard headers
        if line.strip().startswith("#include"):
            assert line.strip() in ('#include "kernels.cuh"', "#include <cooperative_groups.h>"), line


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_source_compiles_for_sm_90_without_spills(tmp_path):
    from engines.sssp.cuda import compile_check

    rc, log, reports = compile_check.compile_source(floor.SOURCE, shutil.which("nvcc"), tmp_path)
    assert rc == 0, log
    assert sorted(r.name for r in reports) == ["floor_phases<int, int>", "floor_phases<int, long long>"]
    assert not any(r.spills for r in reports), log


# -- the engine table's columns -----------------------------------------------------------------------
def test_engine_table_floor_columns_use_the_measured_constants():
    cols = et.floor_columns({"grid_syncs": 100, "compute_grid_syncs": 50, "device_ms": 0.9,
                             "compute_ms": 0.45}, {"device_ms": 1.8}, H200ISH)
    assert cols["floor_ms"] == pytest.approx(0.45)
    assert cols["fused_over_floor"] == pytest.approx(2.0)
    assert cols["operators_over_floor"] == pytest.approx(4.0)
    assert cols["compute_floor_ms"] == pytest.approx(0.225)
    assert cols["compute_over_floor"] == pytest.approx(2.0)
    unmeasured = et.floor_columns({"grid_syncs": 100, "device_ms": 0.9}, {"device_ms": 1.8}, None)
    assert all(v is None for v in unmeasured.values())


def test_no_floor_option_measures_nothing(monkeypatch):
    monkeypatch.setattr(floor, "measure", lambda **kw: pytest.fail("measured"))
    args = et.build_parser().parse_args(["--no-floor"])
    assert et.floor_constants(object(), args) is None
    assert et.build_parser().parse_args([]).no_floor is False


def test_engine_table_measures_once_per_grid_and_survives_a_refusal(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(et, "_floor_cache", {})
    monkeypatch.setattr(floor, "engine_grid", lambda graph: graph)

    def measure(*, blocks):
        calls.append(blocks)
        if blocks == 7:
            raise floor.FloorError("the floor constants are not measured with a profiler attached: X")
        return floor.FloorConstants(barrier_us=1.0, chain_us=2.0, blocks=blocks)

    monkeypatch.setattr(floor, "measure", measure)
    args = et.build_parser().parse_args([])
    assert et.floor_constants(132, args).blocks == 132
    assert et.floor_constants(132, args).blocks == 132
    assert et.floor_constants(7, args) is None and et.floor_constants(7, args) is None
    assert calls == [132, 7]
    out = capsys.readouterr()
    assert "floor constants (132 blocks)" in out.out and "no floor column" in out.err


def _row(constants):
    fused = {"device_ms": 0.9, "host_ms": 1.0, "whole_ms": 1.2, "whole_minus_engine_ms": 0.3,
             "whole_over_engine": 1.33, "compute_ms": 0.45, "iterations": 84, "epochs": 3, "host_syncs": 1,
             "sync_budget": 1, "grid_syncs": 100, "compute_grid_syncs": 50, "near_median": 874.0,
             "us_per_iteration": 10.7}
    ops = dict(fused, device_ms=1.8, host_ms=2.0, host_syncs=40, sync_budget=90, grid_syncs=None)
    row = {"graph": "roadNet-PA", "batch": "safe50k", "fused": fused, "operators": ops,
           "identical": True, "identical_counters": True,
           "floor_constants": None if constants is None else constants.to_dict()}
    row.update(et.floor_columns(fused, ops, constants))
    return row


def test_markdown_shows_the_floor_beside_the_fused_time():
    text = et.markdown([_row(H200ISH)])
    header, _, line = text.splitlines()[:3]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[2:5] == ["fused ms (dev / host)", "floor ms", "fused / floor"]
    values = [c.strip() for c in line.strip("|").split("|")]
    assert values[2:5] == ["0.90 / 1.00", "0.450", "2.0"]
    assert len(cells) == len(values) == len(text.splitlines()[1].strip("|").split("|"))
    assert et.floor_lines([_row(H200ISH), _row(H200ISH), _row(None)]) == H200ISH.describe() + "\n"
    values = [c.strip() for c in et.markdown([_row(None)]).splitlines()[2].strip("|").split("|")]
    assert values[3:5] == ["–", "–"]


def test_user_path_table_has_the_floor_on_the_fused_line():
    lines = et.user_path_table([_row(H200ISH)]).splitlines()
    assert lines[0].startswith("| graph | batch | engine | engine ms (device) | floor ms | engine / floor | whole ms")
    assert lines[2] == "| roadNet-PA | safe50k | fused | 0.900 | 0.450 | 2.0 | 1.200 | 0.300 | 1.33 | 84 | 1 |"
    assert lines[3] == "| roadNet-PA | safe50k | operators | 1.800 | – | – | 1.200 | 0.300 | 1.33 | 84 | 40 |"


def test_perf_ab_floor_needs_a_cuda_side_and_a_gpu(monkeypatch):
    """``perf_ab.py engines --floor`` (bench/engines_cmd.measure_floor): refused without a CUDA
    side (a usage error), an environment problem without a GPU, and on a GPU the constants
    bench/floor.py measures (here a stand-in measurement: the wiring, not the GPU, is under test)."""
    from bench import engines_cmd
    from engines.sssp.cuda import runtime
    from protocol.errors import EnvironmentProblem, UsageError
    from protocol.sides import parse_sides

    with pytest.raises(UsageError, match="neither side runs on CUDA"):
        engines_cmd.measure_floor(parse_sides("host,host"))
    monkeypatch.setattr(runtime, "is_available", lambda: False)
    with pytest.raises(EnvironmentProblem, match="needs CuPy and a CUDA GPU"):
        engines_cmd.measure_floor(parse_sides("cuda:fused,cuda:operators"))
    monkeypatch.setattr(runtime, "is_available", lambda: True)
    monkeypatch.setattr(floor, "measure", lambda: H200ISH)
    assert engines_cmd.measure_floor(parse_sides("cuda:fused,cuda:operators")) is H200ISH

    def attached():
        raise floor.FloorError("CUDA_INJECTION64_PATH is set (a profiler or sanitizer is attached)")
    monkeypatch.setattr(floor, "measure", attached)
    with pytest.raises(EnvironmentProblem, match="--floor: CUDA_INJECTION64_PATH"):
        engines_cmd.measure_floor(parse_sides("cuda:fused,cuda:operators"))


def test_perf_ab_floor_option_and_reproduce_line():
    from bench import perf_ab

    args = perf_ab.build_parser().parse_args(["engines", "--graphs", "roadNet-PA", "--floor"])
    assert args.floor is True
    assert perf_ab.build_parser().parse_args(["engines", "--graphs", "roadNet-PA"]).floor is False
    from bench.engines_cmd import _rebuild_argv

    assert "--floor" in _rebuild_argv(args)
