"""The host reference engine (algorithm.md §7): ``update()`` and ``compute()`` on NumPy arrays.

The dispatch (``engines.sssp.api``) owns the checks before the commit, the batch, poisoning and
the public statistics; this module is the engine body. It follows algorithm.md §7.1 step by step:

1. start state (the words the device would pack), 2. input check, 3. roots judged against the raw
input parents, 4. cycle check (only with a non-empty changed list), 5. invalidation of the
old-tree subtrees of the roots, 6. the seed pull of the invalidated vertices and the non-source
insertion heads, 7. propagation, 8. finalize (parent recovery in distance-only mode) and
``affected``. The input arrays are modified only after every check has passed.

Propagation runs either the vectorized near-far schedule (:mod:`.host_schedule`, always
available) or a Numba heap (:mod:`.host_kernels`); both give the same bytes (algorithm.md §5.12).
The module-level switch :data:`PROPAGATION` picks one: ``"numba"``, ``"numpy"`` or ``"auto"``
(Numba when it imports). The environment variable ``SSSPAB_HOST_PROPAGATION`` sets its default.
"""

from __future__ import annotations

import os

import numpy as np

from .. import errors
from .host_schedule import ScheduleCounts, propagate_near_far
from .host_steps import (
    WORD_INF,
    invalidate_subtrees,
    pull,
    recover_parents,
    word_distances,
    word_parents,
    words_from_tree,
)
from .packing import INF_HALF, INFINITE_DISTANCE, Packing
from .plan import ChangeLists, EngineReport, Plan

#: Which propagation the engine runs: "auto" (Numba if importable, else NumPy), "numba", "numpy".
PROPAGATION = os.environ.get("SSSPAB_HOST_PROPAGATION", "auto")
#: An update that invalidates at least this share of the vertices searches from scratch when what
#: it keeps is compute()'s tree already (_recompute_instead); 2.0 turns that off. On roadNet-PA
#: (2 cores) repairing a tenth of the graph took about a third of a compute(), repairing nine
#: tenths four times one.
RECOMPUTE_FRACTION = 0.5

_ENGINE = "host"


def _numba_propagate():
    """The Numba propagation, or None when PROPAGATION is "numpy" / Numba is missing under "auto"."""
    choice = PROPAGATION
    if choice not in ("auto", "numba", "numpy"):
        raise errors.InvalidArgumentError(
            f"engines.sssp.host.PROPAGATION must be 'auto', 'numba' or 'numpy', got {choice!r}"
        )
    if choice == "numpy":
        return None
    try:
        from .host_kernels import propagate_heap
    except ImportError as exc:  # numba missing or broken
        if choice == "numba":
            raise errors.NotSupportedError(f"the Numba host propagation is unavailable: {exc}") from exc
        return None
    return propagate_heap


def _invalidate(parents: np.ndarray, root_ids: np.ndarray, compiled: bool, graph=None,
                tree_known: bool = False) -> tuple[np.ndarray, bool]:
    """algorithm.md §7.1 steps 4-5: the flags of the roots' old subtrees and the parent_cycle
    condition; one memoized walk under Numba (``compiled``: host_region, given the root ids),
    pointer jumping rounds otherwise. A ``tree_known`` (this library's own output on G_t, so
    acyclic with every parent edge in the graph) is searched down from the roots over
    ``graph``'s out-edges instead, in time proportional to the subtrees
    (host_region.flag_known_subtrees): the same flags, and no cycle to report."""
    if compiled and tree_known:
        from .host_region import flag_known_subtrees

        return flag_known_subtrees(parents, root_ids, graph.row_ptr, graph.col_ind)
    if compiled:
        from .host_region import invalidate_walk

        return invalidate_walk(parents, root_ids)
    roots = np.zeros(parents.shape[0], dtype=bool)
    roots[root_ids] = True
    return invalidate_subtrees(parents, roots)


def _pull(words: np.ndarray, candidates: np.ndarray, graph, plan: Plan, compiled: bool) -> np.ndarray:
    """algorithm.md §7.1 step 6 over the candidates' in-edges (the in-CSR every commit maintains):
    one Numba loop (host_region), or NumPy."""
    in_edges = graph.in_edges(plan.objective)
    if compiled:
        from .host_region import pull_in

        return pull_in(words, candidates, in_edges.ptr, in_edges.src, in_edges.weight, plan.packing)
    return pull(words, candidates, in_edges.ptr, in_edges.src, in_edges.weight, plan.packing)


