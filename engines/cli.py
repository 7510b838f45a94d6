"""Command line: one shortest-path update (or a compute) from files.

    python -m engines.cli update --graph G --batch B [--distances D --parents P] --source S
                                 [--objective K] [--engine CONFIG | --backend host|cuda|auto
                                 --cuda-engine automatic|fused|operators] --out OUT [--write-graph] [--json]
    python -m engines.cli compute --graph G --source S [--objective K] [--backend ...] --out OUT

Inputs, by path:

- ``--graph``: a MOSP folder (``graphCsrRowPtr.txt``, ``graphCsrColInd.txt``, ``graphCsrValues.txt``)
  or a project state file ``.npz`` with ``row_ptr``, ``col_ind``, ``weights`` (``(m, K)``, ``(m,)`` or
  objective-major ``(K*m,)``) and optionally the tree: ``distances``, ``parents``, ``source``,
  ``objective`` (and the ``statistics`` an output wrote; any other key is refused).
- ``--batch``: a MOSP folder (``insert.txt``: ``u v w1..wK``; ``delete.txt``: ``u v``; a missing file
  means no changes of that kind) or an ``.npz`` with ``insert_src``, ``insert_dst``,
  ``insert_weights``, ``delete_src``, ``delete_dst`` (missing keys: none; any other key is refused).
- the input tree: from the state ``.npz``, or ``--distances``/``--parents`` (MOSP distance and tree
  files, one value a line), else ``compute()`` on the graph before the batch. It is imported with
  ``Result.from_arrays`` (validated and canonicalized unless ``--no-validate``/``--keep-parents``).

Output ``--out``: a path ending in ``.npz`` receives the state after the update (graph, tree, source,
objective, and the statistics as JSON), which ``--graph`` reads back for the next update; any other
path is a folder receiving ``distances.txt`` and ``tree.txt`` (and the MOSP CSR files of the new
graph with ``--write-graph``). The statistics are printed (a table, or one JSON object with ``--json``).

Exit status: 0 done; 2 bad input or arguments (``FileFormatError``, ``InvalidArgumentError``, an
``--out`` that cannot be written, checked before any work; the message names the problem); 3 the
requested backend or engine cannot run here (no GPU, no cooperative launch); 1 any other engine
failure (out of memory included). Only an internal error (a bug) prints a traceback, and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import zipfile
from pathlib import Path

from . import interrupt  # standard library only: before the heavy imports

interrupt.guard(__name__, "engines.cli")

import numpy as np  # noqa: E402

from . import Batch, Graph, errors, sssp
from .arguments import beyond_int64, integer_dtype
from .config import EngineConfig
from .exitcodes import ExitCode
from .io import mosp
from .io._text import regular_file_problem
from .io.outputs import output_problem
from .sssp.options import CUDA_ENGINES

DISTANCES_FILE = "distances.txt"
TREE_FILE = "tree.txt"


@dataclasses.dataclass
class GraphInput:
    graph: Graph
    distances: np.ndarray | None = None
    parents: np.ndarray | None = None
    source: int | None = None
    objective: int | None = None


def _load_npz(path: Path, expected: str) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz``; ``expected`` says what else the argument may be, for the message
    when the path is neither (a text file where a folder or an archive belongs)."""
    problem = regular_file_problem(path)
    if problem is not None:
        raise errors.FileFormatError(f"{path}: {problem}")
    if not zipfile.is_zipfile(path):
        raise errors.FileFormatError(f"{path}: not a readable .npz file: it is neither {expected} nor an "
                                     ".npz archive (a zip of NumPy arrays)")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise errors.FileFormatError(f"{path}: not a readable .npz file ({exc})") from exc


def _require(data: dict, keys, path: Path) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise errors.FileFormatError(f"{path}: missing array(s) {', '.join(missing)}")


#: The arrays of a state .npz: what write_output writes (the statistics are never read back).
STATE_KEYS = ("row_ptr", "col_ind", "weights", "distances", "parents", "source", "objective", "statistics")


