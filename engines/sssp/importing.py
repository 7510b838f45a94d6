"""``Result.from_arrays``: checks, validation and canonicalization of an imported tree
(docs/algorithm.md §8.4).

All checks run on host copies before anything is created; the first violation in vertex order is
reported, naming the vertex and the values involved.
"""

from __future__ import annotations

import numpy as np

from ..arguments import as_array, beyond_int64, flag, integer_dtype, vertex_id
from ..errors import InvalidArgumentError
from .backends import is_device_array, move_arrays, resolve_backend, resolve_device
from .packing import INF_HALF, INFINITE_DISTANCE, check_size, path_bound
from .plan import pointer_jumping_rounds
from .options import resolve_options


def _host_int_array(values, name: str) -> np.ndarray:
    arr = values.get() if is_device_array(values) else as_array(values, name, "a flat sequence of integers")
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size and not integer_dtype(arr.dtype):
        raise InvalidArgumentError(f"{name} must hold integers, got dtype {arr.dtype}")
    if beyond_int64(arr) is not None:
        raise InvalidArgumentError(f"{name} holds a value above the int64 range")
    return arr.astype(np.int64)


def _chains_reach_source(parents: np.ndarray, source: int) -> np.ndarray:
    """For every vertex, whether following parents reaches ``source`` (pointer doubling)."""
    n = parents.shape[0]
    jump = parents.copy()
    jump[source] = source
    done = jump < 0
    for _ in range(pointer_jumping_rounds(n)):
        live = ~done
        if not live.any():
            break
        nxt = jump[jump[live]]
        jump[live] = nxt
        done = jump < 0
    return jump == source


def validate_tree(graph, source: int, d: np.ndarray, p: np.ndarray, objective: int) -> None:
    """The validation of algorithm.md §8.4, reporting the first violation in vertex order."""
    n = graph.num_vertices
    w_col = max(graph.max_weight(objective), 1)
    check_size(w_col, n)
    limit = path_bound(w_col, n)
    reach = d < INF_HALF
    ids = np.arange(n)
    checks = []
    if d[source] != 0:
        checks.append((source, f"the source {source} has distance {int(d[source])}, expected 0"))
    if p[source] != -1:
        checks.append((source, f"the source {source} has parent {int(p[source])}, expected -1"))
    bad = ~reach & (p != -1)
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        checks.append((v, f"vertex {v} is unreachable but has parent {int(p[v])}, expected -1"))
    bad = reach & ((d < 0) | (d > limit))
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        checks.append((v, f"vertex {v} has distance {int(d[v])} outside [0, {limit}] = [0, W x max(n - 1, 1)]"))
    parent_ok = p >= 0
    parent_reach = np.zeros(n, dtype=bool)
    parent_reach[parent_ok] = reach[p[parent_ok]]
    bad = reach & (ids != source) & ~(parent_ok & parent_reach)
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        checks.append((v, f"vertex {v} is reachable but its parent {int(p[v])} is not a reachable vertex"))
    bad = reach & ~_chains_reach_source(p, source)
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        checks.append((v, f"the parent chain of vertex {v} does not end at the source {source}"))
    if checks:
        v, message = min(checks, key=lambda item: item[0])
        raise InvalidArgumentError(f"invalid tree: {message}")


def canonicalize_parents(graph, source: int, d: np.ndarray, p: np.ndarray, objective: int) -> None:
    """``P[v] = min(P[v], lowest-id tight in-neighbour)`` wherever ``P[v] >= 0`` (in place)."""
    if graph.num_edges == 0:
        return
    src = graph.edge_sources()
    dst = graph.col_ind
    w = graph.weight_column(objective).astype(np.int64)
    du = d[src]
    tight = (du < INFINITE_DISTANCE) & (dst != source) & (du + w == d[dst])
    if not tight.any():
        return
    best = np.full(graph.num_vertices, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, dst[tight], src[tight].astype(np.int64))
    take = (p >= 0) & (best < p)
    p[take] = best[take]


def import_tree(cls, graph, source, distances, parents, *, canonicalize, validate, backend, options, overrides):
    from ..graph import Graph

    if not isinstance(graph, Graph):
        raise InvalidArgumentError(f"expected an engines.Graph, got {type(graph).__name__}")
    canonicalize = flag(canonicalize, "canonicalize")
    validate = None if validate is None else flag(validate, "validate")
    opts = resolve_options(options, overrides, graph.num_weights)
    n = graph.num_vertices
    source = vertex_id(source, "source", n)
    on_device = is_device_array(distances)
    d = _host_int_array(distances, "distances")
    p = _host_int_array(parents, "parents")
    if d.shape[0] != n or p.shape[0] != n:
        raise InvalidArgumentError(
            f"distances and parents must have n = {n} entries, got {d.shape[0]} and {p.shape[0]}"
        )
    bad = (p < -1) | (p >= n)
    if bad.any():
        v = int(np.flatnonzero(bad)[0])
        raise InvalidArgumentError(f"parent of vertex {v} is {int(p[v])}, outside [-1, {n})")
    d[d >= INF_HALF] = INFINITE_DISTANCE
    do_validate = opts.validate_inputs if validate is None else validate
    if do_validate:
        validate_tree(graph, source, d, p, opts.objective)
    if canonicalize:
        canonicalize_parents(graph, source, d, p, opts.objective)
    target = resolve_backend(backend) if backend is not None else ("cuda" if on_device else "host")
    if target == "cuda":
        resolve_backend("cuda")
    device = resolve_device(target, None)
    d_out, p_out = move_arrays(d, p.astype(graph.vertex_dtype), target, device)
    return cls(graph, source, d_out, p_out, backend=target, device=device, options=opts, stats=None)


__all__ = ["import_tree", "validate_tree", "canonicalize_parents"]