def _recompute_instead(distances, parents, flagged, invalidated: int, heads: np.ndarray, graph,
                       plan: Plan) -> bool:
    """Whether this update may run compute()'s search from scratch (issue 35): the batch
    invalidated (``flagged``, ``invalidated`` of them) at least RECOMPUTE_FRACTION of the vertices,
    where repairing costs more than searching again, and what the update keeps is compute()'s
    tree already (host_region.survivors_are_canonical: then both give the same bytes). The check
    is a Numba scan: the caller asks under Numba only."""
    n = plan.num_vertices
    if invalidated == 0 or invalidated < RECOMPUTE_FRACTION * n:
        return False
    from .host_region import survivors_are_canonical

    head_mask = np.zeros(n, dtype=bool)
    head_mask[heads] = True
    return survivors_are_canonical(distances, parents, flagged, head_mask, graph.row_ptr,
                                   graph.col_ind, graph.weight_column(plan.objective), plan.source,
                                   INF_HALF, plan.bound)


def _known_recompute(tree_known: bool, invalidated: int, n: int) -> bool:
    """_recompute_instead without its O(n + m) survivors scan, for the library's own tree: a tree
    compute() returned is canonical, and an update from a canonical tree is canonical again and
    equals compute() on G_{t+1} byte for byte (algorithm.md §5.12, the closing paragraph), so by
    induction every ``tree_known`` (compute()'s, then update()'s) may be recomputed once the batch
    invalidated RECOMPUTE_FRACTION of the vertices. The scan cost 24 ms on the roadNet-PA
    stand-in's safe50k (and said no there: it is sufficient, not necessary)."""
    return tree_known and invalidated > 0 and invalidated >= RECOMPUTE_FRACTION * n


def _from_scratch(graph, plan: Plan, stop: np.ndarray | None = None
                  ) -> tuple[np.ndarray, ScheduleCounts] | None:
    """compute()'s words: every vertex INF but the source, propagated from it (algorithm.md §6).
    ``stop`` (Numba, packed words): a flag that ends the search early, returning None."""
    words = np.full(plan.num_vertices, WORD_INF, dtype=np.uint64)
    words[plan.source] = np.uint64(plan.packing.no_parent)  # pack(0, -1); 0 in distance-only mode
    frontier = np.array([plan.source], dtype=np.int64)
    if stop is not None:
        from .host_kernels import propagate_heap

        counts = propagate_heap(words, frontier, graph.row_ptr, graph.col_ind,
                                graph.weight_column(plan.objective), plan.source, plan.packing, stop)
        return None if counts is None else (words, counts)
    counts = _propagate(words, frontier, graph, plan)
    return words, counts


#: A known tree's update whose roots, times host_region.KNOWN_ROOT_SPAN, exceed this share of the
#: vertices (so many roots that the invalidation walks all n: roadNet-PA's safe50k, 7,079 roots,
#: not local10k's 1,418) starts compute()'s search on a helper thread while it invalidates; the
#: search is kept when the update recomputes (_known_recompute), else stopped within
#: host_kernels.STOP_CHUNK expansions. None turns it off.
SPECULATE_ROOT_SHARE: float | None = 0.125


class _Speculation:
    """compute()'s search of ``graph`` running on a helper thread (:func:`_speculate`)."""

    def __init__(self, graph, plan: Plan):
        from ..graph.host_apply import _pool

        self.stop = np.zeros(1, dtype=np.uint8)
        self.future = _pool().submit(_from_scratch, graph, plan, self.stop)

    def result(self):
        """The search's (words, counts), waiting for it."""
        out = self.future.result()
        if out is None:  # stopped: never, unless abandon() ran first
            raise errors.InternalError("host engine: the speculative search was stopped")
        return out

    def abandon(self) -> None:
        """Stop the search and wait until it has (it writes only its own words)."""
        self.stop[0] = 1
        self.future.result()