def _refuse_unknown_keys(data: dict, known, what: str, path: Path) -> None:
    """An .npz key the reader does not know is refused: a misspelt one (delete_source, objectiv)
    would leave its array unread without a word, and the run go on without its changes or setting."""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise errors.FileFormatError(f"{path}: unknown array(s) {', '.join(unknown)}; {what} .npz holds "
                                     f"{', '.join(sorted(known))}")


def _int_array(data: dict, key: str, path: Path) -> np.ndarray:
    arr = np.asarray(data[key])
    if arr.size and not integer_dtype(arr.dtype):  # not timedelta64, which NumPy files as an integer
        raise errors.FileFormatError(f"{path}: array {key} must hold integers, got dtype {arr.dtype}")
    # unsigned values from 2^63 would wrap to negative ones (a uint64 2^64 - 1 parent to -1, "none")
    huge = beyond_int64(arr)
    if huge is not None:
        raise errors.FileFormatError(f"{path}: array {key} holds {huge} (dtype {arr.dtype}), "
                                     f"beyond the int64 values read (at most {np.iinfo(np.int64).max})")
    return arr.astype(np.int64, copy=False)


def _scalar(data: dict, key: str, path: Path) -> int | None:
    if key not in data:
        return None
    arr = _int_array(data, key, path)
    if arr.size != 1:
        raise errors.FileFormatError(f"{path}: {key} must be one integer, got shape {arr.shape}")
    return int(arr.reshape(-1)[0])


def per_edge_weights(weights: np.ndarray, num_edges: int, path: Path) -> np.ndarray:
    """The flat objective-major ``(K*m,)`` layout of ``Graph.weights`` as ``(m, K)``; ``(m, K)`` and
    ``(m,)`` pass unchanged to ``Graph.from_csr``, which checks them."""
    if weights.ndim != 1 or num_edges == 0 or weights.size == num_edges:
        return weights
    if weights.size % num_edges:
        raise errors.FileFormatError(f"{path}: {weights.size} weights do not fit {num_edges} edges")
    return np.ascontiguousarray(weights.reshape(-1, num_edges).T)


def read_graph(path: Path) -> GraphInput:
    """A MOSP folder or a state ``.npz`` (graph, optionally with its tree)."""
    path = Path(path)
    if path.is_dir():
        row_ptr, col_ind, weights = mosp.read_csr(path)
        return GraphInput(Graph.from_csr(row_ptr, col_ind, weights))
    data = _load_npz(path, f"a MOSP folder ({mosp.ROW_PTR_FILE}, {mosp.COL_IND_FILE}, {mosp.VALUES_FILE})")
    _require(data, ("row_ptr", "col_ind", "weights"), path)
    _refuse_unknown_keys(data, STATE_KEYS, "a state", path)
    col_ind = _int_array(data, "col_ind", path)
    weights = per_edge_weights(_int_array(data, "weights", path), col_ind.size, path)
    graph = Graph.from_csr(_int_array(data, "row_ptr", path), col_ind, weights)
    found = GraphInput(graph, source=_scalar(data, "source", path), objective=_scalar(data, "objective", path))
    if ("distances" in data) != ("parents" in data):
        raise errors.FileFormatError(f"{path}: a tree needs both distances and parents")
    if "distances" in data:
        found.distances = _int_array(data, "distances", path)
        found.parents = _int_array(data, "parents", path)
    return found


