"""The floor model on a GPU (bench/floor.py, issue 34): the micro-benchmark's constants are positive
and plausible, barrier and chain measured together cost about what they cost apart, and a real
fused update is never faster than the floor its own grid syncs imply."""

from __future__ import annotations

import statistics

import pytest

from bench import engine_table as et
from bench import floor
from engines import sssp
from protocol.region import RegionProbe, timed_updates

#: H200: a grid barrier about 1.8 µs, an L2 chain of 4 loads and an atomic a few µs (issue 34);
#: these bounds only catch a broken measurement (a unit slip, a kernel that did nothing).
BARRIER_US = (0.3, 50.0)
CHAIN_US = (0.1, 50.0)


@pytest.fixture(scope="module")
def whole_device(fused_engine, cuda_device):
    if floor.profiler_attached():
        pytest.skip(f"a profiler is attached: {floor.profiler_attached()}")
    return floor.measure(cuda_device)


def test_constants_are_positive_and_plausible(whole_device, cuda_device):
    from engines.sssp.cuda import fused

    c = whole_device
    print(c.describe())
    assert c.blocks == fused.max_blocks(cuda_device)
    assert BARRIER_US[0] <= c.barrier_us <= BARRIER_US[1], c
    assert CHAIN_US[0] <= c.chain_us <= CHAIN_US[1], c
    assert c.per_sync_us == pytest.approx(c.barrier_us + c.chain_us)
    # measured together, a phase costs about the sum (neither overlaps the other much)
    assert 0.5 * c.per_sync_us <= c.phase_us <= 1.5 * c.per_sync_us, c


def test_a_one_block_per_sm_grid_measures_too(fused_engine, cuda_device):
    from engines.sssp.cuda import runtime

    sms = runtime.device_info(cuda_device).multiprocessors
    c = floor.measure(cuda_device, sms, repeats=3)
    assert c.blocks == sms and BARRIER_US[0] <= c.barrier_us <= BARRIER_US[1], c


def test_a_grid_beyond_the_device_is_refused(fused_engine, cuda_device):
    with pytest.raises(floor.FloorError, match="cooperative grid holds"):
        floor.measure(cuda_device, floor.co_resident_blocks(cuda_device) + 1)


def test_a_real_fused_update_takes_at_least_its_floor(fused_engine, cuda_device):
    graph = et.random_graph(20_000, 200_000)
    batch = et.random_batch(graph)
    result = sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")
    snapshot, graph_snapshot = result.clone(), graph.snapshot()
    constants = floor.measure(cuda_device, floor.engine_grid(graph, cuda_device))
    probe = RegionProbe()

    def restore():
        graph.restore(graph_snapshot)
        result.copy_from(snapshot)
        import cupy

        cupy.cuda.Device().synchronize()

    def update(region_probe):
        return sssp.update(graph, batch, result, probe=region_probe)

    times, stats = [], []
    for i, timed in enumerate(timed_updates(update, restore, 7, probe)):
        if i >= 2:  # after the warm-up
            times.append(probe.device_ms())
            stats.append(timed.stats)
    assert {s.grid_syncs for s in stats} == {stats[0].grid_syncs} and stats[0].grid_syncs > 0
    measured = statistics.median(times)
    floor_ms = floor.stats_floor_ms(stats[0], constants)
    print(constants.describe(), f"grid syncs {stats[0].grid_syncs}: floor {floor_ms:.3f} ms, "
          f"measured {measured:.3f} ms ({measured / floor_ms:.1f}x)")
    assert 0 < floor_ms <= measured