def _speculate(tree_known: bool, compiled: bool, roots: int, plan: Plan, graph) -> "_Speculation | None":
    share = SPECULATE_ROOT_SHARE
    if not (tree_known and compiled and plan.packed) or share is None or RECOMPUTE_FRACTION > 1:
        return None
    from .host_region import KNOWN_ROOT_SPAN

    if roots * KNOWN_ROOT_SPAN <= share * plan.num_vertices:
        return None
    return _Speculation(graph, plan)


def _candidates(words: np.ndarray, flagged, heads: np.ndarray, n: int) -> np.ndarray:
    """The flagged vertices' words to INF; the pull's candidates: the flagged vertices and the
    heads, ascending, each once (host_region.clear_flagged does it in one Numba pass)."""
    invalid = np.flatnonzero(flagged) if flagged is not None else np.empty(0, dtype=np.int64)
    words[invalid] = WORD_INF
    if not heads.size:
        return invalid
    # A mark array deduplicates in O(n) (np.union1d sorts, far slower at millions of vertices);
    # the flags are that array already, unused from here on.
    is_candidate = flagged if flagged is not None else np.zeros(n, dtype=bool)
    is_candidate[heads] = True
    return np.flatnonzero(is_candidate)


def _propagate(words: np.ndarray, frontier: np.ndarray, graph, plan: Plan) -> ScheduleCounts:
    """algorithm.md §7.1 step 7 from ``frontier`` (distinct vertices whose distance just
    decreased)."""
    row_ptr = graph.row_ptr
    col_ind = graph.col_ind
    weight = graph.weight_column(plan.objective)
    numba_path = _numba_propagate()
    if numba_path is not None:
        return numba_path(words, frontier, row_ptr, col_ind, weight, plan.source, plan.packing)
    return propagate_near_far(words, frontier, row_ptr, col_ind, weight, plan.source, plan.packing, plan.delta)


def _final_arrays(words: np.ndarray, graph, plan: Plan, vertex_dtype) -> tuple[np.ndarray, np.ndarray]:
    """algorithm.md §7.1 step 8: unpack the words, or recover parents in distance-only mode
    (algorithm.md §4.4)."""
    packing: Packing = plan.packing
    distances = word_distances(words, packing)
    if packing.packed:
        parents = word_parents(words, packing, vertex_dtype)
    else:
        in_edges = graph.in_edges(plan.objective)
        parents = recover_parents(distances, in_edges.ptr, in_edges.src, in_edges.weight, plan.source, vertex_dtype)
    return distances, parents


def _check_inputs(distances: np.ndarray, bound: int) -> None:
    """algorithm.md §7.1 step 2: a finite input distance that is negative or above the bound ->
    invalid_input."""
    bad = (distances < 0) | ((distances > bound) & (distances < INF_HALF))
    if bad.any():
        raise _invalid_input(distances, int(np.flatnonzero(bad)[0]), bound)


def _invalid_input(distances: np.ndarray, v: int, bound: int):
    """The invalid_input error naming the first vertex out of range (both checks)."""
    return errors.invalid_input_error(f"vertex {v} has distance {int(distances[v])}, bound {bound}")


def _check_shapes(graph, distances: np.ndarray, parents: np.ndarray, plan: Plan) -> None:
    n = plan.num_vertices
    if graph.num_vertices != n or distances.shape != (n,) or parents.shape != (n,):
        raise errors.InternalError(
            f"host engine: graph has {graph.num_vertices} vertices, plan {n}, arrays "
            f"{distances.shape} / {parents.shape}"
        )
    if distances.dtype != np.int64:
        raise errors.InternalError(f"host engine: distances must be int64, got {distances.dtype}")


