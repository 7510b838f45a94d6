"""Bring your own graph: ``perf_ab.py prepare|engines --graph-file PATH`` (inputs.md §1-§3 applied
to a file nobody on the project has seen).

Every format the readers know works: Matrix Market (``.mtx``, ``.mtx.gz``, SuiteSparse
``.tar.gz``), SNAP (``.txt[.gz]``), DIMACS (``.gr[.gz]``), edge lists (``.edges[.gz]``) and MOSP
CSR folders; ``--format`` names it where the file name does not (a headerless ``.mtx`` is an
edge list). The file becomes a graph exactly as a gate does:

- ``--symmetrize`` / ``--no-symmetrize`` stores both directions of every edge (default: on for
  edge lists, which list each undirected edge once, off for the others; a SNAP list of an
  undirected network, such as ego-Facebook, needs ``--symmetrize``). Self-loops are dropped and
  duplicate pairs removed (the first weight wins), except in a MOSP folder, taken as stored.
- ``--one-based`` / ``--zero-based``: the id base of an edge list (default one-based) or a SNAP
  list (default zero-based); Matrix Market and DIMACS are one-based and MOSP zero-based by
  definition.
- ``--weights random`` (the default) draws the gates' weights (``bench.weights.WEIGHT_PARAMS``);
  ``--weights file`` keeps the file's own integer weights (K columns: 1 for Matrix Market and
  DIMACS, the folder's K for MOSP).
- ``--source S`` (default 0); the local batch radius is ``--local-radius R``, else the
  undirected hop-diameter lower bound / 8 (at least 1), which gives road networks about the
  gates' radii.
- the three batches are drawn with the gates' generators and seeds; the initial trees are checked
  against the host reference and SciPy (:mod:`bench.tree_check`) below the runner's size limit.

The records name the file (its path, format, reader options and SHA-256) as a ``"file"`` origin.
A name that is a gate's name claims to be that gate's graph: the file is checked against the
gate's known vertex and edge counts and refused when they differ.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engines.arguments import WEIGHT_MAX, article, weight_matrix
from engines.errors import FileFormatError, InvalidArgumentError
from engines.io import (FORMATS, READER_VERSION, check_present, default_cache_dir, format_of, input_sha256,
                        read_graph_cached, symmetrized)
from engines.io.locate import edge_source, first_data_line

from .prepare import PREPARE_VERSION, InputError, InputPlan, Progress, cache_key, csr_within_memory, prepare_plan
from .weights import NUM_OBJECTIVES, WEIGHT_PARAMS, describe_weights

# the formats whose id base and symmetry the reader is told (the others fix the base themselves)
LIST_FORMATS = ("snap", "edge_list")
DEFAULT_SYMMETRIZE = {"edge_list": True}
DEFAULT_ONE_BASED = {"edge_list": True, "snap": False}
WEIGHT_MODES = ("random", "file")
LOCAL_RADIUS_DIVISOR = 8
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_STRIPPED_SUFFIXES = (".gz", ".tgz", ".tar", ".mtx", ".txt", ".gr", ".edges")


class GraphFileError(ValueError):
    """Bad ``--graph-file`` arguments (exit 2); the message names the option and the value."""


@dataclass(frozen=True)
class GraphFileSpec:
    path: Path
    name: str
    format: str
    symmetrize: bool
    one_based: bool | None  # None: the format fixes the id base
    weights: str
    source: int
    local_radius: int | None  # None: derived from the graph's facts
    sha256: str | None = None  # the file's digest, once hashed (:func:`identified`)

    def reader_options(self) -> dict:
        """What the reader is told (the list readers symmetrize and shift ids themselves)."""
        if self.format in LIST_FORMATS:
            return {"one_based": self.one_based, "symmetrize": self.symmetrize}
        return {}

    def origin(self) -> dict:
        if self.sha256 is None:
            raise ValueError(f"the origin of {self.path} needs its SHA-256: identified(spec) first")
        return {"kind": "file", "path": str(self.path.resolve()), "name": self.name, "format": self.format,
                "reader_version": READER_VERSION, "sha256": self.sha256, "symmetrize": self.symmetrize,
                "one_based": self.one_based, "weights": self.weights}

    def identity(self) -> dict:
        """What makes the file the graph measured, wherever it lies: its origin but the path, the
        source and the local radius option (the campaign parameters; --resume refuses a change)."""
        return {**{k: v for k, v in self.origin().items() if k != "path"}, "source": self.source,
                "local_radius": self.local_radius}

    def options_argv(self) -> list[str]:
        """The options that read the file as this graph, every one spelled out (the records keep
        them, so the reproduce commands are rendered from the records)."""
        argv = ["--name", self.name, "--format", self.format,
                "--symmetrize" if self.symmetrize else "--no-symmetrize"]
        if self.one_based is not None:
            argv.append("--one-based" if self.one_based else "--zero-based")
        argv += ["--weights", self.weights, "--source", str(self.source)]
        if self.local_radius is not None:
            argv += ["--local-radius", str(self.local_radius)]
        return argv

    def weight_record(self) -> dict:
        return {"from": "random", **WEIGHT_PARAMS} if self.weights == "random" else {"from": "file"}


def default_name(path: Path) -> str:
    """The file's name without its format and compression suffixes (``ego-Facebook.txt.gz`` ->
    ``ego-Facebook``)."""
    name = path.name
    while True:
        lower = name.lower()
        suffix = next((s for s in _STRIPPED_SUFFIXES if lower.endswith(s) and len(name) > len(s)), None)
        if suffix is None:
            return name
        name = name[: -len(suffix)]


def make_spec(path, *, name=None, format=None, symmetrize=None, one_based=None, weights="random",
              source=0, local_radius=None) -> GraphFileSpec:
    """Check the ``--graph-file`` options together; GraphFileError names the one that is wrong."""
    path = Path(path)
    if not os.path.lexists(path):  # not exists(): a symlink loop is there, and check_present names it
        raise GraphFileError(f"--graph-file {path}: no such file or folder")
    try:
        fmt = format_of(path, format)
    except (FileFormatError, InvalidArgumentError) as exc:
        raise GraphFileError(f"--graph-file: {exc}") from None
    if fmt == "mosp" and not path.is_dir():
        raise GraphFileError(f"--graph-file {path}: --format mosp needs a MOSP folder, not a file")
    if fmt != "mosp" and path.is_dir():
        raise GraphFileError(f"--graph-file {path}: a folder is a MOSP CSR folder; --format {fmt} needs a file")
    try:
        check_present(path, fmt)
    except FileFormatError as exc:
        raise GraphFileError(f"--graph-file: {exc}") from None
    if one_based is not None and fmt not in LIST_FORMATS:
        fixed = "zero-based" if fmt == "mosp" else "one-based"
        raise GraphFileError(f"--one-based/--zero-based: only for edge lists and SNAP files; {fmt} ids are "
                             f"{fixed} by definition ({path})")
    if symmetrize and fmt == "mosp":
        raise GraphFileError(f"--symmetrize: a MOSP folder is measured as stored ({path})")
    if weights not in WEIGHT_MODES:
        raise GraphFileError(f"--weights {weights!r}: expected one of {', '.join(WEIGHT_MODES)}")
    name = default_name(path) if name is None else name
    if not NAME_PATTERN.match(name):
        raise GraphFileError(f"--name {name!r}: a graph name is letters, digits and _ . + - (it names "
                             "records and cells); pass --name NAME")
    if source is None or source < 0:
        raise GraphFileError(f"--source {source}: a vertex id is >= 0")
    if local_radius is not None and local_radius < 1:
        raise GraphFileError(f"--local-radius {local_radius}: at least 1 hop")
    symmetrize = DEFAULT_SYMMETRIZE.get(fmt, False) if symmetrize is None else bool(symmetrize)
    if fmt in LIST_FORMATS and one_based is None:
        one_based = DEFAULT_ONE_BASED[fmt]
    return GraphFileSpec(path, name, fmt, symmetrize, one_based, weights, int(source), local_radius)


# -- the command line -----------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("bring your own graph")
    g.add_argument("--graph-file", metavar="PATH", default=None,
                   help="measure this graph file or MOSP folder (Matrix Market, SNAP, DIMACS, edge list)")
    g.add_argument("--name", default=None, help="its name in the records (default: the file name without suffixes)")
    g.add_argument("--format", choices=tuple(FORMATS), default=None,
                   help="the file's format when its name does not say (e.g. edge_list for a headerless .mtx)")
    g.add_argument("--symmetrize", action=argparse.BooleanOptionalAction, default=None,
                   help="store both directions of every edge (default: yes for edge lists, no otherwise)")
    base = g.add_mutually_exclusive_group()
    base.add_argument("--one-based", dest="one_based", action="store_true", default=None,
                      help="ids start at 1 (edge lists, SNAP; default for edge lists)")
    base.add_argument("--zero-based", dest="one_based", action="store_false",
                      help="ids start at 0 (default for SNAP)")
    g.add_argument("--weights", choices=WEIGHT_MODES, default="random",
                   help=f"random: {describe_weights()}, like the gates (default); "
                        "file: the file's own integer weights")
    g.add_argument("--source", type=int, default=0, help="source vertex (default 0)")
    g.add_argument("--local-radius", type=int, default=None, metavar="HOPS",
                   help="radius of the local batch (default: hop-diameter lower bound / 8)")


FILE_ONLY_OPTIONS = ("name", "format", "symmetrize", "one_based", "local_radius")


def spec_from_args(args) -> GraphFileSpec | None:
    """The spec of ``--graph-file`` (None without it); GraphFileError for bad combinations."""
    if args.graph_file is None:
        given = [o for o in FILE_ONLY_OPTIONS if getattr(args, o) is not None]
        if args.weights != "random":
            given.append("weights")
        if args.source != 0:
            given.append("source")
        if given:
            flags = ", ".join("--" + o.replace("_", "-") for o in given)
            raise GraphFileError(f"{flags} describe a --graph-file; none was given")
        return None
    return make_spec(args.graph_file, name=args.name, format=args.format, symmetrize=args.symmetrize,
                     one_based=args.one_based, weights=args.weights, source=args.source,
                     local_radius=args.local_radius)


def argv_of(spec: GraphFileSpec | None) -> list[str]:
    """``--graph-file PATH`` and its options, for the campaign's reproduce command (the path as
    typed, or relative to the repository root when inside it: :func:`protocol.reproduce.line_path`)."""
    from protocol.reproduce import line_path

    if spec is None:
        return []
    return ["--graph-file", line_path(spec.path), *spec.options_argv()]


def identified(spec: GraphFileSpec) -> GraphFileSpec:
    """The spec with the file's SHA-256; FileFormatError when it is missing or cannot be read."""
    if spec.sha256 is not None:
        return spec
    return replace(spec, sha256=input_sha256(spec.path, spec.format))


