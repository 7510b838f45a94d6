#!/usr/bin/env python3
"""A first measurement of the three engines per gate and batch (not the A/B protocol).

For each prepared gate and batch: the engine-region time of ``update()`` for the CUDA fused and
operators engines (CUDA events on the engine stream and host time, median of ``--repeats`` runs
after ``--warmup``), the host reference's update time (wall clock, ``--host-repeats`` runs, skipped
above ``--host-max-vertices``), ``compute()`` per engine, with iterations, epochs and host syncs,
and the derived cost of one host round trip ((operators - fused) / (syncs_ops - syncs_fused)).
Every run starts from the same state (graph restored from a snapshot, result re-copied), and the
trees of the engines are checked byte for byte against each other (and the host where it ran).

    python bench/engine_table.py --graphs roadNet-PA roadNet-CA --out results/engine_table
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench.prepare import prepare_gate
from engines import sssp
from protocol.cell import RegionProbe

CUDA_ENGINES = ("fused", "operators")


def _time_updates(gate, batch, result, snapshot, graph_snapshot, repeats: int, warmup: int):
    """(device ms list, host ms list, last Stats) of ``repeats`` timed updates after ``warmup``."""
    probe = RegionProbe()
    device, host, stats = [], [], None
    for i in range(warmup + repeats):
        gate.graph.restore(graph_snapshot)
        result.copy_from(snapshot)
        probe.reset()
        stats = sssp.update(gate.graph, batch, result, probe=probe)
        dev = probe.device_ms()
        if i >= warmup:
            host.append(probe.host_ms())
            if dev is not None:
                device.append(dev)
    return device, host, stats


def _median(values):
    return statistics.median(values) if values else None


def _compute_ms(graph, source, objective, backend, engine, repeats: int):
    times, stats = [], None  # compute() returns after its final synchronization: no extra sync
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = sssp.compute(graph, source, backend=backend, objective=objective,
                         **({"cuda_engine": engine} if backend == "cuda" else {}))
        times.append((time.perf_counter() - t0) * 1e3)
        stats = r.stats
    return _median(times), stats


def measure_gate(name: str, args) -> list[dict]:
    gate = prepare_gate(name, data_dir=args.data_dir, cache_dir=args.cache_dir, progress=True)
    graph, source, k = gate.graph, gate.source, args.objective
    graph.reuse_applied_batches()
    graph_snapshot = graph.snapshot()
    d0, p0 = gate.trees[k]
    rows = []
    compute_rows = {}
    for engine in CUDA_ENGINES:
        _compute_ms(graph, source, k, "cuda", engine, 1)  # compile and reserve
        compute_rows[engine] = _compute_ms(graph, source, k, "cuda", engine, args.repeats)
    host_ok = graph.num_vertices <= args.host_max_vertices
    if host_ok:
        compute_rows["host"] = _compute_ms(graph, source, k, "host", None, 1)
    for batch_name, prepared in gate.batches.items():
        if args.batches and batch_name not in args.batches:
            continue
        row = {"graph": name, "origin": gate.origin.get("kind"), "n": graph.num_vertices,
               "m": graph.num_edges, "batch": batch_name, "objective": k}
        trees = {}
        for engine in CUDA_ENGINES:
            graph.restore(graph_snapshot)
            base = sssp.Result.from_arrays(graph, source, d0, p0, backend="cuda", objective=k,
                                           cuda_engine=engine, validate=False, canonicalize=False)
            snapshot = base.clone()
            dev, hst, st = _time_updates(gate, prepared.batch, base, snapshot, graph_snapshot,
                                         args.repeats, args.warmup)
            trees[engine] = base.to_numpy()
            row[engine] = {"device_ms": _median(dev), "host_ms": _median(hst), "runs": len(hst),
                           "iterations": st.iterations, "epochs": st.epochs, "host_syncs": st.host_syncs,
                           "sync_budget": st.sync_budget, "invalidated": st.invalidated,
                           "affected": st.affected, "engine_used": st.engine_used,
                           "compute_ms": compute_rows[engine][0],
                           "compute_iterations": compute_rows[engine][1].iterations,
                           "compute_epochs": compute_rows[engine][1].epochs}
        if host_ok:
            graph.restore(graph_snapshot)
            base = sssp.Result.from_arrays(graph, source, d0, p0, objective=k, validate=False,
                                           canonicalize=False)
            snapshot = base.clone()
            _, hst, st = _time_updates(gate, prepared.batch, base, snapshot, graph_snapshot,
                                       args.host_repeats, 0)
            trees["host"] = base.to_numpy()
            row["host"] = {"host_ms": _median(hst), "runs": len(hst), "iterations": st.iterations,
                           "invalidated": st.invalidated, "affected": st.affected,
                           "compute_ms": compute_rows["host"][0]}
        names = list(trees)
        ref = trees[names[0]]
        row["identical"] = all(np.array_equal(ref[0], trees[e][0]) and np.array_equal(ref[1], trees[e][1])
                               for e in names[1:])
        row["identical_counters"] = len({(row[e]["invalidated"], row[e]["affected"]) for e in names}) == 1
        f, o = row["fused"], row["operators"]
        extra_syncs = o["host_syncs"] - f["host_syncs"]
        if extra_syncs > 0 and f["device_ms"] is not None and o["device_ms"] is not None:
            row["round_trip_us"] = (o["host_ms"] - f["host_ms"]) / extra_syncs * 1e3
        rows.append(row)
        print(json.dumps(row), flush=True)
    graph.restore(graph_snapshot)
    return rows


def _fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def markdown(rows: list[dict]) -> str:
    lines = [
        "| graph | batch | fused ms (dev / host) | operators ms (dev / host) | ops / fused | host ref ms | "
        "compute ms (fused / ops / host) | fused it+ep | ops it+ep | ops syncs / budget | round trip µs | identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f, o, h = r["fused"], r["operators"], r.get("host")
        ratio = (o["device_ms"] / f["device_ms"]) if f["device_ms"] and o["device_ms"] else None
        lines.append(
            f"| {r['graph']} | {r['batch']} | {_fmt(f['device_ms'])} / {_fmt(f['host_ms'])} | "
            f"{_fmt(o['device_ms'])} / {_fmt(o['host_ms'])} | {_fmt(ratio)} | "
            f"{_fmt(h['host_ms'], 0) if h else 'not run'} | "
            f"{_fmt(f['compute_ms'])} / {_fmt(o['compute_ms'])} / {_fmt(h['compute_ms'], 0) if h else '–'} | "
            f"{f['iterations']}+{f['epochs']} | {o['iterations']}+{o['epochs']} | "
            f"{o['host_syncs']} / {o['sync_budget']} | {_fmt(r.get('round_trip_us'), 1)} | "
            f"{'yes' if r['identical'] and r['identical_counters'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=["roadNet-PA", "roadNet-CA", "rgg_n_2_20_s0", "road_usa"])
    parser.add_argument("--batches", nargs="*", default=None)
    parser.add_argument("--objective", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--host-repeats", type=int, default=1)
    parser.add_argument("--host-max-vertices", type=int, default=3_000_000)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--out", default=None, help="folder for engine_table.json and engine_table.md")
    args = parser.parse_args(argv)
    if args.repeats < 11:
        parser.error("--repeats must be at least 11")
    from engines.sssp.backends import cuda_available

    if not cuda_available():
        print("engine_table.py needs CuPy and a CUDA GPU", file=sys.stderr)
        return 3
    rows = []
    for name in args.graphs:
        rows.extend(measure_gate(name, args))
    table = markdown(rows)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "engine_table.json").write_text(json.dumps(rows, indent=1))
        (out / "engine_table.md").write_text(table)
    return 0 if all(r["identical"] and r["identical_counters"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
