"""Build (or read back from the cache) everything a graph's benchmark needs (inputs.md §4):
the graph with its K = 3 weight columns, the initial trees, the three batches and their facts,
for a gate (:func:`prepare_gate`) or for a user's graph file (:mod:`bench.graph_file`, through
:func:`prepare_plan`, the one path both take).

Cache layout under the cache folder (``$SSSPAB_CACHE_DIR`` or ``<repo>/.cache``)::

    gates/<name>-<key>/graph.npz       row_ptr, col_ind (weights are re-drawn: seed 12345;
                                       a graph file measured with its own weights keeps them here)
    gates/<name>-<key>/facts.json      origin, graph facts, build times
    gates/<name>-<key>/trees.npz       distances_k, parents_k per objective
    gates/<name>-<key>/batches-<bkey>.npz / .json   the batches' arrays and facts

``<key>`` hashes the origin (real file: reader, reader version and SHA-256; stand-in: generator,
every parameter and GENERATOR_VERSION; graph file: format, reader options and SHA-256), the weight
parameters, the source of a graph file and PREPARE_VERSION; ``<bkey>`` adds the batch specs,
seed, radius and BATCH_GENERATOR_VERSION. A changed input or generator therefore never reads a
stale entry; a damaged entry is rebuilt.

Inputs that cannot be measured raise :class:`InputError` naming the input and why: a real file
whose counts are not its gate's, a graph without vertices or edges, a source outside the graph,
a graph that cannot carry the batches.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from engines.io import READER_VERSION, default_cache_dir, input_sha256, read_graph_cached, reader_for
from engines.io.cache import load_arrays, save_arrays
from protocol.records import write_text

from . import batches as batches_mod
from . import standins
from .gates import Gate, find_real_file, get_gate
from .generators import csr_from_edges
from .graphfacts import graph_facts
from .host_memory import require_memory
from .weights import SOURCE, WEIGHT_PARAMS, build_graph, draw_weights, initial_trees

PREPARE_VERSION = 1
TREES_VERSION = 1


class InputError(ValueError):
    """An input that cannot be prepared; the message names it and says why."""


@dataclass
class PreparedBatch:
    name: str
    batch: object  # engines.Batch
    facts: dict
    digest: str


@dataclass
class PreparedGate:
    name: str
    origin: dict
    graph: object  # engines.Graph, K = 3
    source: int
    facts: dict
    trees: list = field(default_factory=list)  # [(distances int64, parents int32)] per objective
    batches: dict = field(default_factory=dict)  # name -> PreparedBatch

    @property
    def is_standin(self) -> bool:
        return self.origin.get("kind") == "standin"


def cache_key(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Progress:
    """Step messages on stderr with a rich spinner while a long step runs."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._console = None
        if enabled:
            from rich.console import Console

            self._console = Console(stderr=True)

    @contextmanager
    def step(self, gate: str, text: str):
        start = time.perf_counter()
        if not self.enabled:
            yield
            return
        with self._console.status(f"[bold]{gate}[/]: {text} ..."):
            yield
        self._console.print(f"{gate}: {text} ({time.perf_counter() - start:.1f} s)")


def resolve_origin(gate: Gate, data_dir=None) -> tuple[dict, Path | None]:
    """The gate's origin record and its real file (None for a stand-in). Raises
    FileNotFoundError for a gate without a stand-in whose file is missing."""
    path = find_real_file(gate, data_dir)
    if path is not None:
        reader_name, _ = reader_for(path)
        return {"kind": "real", "path": str(path), "reader": reader_name,
                "reader_version": READER_VERSION}, path
    if not gate.has_standin:
        from .gates import data_dir_candidates

        searched = ", ".join(str(p) for p in data_dir_candidates(data_dir))
        raise FileNotFoundError(
            f"gate {gate.name!r} needs one of {', '.join(gate.real_files)} (searched: {searched})")
    return {"kind": "standin", "generator": gate.standin_generator, "params": dict(gate.standin_params),
            "seed": gate.standin_params.get("seed"), "generator_version": standins.GENERATOR_VERSION,
            "note": f"stand-in for {gate.facts.get('matrix', gate.name)}: generated locally, not the real graph"}, None