def read_batch(path: Path, num_weights: int) -> Batch:
    path = Path(path)
    if path.is_dir():
        if not any((path / f).is_file() for f in (mosp.INSERT_FILE, mosp.DELETE_FILE)):
            raise errors.FileFormatError(f"{path}: neither {mosp.INSERT_FILE} nor {mosp.DELETE_FILE} found")
        return Batch(*mosp.read_batch(path, num_weights=num_weights))
    data = _load_npz(path, f"a MOSP folder ({mosp.INSERT_FILE}, {mosp.DELETE_FILE})")
    known = {"insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst"}
    if not known & set(data):
        raise errors.FileFormatError(f"{path}: no batch arrays ({', '.join(sorted(known))})")
    _refuse_unknown_keys(data, known, "a batch", path)
    get = {k: _int_array(data, k, path) if k in data else np.zeros(0, np.int64) for k in known}
    weights = get["insert_weights"]
    if "insert_weights" not in data:
        inserted = max(get["insert_src"].size, get["insert_dst"].size)
        if inserted:  # zeros filled in here would be refused as weights the file never held
            raise errors.FileFormatError(
                f"{path}: lacks the key insert_weights: its {inserted} insertion(s) (insert_src, insert_dst) "
                f"need K = {num_weights} weights each")
        weights = np.zeros((0, num_weights), np.int64)
    return Batch(get["insert_src"], get["insert_dst"], weights, get["delete_src"], get["delete_dst"])


def _input_tree(args, found: GraphInput):
    if args.distances or args.parents:
        if not (args.distances and args.parents):
            raise errors.InvalidArgumentError("--distances and --parents go together")
        n = found.graph.num_vertices
        return (mosp.read_distances(args.distances, num_vertices=n),
                mosp.read_tree(args.parents, num_vertices=n).astype(np.int64))
    if found.distances is not None:
        return found.distances, found.parents
    return None


def _resolve(args, found: GraphInput) -> tuple[int, int]:
    source = args.source if args.source is not None else found.source
    if source is None:
        raise errors.InvalidArgumentError("--source is required (the graph file names none)")
    objective = args.objective if args.objective is not None else (found.objective or 0)
    n, k = found.graph.num_vertices, found.graph.num_weights
    given = "--source" if args.source is not None else f"the source stored in {args.graph}"
    if not 0 <= source < n:
        which = f" (n = {n}, ids 0 .. {n - 1})" if n else ": it has none (n = 0)"
        raise errors.InvalidArgumentError(f"{given} {source} is not a vertex of the graph{which}")
    given = "--objective" if args.objective is not None else f"the objective stored in {args.graph}"
    if not 0 <= objective < k:
        raise errors.InvalidArgumentError(f"{given} {objective} is out of range [0, {k}): the graph has "
                                          f"{k} weight column{'s' if k != 1 else ''}")
    stored_tree = found.distances is not None and not (args.distances or args.parents)
    for name, given, stored in (("source", args.source, found.source), ("objective", args.objective, found.objective)):
        # the stored tree is imported as the tree of the given source and objective: another one's
        # tree would be updated and written as theirs (an objective's distances under another's name)
        if stored_tree and given is not None and stored is not None and given != stored:
            raise errors.InvalidArgumentError(
                f"--{name} {given} differs from the {name} {stored} of the tree stored in {args.graph}")
    return int(source), int(objective)


def _engine_options(args) -> dict:
    """The Options that select the engine; sets ``args.backend``. ``--engine`` (an engines.config
    spelling: host, cuda:fused, cuda:operators-host+vertex ...) replaces ``--backend`` and
    ``--cuda-engine``; InvalidArgumentError (exit 2) when it does not parse or both are given."""
    if args.engine is None:
        args.backend = args.backend or "host"
        return dict(cuda_engine=args.cuda_engine or "automatic")
    if args.backend is not None or args.cuda_engine is not None:
        raise errors.InvalidArgumentError("--engine names the backend and the CUDA engine: give it without "
                                          "--backend and --cuda-engine")
    config = EngineConfig.parse(args.engine)
    args.backend = config.backend
    return config.options


def _options(args, objective: int, engine_options: dict) -> dict:
    return dict(engine_options, objective=objective, delta=args.delta)


