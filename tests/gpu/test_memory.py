"""A steady-state update allocates no device memory (docs/algorithm.md §12.3, §13.11; D8).

The memory pool's ``malloc`` is wrapped through ``cupy.cuda.set_allocator`` with a counting
allocator for the duration of one update: n, m and the batch size within the reserved
capacities, the call must make zero device allocations, on both CUDA engines.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


class _CountingAllocator:
    def __init__(self, pool):
        self.pool = pool
        self.sizes = []

    def __call__(self, size):
        self.sizes.append(int(size))
        return self.pool.malloc(size)


def _update_counting(graph, batch, *results):
    import cupy

    pool = cupy.get_default_memory_pool()
    counter = _CountingAllocator(pool)
    cupy.cuda.set_allocator(counter)
    try:
        stats = sssp.update(graph, batch, *results)
    finally:
        cupy.cuda.set_allocator(pool.malloc)
    return stats, counter.sizes


@pytest.mark.parametrize("kind", ["mixed", "reweight", "tree_delete"])
@pytest.mark.parametrize("engine", S.CUDA_ENGINES)
def test_steady_state_update_allocates_nothing(engine, kind):
    S.skip_unless_it_runs(engine)
    rng = np.random.default_rng(31)
    n, src, dst, w = H.random_graph(rng, "sparse", 3000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=(engine,))

    def next_batch():
        _, parents = results["host"].to_numpy()
        return H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))

    # warm-up batches reserve the workspace, change-list and mirror capacities
    for _ in range(3):
        S.update_all(graph, next_batch(), results)
    for _ in range(2):
        # the host result rides along: its engine is NumPy, so every device allocation counted
        # belongs to the CUDA engine, its dispatch or its upload
        stats, sizes = _update_counting(graph, next_batch(), results["host"], results[engine])
        assert sizes == [], f"{engine} allocated {sizes} bytes of device memory in a steady state"
        assert stats[1].engine_used == S.engine_of(engine)
        S.assert_conformant(results, dict(zip(results, stats)), update=True)