def csr_within_memory(n: int, src: np.ndarray, dst: np.ndarray, *, label: str) -> tuple[np.ndarray, np.ndarray]:
    """The CSR (row_ptr, int32 col_ind) of edges sorted by source, once
    :func:`bench.host_memory.require_memory` says that preparing a graph of this size fits
    (``label`` names the input in its message)."""
    require_memory(label, n, dst.size)
    row_ptr, col_ind, _ = csr_from_edges(n, src, dst, presorted=True, col_dtype=np.int32)
    return row_ptr, col_ind


@dataclass
class InputPlan:
    """How to build one graph's inputs: what :func:`prepare_plan` needs from a gate or a file.

    ``build()`` returns ``(row_ptr, col_ind, weights)`` where ``weights`` is ``(m, K)`` to keep
    (a file's own) or None to draw the gate weights; ``radius(facts)`` is the local batch radius;
    ``label`` names the input in messages; ``facts`` are recorded beside the graph's facts.
    """

    name: str
    label: str
    origin: dict
    key: str
    build: Callable[[], tuple]
    source: int
    radius: Callable[[dict], int]
    facts: dict = field(default_factory=dict)
    tree_check: Callable | None = None  # (graph, trees, source) -> facts of the check, or raises


def _build_structure(gate: Gate, origin: dict, path: Path | None, cache_dir: Path, progress: Progress):
    if path is not None:
        with progress.step(gate.name, f"reading {path.name}"):
            parsed, _ = read_graph_cached(path, cache_dir=cache_dir, sha256=origin["sha256"])
        mismatch = gate.real_file_mismatch(parsed.num_vertices, parsed.num_edges)
        if mismatch:
            raise InputError(
                f"{path}: refused as the real {gate.name}: {mismatch}, so it is another graph. "
                f"Measure it under its own name: perf_ab.py engines --graph-file {path} --name NAME")
        return csr_within_memory(parsed.num_vertices, parsed.src, parsed.dst, label=str(path))
    with progress.step(gate.name, f"generating stand-in {gate.standin_generator}({gate.standin_params})"):
        undirected = gate.build_standin()
        src, dst = standins.directed_csr_edges(undirected)
    return csr_within_memory(undirected.num_vertices, src, dst, label=f"the stand-in of {gate.name}")


def gate_plan(gate: Gate, *, data_dir=None, cache_root: Path, shown: Progress) -> InputPlan:
    origin, path = resolve_origin(gate, data_dir)
    if path is not None:
        with shown.step(gate.name, f"hashing {path.name}"):
            origin["sha256"] = input_sha256(path)
    key = cache_key({"gate": gate.name, "origin": {k: v for k, v in origin.items() if k not in ("path", "note")},
                "weights": WEIGHT_PARAMS, "prepare_version": PREPARE_VERSION})
    facts = dict(gate=gate.name, kind=gate.kind, is_standin=origin["kind"] == "standin",
                 local_radius=gate.local_radius, real_facts=gate.facts, cache_key=key)
    if origin["kind"] == "standin":
        facts["standin"] = {"generator": origin["generator"], "params": origin["params"],
                            "generator_version": origin["generator_version"]}
    label = f"gate {gate.name}" + (f" ({path})" if path is not None else "")
    return InputPlan(
        name=gate.name, label=label, origin=origin, key=key,
        build=lambda: (*_build_structure(gate, origin, path, cache_root, shown), None),
        source=SOURCE, radius=lambda _facts: gate.local_radius, facts=facts)


def prepare_gate(name: str, *, data_dir=None, cache_dir=None, progress: bool = True,
                 with_trees: bool = True, with_batches: bool = True) -> PreparedGate:
    """Everything gate ``name`` needs, built where missing and cached.

    Raises KeyError (unknown gate), FileNotFoundError (a needed real file is missing),
    engines.errors.FileFormatError (a corrupt real file) and InputError (a real file that is
    not the gate's graph, by its vertex and edge counts).
    """
    gate = get_gate(name)
    cache_root = default_cache_dir(cache_dir)
    shown = Progress(progress)
    plan = gate_plan(gate, data_dir=data_dir, cache_root=cache_root, shown=shown)
    return prepare_plan(plan, cache_root=cache_root, shown=shown, with_trees=with_trees,
                        with_batches=with_batches)