def write_output(out: Path, graph: Graph, result: sssp.Result, source: int, objective: int, report: dict,
                 *, write_graph: bool) -> list[Path]:
    d, p = result.to_numpy()
    out = Path(out)
    m, K = graph.num_edges, graph.num_weights
    if out.suffix == ".npz":
        out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(out, row_ptr=np.asarray(graph.row_ptr), col_ind=np.asarray(graph.col_ind),
                            weights=np.asarray(graph.weights).reshape(K, m).T, distances=d, parents=p,
                            source=np.int64(source), objective=np.int64(objective),
                            statistics=np.frombuffer(json.dumps(report).encode(), dtype=np.uint8))
        return [out]
    out.mkdir(parents=True, exist_ok=True)
    mosp.write_distances(out / DISTANCES_FILE, d)
    mosp.write_tree(out / TREE_FILE, p)
    written = [out / DISTANCES_FILE, out / TREE_FILE]
    if write_graph:
        mosp.write_csr(out, graph.row_ptr, graph.col_ind, graph.weights)
        written += [out / mosp.ROW_PTR_FILE, out / mosp.COL_IND_FILE, out / mosp.VALUES_FILE]
    return written


def check_output(out: Path) -> None:
    """Refuse an ``--out`` that cannot be written before any work (nothing is created here)."""
    problem = output_problem(out, folder=Path(out).suffix != ".npz")
    if problem:
        raise errors.InvalidArgumentError(f"--out: {problem}")