# -- reading and planning -------------------------------------------------------------------------
# What a list format's columns are, for the message when --weights file meets a list with more
# than two: neither format has a weight column, so a third column is never read as weights.
_LIST_COLUMNS = {
    "snap": "a SNAP list is 'FromNodeId ToNodeId' a line; a further column (a timestamp, a sign) is not a weight",
    "edge_list": "an edge list is 'u v' a line; further columns are not read",
}
_COMMENT = {"snap": "#", "edge_list": "#"}


def _no_weights(spec: GraphFileSpec, retry: str) -> InputError:
    """--weights file on a file without a weight column, saying what its extra columns are not."""
    if spec.format in _LIST_COLUMNS:
        first = first_data_line(spec.path, _COMMENT[spec.format])
        if first is not None and len(first[1].split()) > 2:
            number, text = first
            return InputError(
                f"{spec.path}, line {number}: --weights file, but {text!r} has {len(text.split())} columns and "
                f"{_LIST_COLUMNS[spec.format]}; to measure weights of your own, write the file as DIMACS "
                f"('a u v w') or an integer Matrix Market file{retry}")
    what = "a pattern matrix" if spec.format == "matrix_market" else f"{article(spec.format)} {spec.format} file"
    return InputError(f"{spec.path}: --weights file, but it carries no weights ({what}){retry}")