def update(graph, distances: np.ndarray, parents: np.ndarray, plan: Plan, changes: ChangeLists, *,
           tree_known: bool = False) -> EngineReport:
    """Update ``(distances, parents)`` in place from G_t's tree to G_{t+1}'s (algorithm.md §7.1).

    ``graph`` is G_{t+1}; the arrays are already grown with (INF, -1) and rewritten to INF where
    ``>= INF/2``. Raises ``invalid_input`` / ``parent_cycle`` (InvalidArgumentError with that
    ``reason``) before touching the arrays; invalid_input wins. ``tree_known``: the arrays are
    this library's own compute()/update() output on G_t (never a tree a user handed in), which
    lets the invalidation skip the O(n) cycle walk (:func:`_invalidate`); same bytes either way.
    """
    _check_shapes(graph, distances, parents, plan)
    n = plan.num_vertices
    source = plan.source
    compiled = _numba_propagate() is not None
    if compiled:  # the check and the start words in one pass (host_region)
        from .host_region import pack_start

        start_words, bad = pack_start(distances, parents, plan.packing, plan.bound, INF_HALF)
        if bad >= 0:
            raise _invalid_input(distances, bad, plan.bound)
    else:
        _check_inputs(distances, plan.bound)

    changed_to = np.asarray(changes.changed_to, dtype=np.int64)
    changed_from = np.asarray(changes.changed_from, dtype=np.int64)
    if changed_to.size:
        root_ids = changed_to[parents[changed_to] == changed_from]
        speculation = _speculate(tree_known, compiled, root_ids.size, plan, graph)
        try:
            flagged, cycle = _invalidate(parents, root_ids, compiled, graph, tree_known)
            if cycle:
                raise errors.parent_cycle_error()
            # the count decides; the ids are listed only for a repair (np.flatnonzero of a mostly
            # set mask of n costs 1-2 ms on roadNet-PA, np.count_nonzero 0.06)
            invalidated = int(np.count_nonzero(flagged))
        except BaseException:
            if speculation is not None:
                speculation.abandon()
            raise
    else:
        flagged, invalidated, speculation = None, 0, None

    heads = np.asarray(changes.heads, dtype=np.int64)
    heads = heads[heads != source]
    searched = None  # compute()'s (words, counts) when the speculation is kept
    if speculation is not None:
        if _known_recompute(tree_known, invalidated, n):
            searched = speculation.result()
        else:
            speculation.abandon()
    if searched is not None:
        words, counts = searched
    elif compiled and (_known_recompute(tree_known, invalidated, n)
                       or _recompute_instead(distances, parents, flagged, invalidated, heads, graph, plan)):
        words, counts = _from_scratch(graph, plan)
    else:
        words = start_words if compiled else words_from_tree(distances, parents, plan.packing)
        if compiled and flagged is not None:  # one pass over n (host_region)
            from .host_region import clear_flagged

            candidates = clear_flagged(words, flagged, heads)
        else:
            candidates = _candidates(words, flagged, heads, n)
        frontier = _pull(words, candidates, graph, plan, compiled)
        counts = _propagate(words, frontier, graph, plan)

    if compiled and plan.packed:  # unpack, compare and write in one pass (host_region)
        from .host_region import write_changed

        affected = write_changed(words, distances, parents, plan.packing, INFINITE_DISTANCE)
    else:
        new_d, new_p = _final_arrays(words, graph, plan, parents.dtype)
        changed = np.flatnonzero((new_d != distances) | (new_p != parents))
        distances[changed] = new_d[changed]
        parents[changed] = new_p[changed]
        affected = int(changed.size)
    return EngineReport(
        engine_used=_ENGINE,
        invalidated=invalidated,
        affected=affected,
        iterations=counts.iterations,
        epochs=counts.epochs,
        pushes=counts.pushes,
        host_syncs=0,
        sync_budget=0,
    )


def compute(graph, plan: Plan) -> tuple[np.ndarray, np.ndarray, EngineReport]:
    """The canonical lowest-id Dijkstra tree of ``graph`` from ``plan.source`` (algorithm.md §6,
    §7.1)."""
    n = plan.num_vertices
    if graph.num_vertices != n:
        raise errors.InternalError(f"host engine: graph has {graph.num_vertices} vertices, plan {n}")
    words, counts = _from_scratch(graph, plan)
    distances, parents = _final_arrays(words, graph, plan, graph.vertex_dtype)
    report = EngineReport(
        engine_used=_ENGINE,
        invalidated=0,
        affected=0,
        iterations=counts.iterations,
        epochs=counts.epochs,
        pushes=counts.pushes,
        host_syncs=0,
        sync_budget=0,
    )
    return distances, parents, report


__all__ = ["PROPAGATION", "RECOMPUTE_FRACTION", "update", "compute"]
