#!/usr/bin/env python3
"""Does the host backend pay for itself? The host reference's update() and compute() on a gate,
beside SciPy's Dijkstra recomputing the tree from scratch on the same graph and objective.

For each gate: SciPy ``dijkstra(A, indices=source, min_only=True)`` on the objective's weights
(the CSR built outside the timer), the host ``compute()``, and the host ``update()`` of each
batch, every update from the prepared graph (restored from its snapshot) and tree, outside the
timer: ``update ms`` from the library's own tree (compute()'s result, what a chain of updates
hands in), ``update ms, imported tree`` from the same tree imported by ``Result.from_arrays``
(checked for cycles by an O(n) walk), interleaved run by run. Each time is the median of
``--repeats`` runs after ``--warmup`` untimed ones (the first call compiles the Numba kernels).
Every update's result is checked against a host ``compute()`` on the updated graph where the input
tree is canonical (a prepared tree is), so a faster path that gave other bytes would fail here,
not only in the tests.

    python bench/host_bench.py --graphs roadNet-PA --batches local10k safe50k
"""

from __future__ import annotations

if __name__ == "__main__" and __package__ in (None, ""):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt

interrupt.guard(__name__, "host_bench.py")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from engines.exitcodes import ExitCode  # noqa: E402

#: The batches of a gate (bench/batches.py); all by default.
DEFAULT_BATCHES = ("local10k", "safe50k", "unsafe50k")