def _first_bad_weight(weights: np.ndarray) -> int | None:
    """Edge index of the first weight that is not an integer in [1, WEIGHT_MAX] (None: all are)."""
    values = weights.reshape(weights.shape[0], -1)
    bad = ~np.isfinite(values) | (values != np.trunc(values)) | (values < 1) | (values > WEIGHT_MAX)
    rows = np.flatnonzero(bad.any(axis=1))
    return int(rows[0]) if rows.size else None


def _bad_weight(spec: GraphFileSpec, parsed, edge: int, retry: str) -> InputError:
    """A refused weight named by the file line it comes from, the entry as written."""
    u, v = int(parsed.src[edge]), int(parsed.dst[edge])
    value = parsed.weights[edge]
    shown = value.item() if hasattr(value, "item") else value
    rule = f"a weight must be an integer in [1, {WEIGHT_MAX}]"
    source = edge_source(spec.path, spec.format, u, v)
    if source is None:
        return InputError(f"{spec.path}: --weights file: the edge {u + 1} -> {v + 1} (ids as in the file) has "
                          f"the weight {shown}; {rule}{retry}")
    where = f"{spec.path}, line {source.line}"
    if not source.reverse:
        return InputError(f"{where}: --weights file: the entry {source.text!r} gives the edge {u + 1} -> {v + 1} "
                          f"the weight {shown}; {rule}{retry}")
    why = ("the file is skew-symmetric, so the reverse holds the negated value"
           if source.symmetry == "skew-symmetric" else "the reverse of every edge is stored")
    return InputError(f"{where}: --weights file: the entry {source.text!r} also gives the reverse edge "
                      f"{u + 1} -> {v + 1} ({why}) the weight {shown}; {rule}{retry}")


