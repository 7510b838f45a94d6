"""compute() and update(): the checks, the batch commit and the engine dispatch
(docs/algorithm.md §6, §8, §10).

Host and CUDA engines share everything here; only the engine body differs. Every check that can
fail before the commit runs before ``Graph.apply``; after it, a failure poisons only the result
it concerns (algorithm.md §8.5), and the first such error is raised once every result has been
handled.
"""

from __future__ import annotations

import numpy as np

from ..arguments import vertex_id
from ..errors import (CudaError, Error, InternalError, InvalidArgumentError, NotSupportedError,
                      OutOfMemoryError, StaleResultError)
from ..graph import Graph
from .backends import cuda_module, grow_arrays, resolve_backend
from .packing import check_size, decide_packing, default_delta
from .kept import Kept
from .plan import ChangeLists, EngineReport, Plan
from .options import Options, resolve_options
from .result import Result, Stats


def _check_graph(graph) -> None:
    if not isinstance(graph, Graph):
        raise InvalidArgumentError(f"expected an engines.Graph, got {type(graph).__name__}")


def _stats(report: EngineReport, packed: bool, batch_summary) -> Stats:
    return Stats(
        invalidated=int(report.invalidated),
        affected=int(report.affected),
        iterations=int(report.iterations),
        epochs=int(report.epochs),
        pushes=int(report.pushes),
        packed_parents=bool(packed),
        engine_used=report.engine_used,
        host_syncs=int(report.host_syncs),
        sync_budget=int(report.sync_budget),
        batch=batch_summary,
        grid_syncs=None if report.grid_syncs is None else int(report.grid_syncs),
    )


def _select_engine(backend: str, opts: Options, device) -> str:
    if backend == "host":
        return "host"
    return cuda_module().select_engine(opts.cuda_engine, device)


_PROBE_CALLS = ("engine_start", "engine_stop")


def _check_probe(probe) -> None:
    """update()'s ``probe`` (a timing hook: bench/) before the commit: one without its two calls
    failed only inside the run, after the commit, poisoning the result as an InternalError."""
    missing = [name for name in _PROBE_CALLS if not callable(getattr(probe, name, None))]
    if missing:
        raise InvalidArgumentError(
            f"probe must be None or have callable {' and '.join(missing)}, got {type(probe).__name__}")


def _call_probe(probe, name: str, stream) -> None:
    if probe is not None:
        getattr(probe, name)(stream)


def _wrap_device_errors(exc: Exception) -> Error:
    """Map stray CuPy/CUDA exceptions to the D5 classes (engines map their own where they can)."""
    if isinstance(exc, Error):
        return exc
    name = type(exc).__name__
    on_device = "cupy" in type(exc).__module__ or "cuda" in type(exc).__module__
    if "OutOfMemory" in name or (isinstance(exc, MemoryError) and on_device):
        return OutOfMemoryError(f"device allocation failed: {exc}")
    if isinstance(exc, MemoryError):  # NumPy's, on the host
        return OutOfMemoryError(f"not enough host memory: {exc or 'MemoryError'}")
    if "CUDA" in name or "Cuda" in name or "NVRTC" in name or on_device:
        return CudaError(f"CUDA failure: {exc}")
    return InternalError(f"unexpected {name} in the engine: {exc}")


# -- compute ------------------------------------------------------------------------------------


def compute(graph, source, *, backend: str = "host", options: Options | None = None, **overrides) -> Result:
    """Shortest-path tree from scratch: the canonical tree with lowest-id ties (algorithm.md §6)."""
    _check_graph(graph)
    opts = resolve_options(options, overrides, graph.num_weights)
    backend = resolve_backend(backend)
    n = graph.num_vertices
    source = vertex_id(source, "source", n)
    k = opts.objective
    max_w = max(1, graph.max_weight(k))
    check_size(max_w, n)
    delta = opts.delta or default_delta(n, graph.num_edges, graph.weight_sum(k))
    plan = Plan(source=source, objective=k, num_vertices=n, max_weight=max_w, delta=delta,
                packing=decide_packing(max_w, n), push_expansion=opts.push_expansion)
    if backend == "host":
        from . import host

        d, p, report = host.compute(graph, plan)
        return _known(Result(graph, source, d, p, backend="host", device=None, options=opts,
                             stats=_stats(report, plan.packed, None)))
    cuda = cuda_module()
    device = cuda.current_device()
    engine = _select_engine("cuda", opts, device)
    try:
        graph.to_device(device)  # a graph a CUDA result is computed on lives on the device (algorithm.md §3.6)
        choice = cuda.prepare(graph, plan, engine, device, 0, update=False)
        d, p, report = cuda.compute(graph, plan, engine, device, operators_loop=opts.operators_loop, choice=choice)
    except Exception as exc:  # nothing was created: no result to poison
        raise _wrap_device_errors(exc) from exc
    return _known(Result(graph, source, d, p, backend="cuda", device=device, options=opts,
                         stats=_stats(report, plan.packed, None)))