def scipy_recompute_ms(graph, source: int, objective: int, repeats: int, warmup: int) -> float:
    """SciPy's Dijkstra from scratch (distances only: what a recompute costs a SciPy user)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = graph.num_vertices
    matrix = csr_matrix((graph.weight_column(objective).astype(np.float64), graph.col_ind, graph.row_ptr),
                        shape=(n, n))
    return _timed(lambda: dijkstra(matrix, indices=source, min_only=True), repeats, warmup)


def host_compute_ms(graph, source: int, objective: int, repeats: int, warmup: int) -> float:
    from engines import sssp

    return _timed(lambda: sssp.compute(graph, source, objective=objective), repeats, warmup)


def host_update(graph, batch, tree, source: int, objective: int, repeats: int, warmup: int) -> dict:
    """The host update() of ``batch`` from ``tree``, each run from the restored graph (outside the
    timer); its median time, its counters, whether it equals compute() on the updated graph, and
    what recomputing that graph costs (host compute() and SciPy: a user's alternative).

    Two starting results, interleaved run by run: the library's own tree (``ms``: compute()'s
    result on the prepared graph, cloned outside the timer, what a chain of updates hands in; the
    engine knows it acyclic and skips the cycle walk) and the same tree imported with
    ``Result.from_arrays`` (``imported_ms``: a user's tree, checked by the O(n) walk). Both must
    give the same bytes and counters."""
    from engines import sssp

    # the in-edges a graph keeps after its first commit (the apply edits both CSRs), built before
    # the snapshot: every run then starts from a steady-state graph, not from a fresh one
    graph.in_edges(objective)
    snapshot = graph.snapshot()
    own = sssp.compute(graph, source, objective=objective)
    times = {"own": [], "imported": []}
    outputs = {}
    try:
        for i in range(warmup + repeats):
            for kind in ("own", "imported"):
                graph.restore(snapshot)
                if kind == "own":
                    result = own.clone()
                else:
                    result = sssp.Result.from_arrays(graph, source, tree[0], tree[1], objective=objective,
                                                     validate=False, canonicalize=False)
                t0 = time.perf_counter()
                stats = sssp.update(graph, batch, result)
                elapsed = (time.perf_counter() - t0) * 1e3
                if i >= warmup:
                    times[kind].append(elapsed)
                outputs[kind] = (result, stats)
        fresh = sssp.compute(graph, source, objective=objective)
        fd, fp = fresh.to_numpy()
        equal = True
        for result, _ in outputs.values():
            d, p = result.to_numpy()
            equal = equal and bool(np.array_equal(d, fd) and np.array_equal(p, fp))
        counters = [(s.invalidated, s.affected, s.iterations, s.epochs, s.pushes) for _, s in outputs.values()]
        equal = equal and counters[0] == counters[1]
        recompute = {"compute_after_ms": host_compute_ms(graph, source, objective, repeats, warmup),
                     "scipy_after_ms": scipy_recompute_ms(graph, source, objective, repeats, warmup)}
    finally:
        graph.restore(snapshot)  # the gate's graph as prepared, for the next batch
    stats = outputs["own"][1]
    return {"ms": statistics.median(times["own"]), "imported_ms": statistics.median(times["imported"]),
            "invalidated": stats.invalidated, "affected": stats.affected, "equals_compute": equal,
            **recompute}


def _timed(call, repeats: int, warmup: int) -> float:
    times = []
    for i in range(warmup + repeats):
        t0 = time.perf_counter()
        call()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(graphs, batches, *, objective: int = 0, repeats: int = 3, warmup: int = 1, data_dir=None,
        cache_dir=None, progress: bool = True) -> list[dict]:
    """One row per gate: SciPy recompute, host compute(), host update() per batch."""
    from functools import partial

    from protocol.errors import UsageError

    from bench import options
    from bench.batches import check_batch_names
    from bench.gates import check_gate_names
    from bench.prepare import prepare_gate
    from bench.prepare_failures import prepared_in_cache

    # before the first gate is read: a misspelt batch was found only once its gate was prepared
    check_gate_names(graphs)
    check_batch_names(batches)
    options.check_cache_dir(cache_dir)
    rows = []
    for name in graphs:
        # a bad or missing input, or a cache that cannot be written: one line and its status
        gate = prepared_in_cache(name, partial(prepare_gate, name, data_dir=data_dir, cache_dir=cache_dir,
                                               progress=progress), cache_dir)
        missing = [b for b in batches if b not in gate.batches]
        if missing:  # before this gate's measurement, not after it
            raise UsageError(f"gate {name} has no batch {missing[0]!r} (it has {', '.join(gate.batches)})")
        if not 0 <= objective < len(gate.trees):
            raise UsageError(f"--objective {objective}: gate {name} has {len(gate.trees)} weight columns")
        graph, source = gate.graph, gate.source
        row = {"graph": name, "n": graph.num_vertices, "m": graph.num_edges, "objective": objective,
               "scipy_ms": scipy_recompute_ms(graph, source, objective, repeats, warmup),
               "compute_ms": host_compute_ms(graph, source, objective, repeats, warmup),
               "updates": {}}
        for b in batches:
            row["updates"][b] = host_update(graph, gate.batches[b].batch, gate.trees[objective], source,
                                            objective, repeats, warmup)
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    """One line per graph and batch: the update beside recomputing the updated graph (host
    compute() and SciPy), and the prepared graph's compute() and SciPy times."""
    lines = ["| graph | batch | invalidated | affected | update ms | update ms, imported tree | "
             "recompute ms (host / SciPy) | "
             "update / recompute (host / SciPy) | before the batch: compute / SciPy ms | equals compute() |",
             "|---|---|---:|---:|---:|---:|---|---|---|---|"]
    for r in rows:
        for b, u in r["updates"].items():
            ca, sa = u["compute_after_ms"], u["scipy_after_ms"]
            imported = f"{u['imported_ms']:.1f}" if "imported_ms" in u else "-"
            lines.append(f"| {r['graph']} | {b} | {u['invalidated']:,} | {u['affected']:,} | {u['ms']:.1f} | "
                         f"{imported} | "
                         f"{ca:.1f} / {sa:.1f} | {u['ms'] / ca:.2f} / {u['ms'] / sa:.2f} | "
                         f"{r['compute_ms']:.1f} / {r['scipy_ms']:.1f} | {'yes' if u['equals_compute'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    from bench import options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_graphs_option(parser, default=["roadNet-PA"])
    parser.add_argument("--batches", nargs="+", default=list(DEFAULT_BATCHES))
    parser.add_argument("--objective", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    options.add_warmup_option(parser, default=1, runs="calls per measurement")
    options.add_input_options(parser)
    options.add_table_out_option(parser, "host_bench.json and host_bench.md")
    options.add_no_progress_option(parser)
    return parser


def main(argv=None) -> int:
    from protocol.errors import run_command

    return run_command(lambda: _main(argv), prefix="host_bench.py: ")


def _main(argv) -> int:
    from protocol.errors import UsageError

    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        raise UsageError("--repeats must be >= 1")
    if args.out:
        from protocol.records import writable_folder

        # before the measurement: a folder that cannot be written costs nothing
        writable_folder(args.out, f"--out {args.out}")
    rows = run(args.graphs, args.batches, objective=args.objective, repeats=args.repeats,
               warmup=args.warmup, data_dir=args.data_dir, cache_dir=args.cache_dir,
               progress=not args.no_progress)
    table = markdown(rows)
    print(table)
    equal = all(u["equals_compute"] for r in rows for u in r["updates"].values())
    if args.out:
        from protocol.records import write_or_say

        out = Path(args.out)
        record = json.dumps({"command": " ".join(["python bench/host_bench.py", *(argv or sys.argv[1:])]),
                             "rows": rows}, indent=1)
        # the table is printed above: a failed write is one line and its status
        failed = write_or_say("host_bench.py", ((out / "host_bench.json", record), (out / "host_bench.md", table)),
                              wrong_answer=not equal)
        if failed is not None:
            return failed
    return ExitCode.OK if equal else ExitCode.CORRECTNESS


if __name__ == "__main__":
    interrupt.run(main)