def _file_weights(spec: GraphFileSpec, parsed):
    """The file's own weights for ``--weights file``, ``(m, K)`` int64, checked as the engines
    check them (:func:`engines.arguments.weight_matrix`); a refused weight is named by its line."""
    retry = f"; use --weights random to draw K = {NUM_OBJECTIVES} weights instead"
    if parsed.weights is None:
        raise _no_weights(spec, retry)
    if parsed.weights.dtype.kind == "c":
        raise InputError(f"{spec.path}: --weights file, but its values are complex{retry}")
    if parsed.weights.dtype.kind in "iuf" and parsed.weights.shape[0] == parsed.num_edges:
        edge = _first_bad_weight(parsed.weights)
        if edge is not None:
            raise _bad_weight(spec, parsed, edge, retry)
    try:
        return weight_matrix(parsed.weights, "weights", parsed.num_edges, f"there are {parsed.num_edges} edges")
    except InvalidArgumentError as exc:
        raise InputError(f"{spec.path}: --weights file: {exc}{retry}") from None


def weight_columns(spec: GraphFileSpec, *, cache_dir=None) -> int:
    """The objectives a graph file measures: K = NUM_OBJECTIVES drawn weights, or the number of
    weight columns of the file itself (``--weights file``; read through the parse cache, so the
    preparation that follows reads it again for free). Refused weights raise ``InputError``."""
    if spec.weights != "file":
        return NUM_OBJECTIVES
    parsed, _ = read_graph_cached(spec.path, format=spec.format, options=spec.reader_options(),
                                  cache_dir=default_cache_dir(cache_dir), sha256=spec.sha256)
    return int(_file_weights(spec, parsed).shape[1])