def _known(result: Result) -> Result:
    """Mark a compute() output as the library's own tree (``Result._tree_known``): acyclic, every
    parent edge in the graph. update() keeps the mark (its output from such a tree is such a tree
    again) and the host engine then skips the O(n) cycle walk; a tree from Result.from_arrays is
    never marked, so a user's tree is always checked (algorithm.md §7.1 step 4)."""
    result._tree_known = True
    return result


# -- update -------------------------------------------------------------------------------------


class _Pending:
    """One result's pre-commit work: its plan inputs, engine and device, and the CUDA engine's
    run choice (prepare()'s one reading of the switches, handed to the run)."""

    __slots__ = ("result", "opts", "engine", "max_weight", "delta", "plan", "choice")

    def __init__(self, result: Result, opts: Options, engine: str):
        self.result, self.opts, self.engine = result, opts, engine
        self.choice = None


def _check_results(graph: Graph, results) -> None:
    if not results:
        raise InvalidArgumentError("update() needs at least one result")
    seen = set()
    for r in results:
        if not isinstance(r, Result):
            raise InvalidArgumentError(f"expected engines.sssp.Result, got {type(r).__name__}")
        if id(r) in seen:
            raise InvalidArgumentError("the same result was passed to update() twice")
        seen.add(id(r))
    for r in results:
        if r.poisoned:
            r._live()
        if r._graph is not graph:
            raise StaleResultError("this result belongs to another graph")
        if r._state != graph.state_id:
            if r.graph_version != graph.version:
                raise StaleResultError(
                    f"this result describes graph version {r.graph_version}, but the graph is at version "
                    f"{graph.version}; results not passed to update() become stale"
                )
            raise StaleResultError(
                f"this result describes another state of the graph than its current one (both at version "
                f"{graph.version}: the graph was restored and changed differently since)"
            )


def _batch_max_weight(events, k: int) -> int:
    if events.num_insertions == 0:
        return 0
    return int(events.weights[:, k].max())


def change_lists(delta, k: int) -> ChangeLists:
    """The changes of objective k (algorithm.md §3.4): deletions, then weight-increased insertions;
    all heads."""
    up = delta.weight_increased[:, k] if delta.weight_increased.shape[0] else np.zeros(0, dtype=bool)
    changed_from = np.concatenate([delta.delete_src, delta.insert_src[up]]).astype(np.int32)
    changed_to = np.concatenate([delta.delete_dst, delta.insert_dst[up]]).astype(np.int32)
    return ChangeLists(changed_from=changed_from, changed_to=changed_to,
                       heads=np.ascontiguousarray(delta.insert_dst, dtype=np.int32))


def _cuda_device(pending) -> int | None:
    """The one device of the CUDA results (the graph lives there), or None without any."""
    devices = {item.result.device for item in pending if item.engine != "host"}
    if len(devices) > 1:
        raise NotSupportedError(
            f"update() got CUDA results on devices {sorted(devices)}; a graph lives on one device"
        )
    return devices.pop() if devices else None


#: update()'s plans by their inputs: a stream of updates mostly repeats them, and the size check,
#: the packing decision and a frozen dataclass cost a few µs of every update's host time. Only
#: plans that passed the size check are kept, so a kept one needs no check again.
_plans = Kept()


def _update_plan(source: int, k: int, n_after: int, max_weight: int, delta: int, push_expansion: str,
                 batch_changes: int) -> Plan:
    """The Plan of an update (algorithm.md §3.5) after ``check_size`` (which raises for a bound
    that does not fit), kept by its inputs."""

    def make() -> Plan:
        check_size(max_weight, n_after)
        return Plan(source=source, objective=k, num_vertices=n_after, max_weight=max_weight, delta=delta,
                    packing=decide_packing(max_weight, n_after), push_expansion=push_expansion,
                    batch_changes=batch_changes)

    return _plans.get((source, k, n_after, max_weight, delta, push_expansion, batch_changes), make)


#: The host engine's vertex-sized workspace during one update, in bytes per vertex: the packed word
#: array (uint64, host_region.pack_start / host_steps), one int64 work array (the invalidation's
#: queue, the schedule's scratch, the candidates) and about two bytes of bool / int8 masks. The
#: results run one after another, so it counts once.
_HOST_ENGINE_BYTES_PER_VERTEX = 8 + 8 + 2


