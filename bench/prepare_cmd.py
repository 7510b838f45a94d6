"""``perf_ab.py prepare``: build and cache the gates' graphs, weights, initial trees and batches,
then print their facts; ``--graph-file PATH`` prepares a graph file of one's own the same way
(:mod:`bench.graph_file`).

Exit codes (:mod:`bench.prepare_failures` maps what went wrong, as for ``perf_ab.py engines``):
0 on success; 2 when a gate is unknown, a needed real file is missing, a file is corrupt,
unreadable or cannot be measured (the message names the file and line), a real file is not its
gate's graph, or the cache folder cannot be written (checked first); 1 when an initial tree
differs from its reference; 3 when the environment fails (a write into the cache, a graph too
large for the host memory, memory running out). Only an internal error (a bug) prints a
traceback, and says so.
"""

from __future__ import annotations

import argparse
import sys
import time

from engines.errors import print_internal_error
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode

from . import graph_file, options
from .gates import GATE_NAMES, check_gate_names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_graphs_option(parser, note=", or none with --graph-file")
    options.add_input_options(parser)
    options.add_no_progress_option(parser)
    graph_file.add_arguments(parser)


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
        if p.is_standin:
            origin = f"stand-in {p.origin['generator']} {p.origin['params']}"
        elif p.origin.get("kind") == "file":
            origin = f"file {p.origin['path']} ({p.origin['format']}, sha256 {p.origin['sha256'][:16]})"
        else:
            origin = f"real {p.origin['path']}"
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


def _jobs(names, spec, args):
    """``(name, prepare())`` per input: the gates, then the graph file."""
    from .graph_file import prepare_graph_file
    from .prepare import prepare_gate

    for name in names:
        yield name, lambda name=name: prepare_gate(name, data_dir=args.data_dir, cache_dir=args.cache_dir,
                                                   progress=not args.no_progress)
    if spec is not None:
        yield spec.name, lambda: prepare_graph_file(spec, cache_dir=args.cache_dir, progress=not args.no_progress)


def _prepare_one(name, job, cache_root) -> tuple[object, int | None]:
    """``(prepared, None)`` or ``(None, exit code)`` after printing what went wrong."""
    from .prepare_failures import prepare_failure

    try:
        return job(), None
    except Exception as exc:
        failure = prepare_failure(name, exc, written=(cache_root,))
        if failure is None:
            raise
    print(f"prepare: {failure}", file=sys.stderr)
    return None, int(failure.exit_code)


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except Exception as exc:  # a bug: the traceback helps whoever fixes it
        print_internal_error("prepare: ", exc)
        return int(ExitCode.CORRECTNESS)


def _main(args: argparse.Namespace) -> int:
    from engines.io import default_cache_dir

    try:
        spec = graph_file.spec_from_args(args)
    except graph_file.GraphFileError as exc:
        print(f"prepare: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    names = args.graphs if args.graphs is not None else ([] if spec is not None else list(GATE_NAMES))
    try:
        check_gate_names(names)
    except UsageError as exc:
        print(f"prepare: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    if spec is not None and spec.name in names:
        print(f"prepare: the graph file's name {spec.name} is also in --graphs; give it another with --name",
              file=sys.stderr)
        return int(ExitCode.USAGE)
    try:
        options.check_cache_dir(args.cache_dir)
    except UsageError as exc:
        print(f"prepare: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    cache_root = default_cache_dir(args.cache_dir)
    prepared = []
    for name, job in _jobs(names, spec, args):
        start = time.perf_counter()
        gate, code = _prepare_one(name, job, cache_root)
        if gate is None:
            return code
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