def _same_path(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file or folder (links and ``..`` resolved; a path that does not
    exist yet is compared by its resolved name)."""
    try:
        return a.exists() and b.exists() and a.samefile(b) or a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # Python 3.11 resolve() raises RuntimeError on a link loop
        return False  # not one file: the reader then names the loop


def _inputs(args) -> list[tuple[str, Path]]:
    return [(f"--{name}", Path(getattr(args, name))) for name in ("graph", "batch", "distances", "parents")
            if getattr(args, name, None) is not None]


def _written_paths(out: Path, write_graph: bool) -> list[Path]:
    """What ``write_output`` writes for ``out`` (a state ``.npz``, or the files of a folder)."""
    if out.suffix == ".npz":
        return [out]
    names = [DISTANCES_FILE, TREE_FILE] + ([mosp.ROW_PTR_FILE, mosp.COL_IND_FILE, mosp.VALUES_FILE]
                                          if write_graph else [])
    return [out] + [out / name for name in names]


def check_not_an_input(args) -> None:
    """Refuse an ``--out`` that is (or would overwrite) one of the command's inputs: the output
    would replace the graph, batch or tree it was computed from, without a word (issue 28)."""
    out = Path(args.out)
    for written in _written_paths(out, getattr(args, "write_graph", False)):
        for flag, given in _inputs(args):
            if _same_path(written, given):
                what = "is the same as" if written == out else f"would overwrite ({written.name})"
                raise errors.InvalidArgumentError(
                    f"--out {out} {what} {flag} {given}: the output would replace the command's own "
                    "input; choose another --out")


def run(args) -> dict:
    """Do the work of one command; returns the report printed at the end."""
    engine_options = _engine_options(args)
    check_output(Path(args.out))
    check_not_an_input(args)
    found = read_graph(args.graph)
    graph = found.graph
    source, objective = _resolve(args, found)
    opts = _options(args, objective, engine_options)
    report = dict(command=args.command, backend=args.backend, source=source, objective=objective,
                  num_vertices_before=graph.num_vertices, num_edges_before=graph.num_edges)
    if args.command == "compute":
        start = time.perf_counter()
        result = sssp.compute(graph, source, backend=args.backend, **opts)
        report["seconds"] = time.perf_counter() - start
        report["statistics"] = dataclasses.asdict(result.stats)
    else:
        batch = read_batch(args.batch, graph.num_weights)
        tree = _input_tree(args, found)
        if tree is None:
            result = sssp.compute(graph, source, backend=args.backend, **opts)
            report["input_tree"] = "computed"
        else:
            result = sssp.Result.from_arrays(graph, source, tree[0], tree[1], canonicalize=not args.keep_parents,
                                             validate=not args.no_validate, backend=args.backend, **opts)
            report["input_tree"] = "imported"
        start = time.perf_counter()
        stats = sssp.update(graph, batch, result)
        report["seconds"] = time.perf_counter() - start
        report["statistics"] = dataclasses.asdict(stats)
    report.update(num_vertices=graph.num_vertices, num_edges=graph.num_edges,
                  reachable=int((np.asarray(result.to_numpy()[0]) < sssp.INFINITE_DISTANCE).sum()))
    written = write_output(Path(args.out), graph, result, source, objective, report,
                           write_graph=getattr(args, "write_graph", False))
    report["written"] = [str(p) for p in written]
    return report


def print_report(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, sort_keys=True))
        return
    rows = {k: v for k, v in report.items() if k not in ("statistics", "written")}
    stats = dict(report["statistics"])
    batch = stats.pop("batch", None) or {}
    fields = [(key, f"{value:.6f}" if isinstance(value, float) else str(value))
              for key, value in list(rows.items()) + list(stats.items()) + [(f"batch.{k}", v) for k, v in batch.items()]]
    title = f"engines {report['command']}"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        # rich comes with the A/B service's extra, not with the base install (`pip install -e .`
        # is the engines and their readers): the same fields as plain aligned text
        width = max(len(key) for key, _ in fields)
        print(title)
        for key, text in fields:
            print(f"{key:<{width}}  {text}")
        print("wrote " + ", ".join(report["written"]))
        return
    table = Table(title=title, show_header=False)
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, text in fields:
        table.add_row(key, text)
    console = Console(highlight=False)
    console.print(table)
    console.print("wrote " + ", ".join(report["written"]))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engines.cli", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("update", "apply a batch and update the shortest-path tree"),
                       ("compute", "compute the shortest-path tree from scratch")):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--graph", required=True, type=Path, help="MOSP folder or state .npz")
        if name == "update":
            p.add_argument("--batch", required=True, type=Path, help="MOSP folder (insert.txt, delete.txt) or .npz")
            p.add_argument("--distances", type=Path, help="input distance file (MOSP, one value a line)")
            p.add_argument("--parents", type=Path, help="input tree file (MOSP, one parent a line, -1 for none)")
            p.add_argument("--keep-parents", action="store_true",
                           help="import the tree as given (Result.from_arrays canonicalize=False)")
            p.add_argument("--no-validate", action="store_true", help="skip the imported tree's validation")
            p.add_argument("--write-graph", action="store_true", help="also write the new graph (folder output)")
        p.add_argument("--source", type=int, help="source vertex (default: the one stored in the .npz)")
        p.add_argument("--objective", type=int, help="weight column (default: stored, else 0)")
        p.add_argument("--engine", metavar="CONFIG",
                       help="engine configuration (host, cuda, cuda:fused, cuda:operators, cuda:operators-host, "
                            "optionally +vertex/+group/+batched, +graph/+python): replaces --backend and --cuda-engine")
        p.add_argument("--backend", choices=("host", "cuda", "auto"), default=None, help="default host")
        p.add_argument("--cuda-engine", choices=CUDA_ENGINES, default=None, help="default automatic")
        p.add_argument("--delta", type=int, default=0, help="near-far width (0: the default formula)")
        p.add_argument("--out", required=True, type=Path, help="output .npz (state) or folder (MOSP text)")
        p.add_argument("--json", action="store_true", help="print the statistics as one JSON object")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        report = run(args)
    except errors.NotSupportedError as exc:
        print(f"error: cannot run here: {exc}", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    except (errors.FileFormatError, errors.InvalidArgumentError) as exc:
        print(f"error: bad input: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except errors.Error as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    except OSError as exc:  # the environment: an output that could not be written after all
        print(f"error: cannot write the output: {errors.os_error_text(exc)}", file=sys.stderr)
        return ExitCode.USAGE
    except MemoryError as exc:
        print(f"error: OutOfMemoryError: not enough host memory ({exc})", file=sys.stderr)
        return ExitCode.FAILURE
    except Exception as exc:  # a bug: the traceback helps whoever fixes it
        errors.print_internal_error("error: ", exc, package="the engines")
        return ExitCode.FAILURE
    print_report(report, args.json)
    return ExitCode.OK


if __name__ == "__main__":
    interrupt.run(main)
