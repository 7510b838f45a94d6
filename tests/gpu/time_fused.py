"""Time the CUDA fused engine (a plain script, not a test; needs CuPy and a GPU).

    python -m tests.gpu.time_fused --gate roadNet-PA --batch <name> [--engine fused]
    python -m tests.gpu.time_fused --random 1000000 --kind mixed --batch-size 10000

For one graph and one batch: the engine time of ``update()`` (CUDA events recorded on the engine's
stream by the dispatch's probe, around the engine body only; median of ``--repeats`` >= 11 runs
after ``--warmup`` runs), next to the host reference's engine time (wall clock, fewer runs) and
``compute()`` wall time, with iterations, epochs, pushes, invalidated and affected. Every run
starts from the same state: the graph is restored from a snapshot and the result re-cloned.
A prepared gate comes from ``bench.prepare.prepare_gate(name)`` when that module exists.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


class EngineProbe:
    """The dispatch's probe: CUDA events on the engine's stream, or wall clock on the host."""

    def __init__(self):
        import cupy

        self._start = cupy.cuda.Event()
        self._stop = cupy.cuda.Event()
        self._t0 = 0.0
        self.elapsed_ms = None
        self._device = False

    def engine_start(self, stream):
        if stream is None:
            self._device = False
            self._t0 = time.perf_counter()
        else:
            self._device = True
            self._start.record(stream)

    def engine_stop(self, stream):
        if stream is None:
            self.elapsed_ms = (time.perf_counter() - self._t0) * 1e3
        else:
            self._stop.record(stream)

    def result_ms(self) -> float:
        if self._device:
            import cupy

            self._stop.synchronize()
            return float(cupy.cuda.get_elapsed_time(self._start, self._stop))
        return float(self.elapsed_ms)


def load_case(args):
    """(graph, source, batch, label) from a prepared gate or a random graph."""
    import engines

    if args.gate:
        try:
            from bench.prepare import prepare_gate
        except ImportError as exc:
            sys.exit(f"bench.prepare is not available: {exc}")
        gate = prepare_gate(args.gate, progress=False)
        names = sorted(gate.batches)
        name = args.batch or names[0]
        if name not in gate.batches:
            sys.exit(f"batch {name!r} not in gate {args.gate}: {names}")
        return gate.graph, int(gate.source), gate.batches[name].batch, f"{args.gate}/{name}"
    from tests import harness as H

    rng = np.random.default_rng(args.seed)
    n, src, dst, w = H.random_graph(rng, args.shape, args.random, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n, symmetrize=True)
    from engines import sssp

    tree = sssp.compute(graph, 0, backend="host")
    _, parents = tree.to_numpy()
    arrays = H.random_batch(rng, args.kind, H.ref_of(graph), parents, 0, "mid")
    if args.batch_size:
        arrays = _resize_batch(rng, graph, arrays, args.batch_size)
    return graph, 0, H.make_batch(arrays), f"random {args.shape} n={n} {args.kind}"


def _resize_batch(rng, graph, arrays, size):
    """Random insertions and deletions of existing edges, ``size`` operations in all."""
    n, m = graph.num_vertices, graph.num_edges
    src = np.repeat(np.arange(n), np.diff(np.asarray(graph.row_ptr).astype(np.int64)))
    dst = np.asarray(graph.col_ind).astype(np.int64)
    half = size // 2
    pick = rng.integers(0, m, size=half)
    isrc = rng.integers(0, n, size=size - half)
    idst = rng.integers(0, n, size=size - half)
    iw = rng.integers(1, 101, size=(size - half, graph.num_weights))
    return isrc, idst, iw, src[pick], dst[pick]


def time_updates(graph, base, batch, repeats, warmup, backend):
    from engines import sssp

    snapshot = graph.snapshot()
    times, stats = [], None
    for i in range(warmup + repeats):
        graph.restore(snapshot)
        r = base.clone(backend=backend)
        probe = EngineProbe()
        stats = sssp.update(graph, batch, r, probe=probe)
        if i >= warmup:
            times.append(probe.result_ms())
    graph.restore(snapshot)
    return times, stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", help="a gate of bench.gates (prepared through bench.prepare)")
    parser.add_argument("--batch", help="the gate's batch name (default: the first)")
    parser.add_argument("--random", type=int, default=200000, help="random graph size")
    parser.add_argument("--shape", default="grid", help="random graph shape (tests/harness.py)")
    parser.add_argument("--kind", default="mixed", help="random batch kind (tests/harness.py)")
    parser.add_argument("--batch-size", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", default="fused", choices=("fused", "operators"))
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--host-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.repeats < 11:
        parser.error("--repeats must be at least 11")

    from engines import sssp

    graph, source, batch, label = load_case(args)
    print(f"case: {label}; n={graph.num_vertices} m={graph.num_edges} "
          f"batch={batch.num_insertions}+{batch.num_deletions}")

    t0 = time.perf_counter()
    base = sssp.compute(graph, source, backend="cuda", cuda_engine=args.engine)
    first = (time.perf_counter() - t0) * 1e3
    compute_ms = []
    for _ in range(5):
        t0 = time.perf_counter()
        r = sssp.compute(graph, source, backend="cuda", cuda_engine=args.engine)
        compute_ms.append((time.perf_counter() - t0) * 1e3)
    st = r.stats
    print(f"compute  {args.engine:9s} first {first:9.3f} ms (compiles), median "
          f"{statistics.median(compute_ms):9.3f} ms wall  iterations={st.iterations} "
          f"epochs={st.epochs} pushes={st.pushes}")

    times, stats = time_updates(graph, base, batch, args.repeats, args.warmup, "cuda")
    print(f"update   {args.engine:9s} median {statistics.median(times):9.3f} ms  min "
          f"{min(times):9.3f} ms  (CUDA events, {len(times)} runs)  iterations={stats.iterations} "
          f"epochs={stats.epochs} pushes={stats.pushes} invalidated={stats.invalidated} "
          f"affected={stats.affected} host_syncs={stats.host_syncs}")

    host_base = base.clone(backend="host")
    htimes, hstats = time_updates(graph, host_base, batch, args.host_repeats, 1, "host")
    print(f"update   host      median {statistics.median(htimes):9.3f} ms  (wall, {len(htimes)} "
          f"runs)  invalidated={hstats.invalidated} affected={hstats.affected}")
    if (hstats.invalidated, hstats.affected) != (stats.invalidated, stats.affected):
        print("MISMATCH between the host and the CUDA engine statistics", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