def _growth_bytes_per_vertex(pending) -> int:
    """Host bytes per vertex that update() allocates at the grown vertex count besides the graph's
    offsets (Graph.growth_bytes_per_vertex): each host result's distances and parents
    (backends.grow_arrays: new arrays of n entries in their own dtypes, int64 and int32: 12 bytes),
    and the host engine's workspace once when some result runs on it. CUDA results grow on the
    device (CuPy raises its own out-of-memory error)."""
    total = 0
    for item in pending:
        d, p = item.result._d, item.result._p
        if isinstance(d, np.ndarray):
            total += d.dtype.itemsize + p.dtype.itemsize
    if any(item.engine == "host" for item in pending):
        total += _HOST_ENGINE_BYTES_PER_VERTEX
    return total


def update(graph, batch, *results, probe=None):
    """Apply ``batch`` to ``graph`` once and update every result on the new graph
    (algorithm.md §8.2-§8.5).

    Returns one ``Stats`` for one result, a tuple in argument order for several.
    """
    _check_graph(graph)
    _check_results(graph, results)
    if probe is not None:
        _check_probe(probe)
    pending = []
    for r in results:
        opts = r._options
        if r.backend == "cuda":
            resolve_backend("cuda")
        pending.append(_Pending(r, opts, _select_engine(r.backend, opts, r.device)))
    events = graph.events_for(batch)
    n_after = events.n_after
    n_old, m_old = graph.num_vertices, graph.num_edges
    for item in pending:
        k = item.opts.objective
        item.max_weight = max(1, graph.max_weight(k), _batch_max_weight(events, k))
        item.delta = item.opts.delta or default_delta(n_old, m_old, graph.weight_sum(k))
        item.plan = _update_plan(item.result.source, k, n_after, item.max_weight, item.delta,
                                 item.opts.push_expansion, int(events.size))
    device = _cuda_device(pending)
    # after the plans and the device check: an input the spec refuses (a bound that does not fit,
    # results on two devices) is named as such first; growth only: a steady-state update never
    # asks for the memory
    if n_after > events.n_old:
        graph.check_growth(events, _growth_bytes_per_vertex(pending),
                           "the graph and every result are as they were")
    if device is not None:
        try:
            graph.to_device(device)  # the graph of a CUDA result lives on its device (algorithm.md §3.6)
            for item in pending:
                if item.engine != "host":
                    item.choice = cuda_module().prepare(graph, item.plan, item.engine, device, events.size)
            graph.reserve_commit(events)
        except Exception as exc:
            raise _wrap_device_errors(exc) from exc

    # the apply is the graph's, once for every result: captured only when every CUDA result asks
    cuda_launches = {item.opts.update_launch for item in pending if item.engine != "host"}
    launch = "graph" if cuda_launches == {"graph"} else "python"
    try:
        commit = graph.commit(events, launch=launch)  # the commit
    except Exception as exc:  # nothing changed: the graph publishes only complete states
        raise _wrap_device_errors(exc) from exc

    first_error = None
    stats = []
    for item in pending:
        try:
            stats.append(_run_update(graph, item, commit, probe))
        except BaseException as exc:
            _poison(item.result, graph)
            if not isinstance(exc, Exception):
                # Ctrl-C or an exit stops the update here: this result's arrays may be half
                # written, the results after it were not run (stale at the old version)
                raise
            stats.append(None)
            if first_error is None:
                first_error = _wrap_device_errors(exc)
                if first_error is not exc:
                    first_error.__cause__ = exc
    if first_error is not None:
        raise first_error
    return stats[0] if len(stats) == 1 else tuple(stats)


def _poison(result: Result, graph: Graph) -> None:
    """A result whose run failed after the commit (algorithm.md §8.3): unusable from now on,
    at the graph's new state."""
    result._poisoned = True
    result._tree_known = False
    result._version = graph.version
    result._state = graph.state_id


def _run_update(graph: Graph, item: _Pending, commit, probe) -> Stats:
    r = item.result
    r._d, r._p = grow_arrays(r._d, r._p, graph.num_vertices)
    if item.engine == "host":
        from . import host

        changes = change_lists(commit.delta(), item.opts.objective)
        _call_probe(probe, "engine_start", None)
        report = host.update(graph, r._d, r._p, item.plan, changes, tree_known=r._tree_known)
        _call_probe(probe, "engine_stop", None)
    else:
        cuda = cuda_module()
        changes = cuda.changes_for(commit, item.opts.objective)
        stream = cuda.stream(r.device)
        _call_probe(probe, "engine_start", stream)
        report = cuda.update(graph, r._d, r._p, item.plan, changes, item.engine, r.device,
                             operators_loop=item.opts.operators_loop, choice=item.choice)
        _call_probe(probe, "engine_stop", stream)
    r._version = graph.version
    r._state = graph.state_id
    r._stats = _stats(report, item.plan.packed, commit.summary())
    return r._stats


__all__ = ["compute", "update", "change_lists"]