def _usable(plan: InputPlan, n: int, m: int) -> None:
    """Refuse a graph nothing can be measured on, before any fact is computed."""
    if n == 0:
        raise InputError(f"{plan.label}: the graph has no vertex, so there is nothing to measure")
    if not 0 <= plan.source < n:
        raise InputError(f"{plan.label}: source {plan.source} is not a vertex of the graph "
                         f"(n = {n:,}, ids 0 .. {n - 1:,})")
    if m == 0:
        raise InputError(f"{plan.label}: the graph has no edge, so no batch can delete one")


def _structure(plan: InputPlan, folder: Path, shown: Progress):
    """``(row_ptr, col_ind, kept weights or None, facts)``, from the cache or built."""
    arrays = load_arrays(folder / "graph.npz")
    facts_path = folder / "facts.json"
    facts = None
    if arrays is not None and facts_path.is_file():
        try:
            facts = json.loads(facts_path.read_text())
        except (OSError, ValueError):
            facts = None
    if arrays is not None and facts is not None and "row_ptr" in arrays:
        return arrays["row_ptr"], arrays["col_ind"], arrays.get("weights"), facts
    start = time.perf_counter()
    row_ptr, col_ind, weights = plan.build()
    build_seconds = time.perf_counter() - start
    _usable(plan, row_ptr.size - 1, col_ind.size)
    with shown.step(plan.name, "graph facts (components, hop eccentricity)"):
        facts = graph_facts(row_ptr.size - 1, row_ptr, col_ind, source=plan.source)
    facts["build_seconds"] = round(build_seconds, 2)
    kept = {} if weights is None else {"weights": weights}
    save_arrays(folder / "graph.npz", row_ptr=row_ptr, col_ind=col_ind, **kept)
    write_text(facts_path, json.dumps(facts, indent=1, sort_keys=True))
    return row_ptr, col_ind, weights, facts


def prepare_plan(plan: InputPlan, *, cache_root: Path, shown: Progress, with_trees: bool = True,
                 with_batches: bool = True) -> PreparedGate:
    """The graph, weights, trees and batches of one planned input, built where missing and cached."""
    folder = cache_root / "gates" / f"{plan.name}-{plan.key}"
    row_ptr, col_ind, weights, facts = _structure(plan, folder, shown)
    _usable(plan, row_ptr.size - 1, col_ind.size)
    with shown.step(plan.name, "weights and engines.Graph"):
        graph = build_graph(row_ptr, col_ind, draw_weights(col_ind.size) if weights is None else weights)
    prepared = PreparedGate(plan.name, plan.origin, graph, plan.source, dict(facts))
    radius = int(plan.radius(facts))
    prepared.facts.update(plan.facts)
    prepared.facts["local_radius"] = radius
    if with_trees:
        prepared.trees = _trees(prepared, folder, shown)
        if plan.tree_check is not None:
            prepared.facts["initial_tree_check"] = _checked_trees(plan, prepared, folder, shown)
    if with_batches:
        try:
            prepared.batches = _batches(prepared, radius, folder, shown)
        except batches_mod.BatchDrawError as exc:
            raise InputError(f"{plan.label}: cannot draw the batches: {exc}") from None
    return prepared


def trees_sha256(trees) -> str:
    """SHA-256 of initial trees (``[(distances, parents)]`` per objective), by value: distances as
    int64, parents as int32, each array's length included."""
    digest = hashlib.sha256()
    for distances, parents in trees:
        for array, dtype in ((distances, np.int64), (parents, np.int32)):
            values = np.ascontiguousarray(array, dtype=dtype)
            digest.update(f"{values.size}:".encode())
            digest.update(values.tobytes())
    return digest.hexdigest()


