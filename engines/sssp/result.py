"""Result and Stats of the sssp algorithm (algorithm.md §9, §11); the options are options.py's.

A ``Result`` is bound to one graph object and the version it describes. Its arrays live on the
host (NumPy) or on a CUDA device (CuPy). A post-commit failure poisons it (algorithm.md §8.3): every
later use raises ``StaleResultError`` while ``source``, ``backend`` and ``graph_version`` stay
readable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..batch import ApplySummary
from ..errors import InvalidArgumentError, StaleResultError
from .options import Options, resolve_options

@dataclass(frozen=True)
class Stats:
    """Statistics of one run (algorithm.md §9). ``batch`` is None for ``compute()``."""

    invalidated: int
    affected: int
    iterations: int
    epochs: int
    pushes: int
    packed_parents: bool
    engine_used: str
    host_syncs: int
    sync_budget: int
    batch: ApplySummary | None = None
    #: the fused engine's grid-wide barriers in this run (its phases: one per push iteration on the
    #: grid or per solo stretch, two per epoch, the fixed phases of algorithm.md §5); None on the
    #: other engines
    grid_syncs: int | None = None


def _readonly_view(arr):
    if isinstance(arr, np.ndarray):
        view = arr.view()
        view.setflags(write=False)
        return view
    return arr  # CuPy arrays have no write flag; callers must not write (algorithm.md §11)


class Result:
    """A shortest-path tree (distances, parents) of one source and objective on one graph."""

    def __init__(self, graph, source: int, distances, parents, *, backend: str, device, options: Options,
                 stats: Stats | None):
        self._graph = graph
        self._source = int(source)
        self._d = distances
        self._p = parents
        self._backend = backend
        self._device = device
        self._options = options
        self._version = graph.version
        self._state = graph.state_id  # the exact graph state the arrays describe
        self._stats = stats
        self._poisoned = False
        # True only for this library's own compute()/update() output (api.py sets it): the tree
        # is acyclic and every parent edge is in the graph, so update() may skip the cycle walk.
        # Carried by clone() and copy_from(); from_arrays() never sets it.
        self._tree_known = False

    # -- always readable ------------------------------------------------------------------------

    @property
    def source(self) -> int:
        return self._source

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def device(self):
        return self._device

    @property
    def graph_version(self) -> int:
        return self._version

    @property
    def poisoned(self) -> bool:
        return self._poisoned

    # -- guarded --------------------------------------------------------------------------------

    def _live(self) -> None:
        if self._poisoned:
            raise StaleResultError(
                "this result was left unusable by a failed update; build a new one with compute() "
                "or Result.from_arrays()"
            )

    @property
    def distances(self):
        self._live()
        return _readonly_view(self._d)

    @property
    def parents(self):
        self._live()
        return _readonly_view(self._p)

    @property
    def options(self) -> Options:
        self._live()
        return dataclasses.replace(self._options)

    @property
    def stats(self) -> Stats | None:
        self._live()
        return self._stats

    def set_options(self, options: Options | None = None, **overrides) -> None:
        """Change tunables (delta, cuda_engine, validate_inputs); the objective is fixed."""
        self._live()
        opts = resolve_options(options, overrides, self._graph.num_weights, base=self._options)
        if opts.objective != self._options.objective:
            raise InvalidArgumentError(
                f"the objective of a result is fixed when it is created ({self._options.objective}); "
                f"compute a new result for objective {opts.objective}"
            )
        self._options = opts

    def to_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """NumPy copies of (distances, parents)."""
        self._live()
        if isinstance(self._d, np.ndarray):
            return self._d.copy(), self._p.copy()
        return self._d.get(), self._p.get()

    def clone(self, *, backend: str | None = None) -> "Result":
        """An independent copy bound to the same graph and version, optionally on another backend."""
        self._live()
        from . import backends  # local: keeps CuPy out of import time

        # "auto" resolved here (resolve_device checks a name but returns a device: "auto" asked
        # CuPy for one even where it meant the host); None, not any false value, keeps the backend
        target = self._backend if backend is None else backends.resolve_backend(backend)
        device = backends.resolve_device(target, self._device)
        d, p = backends.move_arrays(self._d, self._p, target, device)
        clone = Result(self._graph, self._source, d, p, backend=target, device=device,
                       options=dataclasses.replace(self._options), stats=self._stats)
        clone._version = self._version
        clone._state = self._state
        clone._tree_known = self._tree_known
        return clone

    def copy_from(self, other: "Result") -> None:
        """Take another result's arrays, version and statistics (same graph, source, backend).

        The A/B runner restores a pre-batch state this way; on CUDA it is a device-to-device copy.
        """
        self._live()
        if not isinstance(other, Result):
            raise InvalidArgumentError(f"copy_from needs an engines.sssp.Result, got {type(other).__name__}")
        other._live()
        if other._graph is not self._graph or other._source != self._source or other._backend != self._backend:
            raise InvalidArgumentError("copy_from needs a result of the same graph, source and backend")
        if other._options.objective != self._options.objective:
            raise InvalidArgumentError("copy_from needs a result of the same objective")
        if self._d.shape == other._d.shape:
            if isinstance(self._d, np.ndarray):
                np.copyto(self._d, other._d)
                np.copyto(self._p, other._p)
            else:
                from .backends import on_engine_stream

                with on_engine_stream(self._d):  # ordered before the next engine run
                    self._d[...] = other._d
                    self._p[...] = other._p
        elif isinstance(other._d, np.ndarray):
            self._d, self._p = other._d.copy(), other._p.copy()
        else:
            from .backends import on_engine_stream

            with on_engine_stream(other._d):
                self._d, self._p = other._d.copy(), other._p.copy()
        self._version = other._version
        self._state = other._state
        self._stats = other._stats
        self._tree_known = other._tree_known

    @classmethod
    def from_arrays(cls, graph, source, distances, parents, *, canonicalize: bool = True, validate=None,
                    backend: str | None = None, options: Options | None = None, **overrides) -> "Result":
        """Import a tree (algorithm.md §8.4): checked, copied, values >= INF/2 rewritten to INF,
        canonicalized."""
        from .importing import import_tree

        return import_tree(cls, graph, source, distances, parents, canonicalize=canonicalize, validate=validate,
                           backend=backend, options=options, overrides=overrides)

    def __repr__(self) -> str:
        state = "poisoned" if self._poisoned else f"n={self._d.shape[0]}"
        return (f"Result(source={self._source}, backend={self._backend!r}, objective={self._options.objective}, "
                f"version={self._version}, {state})")


__all__ = ["Stats", "Result"]