def _gate_check(spec: GraphFileSpec, num_vertices: int, num_edges: int) -> None:
    from .gates import GATES

    gate = GATES.get(spec.name)
    if gate is None:
        return
    mismatch = gate.real_file_mismatch(num_vertices, num_edges)
    if mismatch:
        raise InputError(f"{spec.path}: refused as {spec.name}: {mismatch}, so it is another graph; "
                         "give it its own name with --name NAME")


def local_radius(spec: GraphFileSpec, facts: dict) -> int:
    if spec.local_radius is not None:
        return spec.local_radius
    return max(1, math.ceil(facts["hop_diameter_lower_bound"] / LOCAL_RADIUS_DIVISOR))


def graph_file_plan(spec: GraphFileSpec, *, cache_root: Path, shown: Progress) -> InputPlan:
    from .tree_check import check_initial_trees

    if spec.sha256 is None:
        with shown.step(spec.name, f"hashing {spec.path.name}"):
            spec = identified(spec)
    origin = spec.origin()
    key = cache_key({"graph_file": spec.name, "origin": {k: v for k, v in origin.items() if k != "path"},
                "weights": spec.weight_record(), "source": spec.source, "prepare_version": PREPARE_VERSION})

    def build():
        with shown.step(spec.name, f"reading {spec.path.name} ({spec.format})"):
            parsed, _ = read_graph_cached(spec.path, format=spec.format, options=spec.reader_options(),
                                          cache_dir=cache_root, sha256=spec.sha256)
            if spec.symmetrize and spec.format not in LIST_FORMATS:
                parsed = symmetrized(parsed)
        _gate_check(spec, parsed.num_vertices, parsed.num_edges)
        row_ptr, col_ind = csr_within_memory(parsed.num_vertices, parsed.src, parsed.dst, label=str(spec.path))
        weights = _file_weights(spec, parsed) if spec.weights == "file" else None
        return row_ptr, col_ind, weights

    facts = {"graph_file": {"path": origin["path"], "format": spec.format, "sha256": spec.sha256,
                            "symmetrize": spec.symmetrize, "one_based": spec.one_based,
                            "options": spec.options_argv()},
             "kind": "file", "is_standin": False, "weights": spec.weight_record(), "cache_key": key,
             "local_radius_rule": ("--local-radius" if spec.local_radius is not None
                                   else f"hop_diameter_lower_bound / {LOCAL_RADIUS_DIVISOR}, at least 1")}
    return InputPlan(name=spec.name, label=str(spec.path), origin=origin, key=key, build=build,
                     source=spec.source, radius=lambda f: local_radius(spec, f), facts=facts,
                     tree_check=check_initial_trees)


def prepare_graph_file(spec: GraphFileSpec, *, cache_dir=None, progress: bool = True, with_trees: bool = True,
                       with_batches: bool = True):
    """Everything the graph file needs (a ``bench.prepare.PreparedGate``), built where missing and
    cached. Raises FileFormatError (a malformed or unreadable file), InputError (a file that
    cannot be measured, or that is not the gate it is named after), TreeCheckError (a wrong tree)
    and bench.host_memory.NotEnoughMemory (a graph too large for this host)."""
    cache_root = default_cache_dir(cache_dir)
    shown = Progress(progress)
    plan = graph_file_plan(spec, cache_root=cache_root, shown=shown)
    return prepare_plan(plan, cache_root=cache_root, shown=shown, with_trees=with_trees, with_batches=with_batches)


__all__ = ["GraphFileSpec", "GraphFileError", "make_spec", "add_arguments", "spec_from_args", "argv_of",
           "identified", "prepare_graph_file", "default_name", "local_radius"]