def _cached_trees(path: Path, k: int, n: int) -> list | None:
    """The cached trees when they are whole and still those computed (their SHA-256 is recorded
    beside them when they are saved); None: compute them again. A tree edited in the cache would
    otherwise be the reference every side is checked against (issue 28)."""
    arrays = load_arrays(path)
    if arrays is None or not all(f"distances_{i}" in arrays and f"parents_{i}" in arrays
                                 and arrays[f"distances_{i}"].shape == (n,) for i in range(k)):
        return None
    trees = [(arrays[f"distances_{i}"], arrays[f"parents_{i}"]) for i in range(k)]
    try:
        recorded = _digest_path(path).read_text().strip()
    except OSError:
        return None  # cached before the digest was recorded: computed again once
    if recorded != trees_sha256(trees):
        print(f"prepare: {path}: the cached initial trees differ from their recorded SHA-256 (edited or "
              "damaged); computing them again", file=sys.stderr)
        return None
    return trees


def _digest_path(trees_path: Path) -> Path:
    return trees_path.with_suffix(".sha256")


def _trees(prepared: PreparedGate, folder: Path, shown: Progress) -> list:
    graph = prepared.graph
    path = folder / f"trees-v{TREES_VERSION}-s{prepared.source}.npz"
    k = graph.num_weights
    trees = _cached_trees(path, k, graph.num_vertices)
    if trees is not None:
        return trees
    with shown.step(prepared.name, f"initial trees (compute(), {k} objectives)"):
        trees = initial_trees(graph, source=prepared.source)
    save_arrays(path, **{f"{kind}_{i}": arr for i, tree in enumerate(trees)
                         for kind, arr in zip(("distances", "parents"), tree)})
    write_text(_digest_path(path), trees_sha256(trees) + "\n")
    return trees


def _checked_trees(plan: InputPlan, prepared: PreparedGate, folder: Path, shown: Progress) -> dict:
    """The initial-tree check's facts; run once per set of trees (its record is kept, and names
    the SHA-256 of the trees it checked: a record of other trees is not believed)."""
    record = folder / f"trees-v{TREES_VERSION}-s{prepared.source}.check.json"
    digest = trees_sha256(prepared.trees)
    try:
        facts = json.loads(record.read_text())
        if isinstance(facts, dict) and facts.get("trees_sha256") == digest:
            return facts
    except (OSError, ValueError):
        pass
    with shown.step(prepared.name, "initial trees against the references"):
        facts = {**plan.tree_check(prepared.graph, prepared.trees, prepared.source), "trees_sha256": digest}
    write_text(record, json.dumps(facts, indent=1, sort_keys=True))
    return facts


def _batches(prepared: PreparedGate, radius: int, folder: Path, shown: Progress) -> dict:
    from engines import Batch

    specs = batches_mod.BATCH_SPECS
    bkey = cache_key({"specs": [vars(s) if hasattr(s, "__dict__") else repr(s) for s in specs],
                 "spec_repr": [repr(s) for s in specs], "seed": batches_mod.BATCH_SEED,
                 "radius": radius, "source": prepared.source,
                 "version": batches_mod.BATCH_GENERATOR_VERSION})
    arrays = load_arrays(folder / f"batches-{bkey}.npz")
    facts_path = folder / f"batches-{bkey}.json"
    drawn = None
    if arrays is not None and facts_path.is_file():
        try:
            all_facts = json.loads(facts_path.read_text())
            drawn = {spec.name: batches_mod.BatchArrays(
                *(arrays[f"{spec.name}__{part}"] for part in
                  ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst")),
                facts=all_facts[spec.name]) for spec in specs}
        except (OSError, ValueError, KeyError):
            drawn = None
    if drawn is None:
        with shown.step(prepared.name, "batches safe50k, unsafe50k, local10k (seed 777, safe filter)"):
            drawn = batches_mod.draw_gate_batches(prepared.graph, radius=radius,
                                                  source=prepared.source, specs=specs)
        save_arrays(folder / f"batches-{bkey}.npz",
                    **{f"{name}__{part}": arr for name, b in drawn.items() for part, arr in b.arrays().items()})
        write_text(facts_path, json.dumps({name: b.facts for name, b in drawn.items()}, indent=1, sort_keys=True))
    out = {}
    for name, b in drawn.items():
        out[name] = PreparedBatch(name, Batch(b.insert_src, b.insert_dst, b.insert_weights,
                                              b.delete_src, b.delete_dst), dict(b.facts), b.facts["digest"])
    return out
