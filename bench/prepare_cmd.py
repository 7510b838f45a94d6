"""``perf_ab.py prepare``: build and cache the gates' graphs, weights, initial trees and batches,
then print their facts.

Exit codes: 0 on success; 2 when a gate is unknown, a needed real file is missing, or a real file
is corrupt (the message names the file and line).
"""

from __future__ import annotations

import argparse
import sys
import time

from engines.errors import FileFormatError

from .gates import ALL_GATES, GATE_NAMES

EXIT_INPUT_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graphs", nargs="+", default=list(GATE_NAMES), metavar="GATE",
                        help=f"gates to prepare (default: the four gates; known: {', '.join(ALL_GATES)})")
    parser.add_argument("--data-dir", default=None,
                        help="folder with real graph files (also searched in its graphs/ subfolder); "
                             "default: $SSSPAB_DATA_DIR, then <repo>/../shared/data")
    parser.add_argument("--cache-dir", default=None,
                        help="cache folder (default: $SSSPAB_CACHE_DIR or <repo>/.cache)")
    parser.add_argument("--no-progress", action="store_true", help="no progress messages on stderr")


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def facts_tables(prepared_gates) -> str:
    """The graph table and the batch table as plain text (rich renders them when available)."""
    graph_cols = ("gate", "origin", "vertices", "directed_edges", "average_degree",
                  "largest_component_share", "source_hop_eccentricity", "hop_diameter_lower_bound",
                  "build_seconds", "prepare_seconds")
    batch_cols = ("gate", "batch", "insertions", "new_insertions", "reweights", "deletions_requested",
                  "deletions_kept", "filter_rounds", "centre", "region_size", "digest", "identical_to")
    graph_rows, batch_rows = [], []
    for p in prepared_gates:
        origin = (f"stand-in {p.origin['generator']} {p.origin['params']}" if p.is_standin
                  else f"real {p.origin['path']}")
        row = {"gate": p.name, "origin": origin, **p.facts}
        graph_rows.append([_fmt(row.get(c, "")) for c in graph_cols])
        for name, b in p.batches.items():
            f = {"gate": p.name, "batch": name, **b.facts}
            f["digest"] = b.digest[:16]
            batch_rows.append([_fmt(f.get(c, "")) if f.get(c) is not None else "" for c in batch_cols])
    return _render(graph_cols, graph_rows) + "\n\n" + _render(batch_cols, batch_rows)


def _render(columns, rows) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(cell.ljust(w) for cell, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in rows])


def main(args: argparse.Namespace) -> int:
    from .prepare import prepare_gate

    unknown = [g for g in args.graphs if g not in ALL_GATES]
    if unknown:
        print(f"prepare: unknown gate(s) {', '.join(unknown)}; known gates: {', '.join(ALL_GATES)}",
              file=sys.stderr)
        return EXIT_INPUT_ERROR
    prepared = []
    for name in args.graphs:
        start = time.perf_counter()
        try:
            gate = prepare_gate(name, data_dir=args.data_dir, cache_dir=args.cache_dir,
                                progress=not args.no_progress)
        except FileNotFoundError as exc:
            print(f"prepare: missing input for {name}: {exc}", file=sys.stderr)
            return EXIT_INPUT_ERROR
        except FileFormatError as exc:
            print(f"prepare: corrupt input for {name}: {exc}", file=sys.stderr)
            return EXIT_INPUT_ERROR
        gate.facts["prepare_seconds"] = round(time.perf_counter() - start, 2)
        prepared.append(gate)
        # keep memory flat across gates: the table needs only the facts
        gate.graph, gate.trees = None, []
    print(facts_tables(prepared))
    for p in prepared:
        if p.is_standin:
            print(f"note: {p.name} is a STAND-IN ({p.origin['generator']}, generator version "
                  f"{p.origin['generator_version']}), not the real graph.")
    return 0
