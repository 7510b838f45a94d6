"""How a worker process of ``perf_ab.py engines`` loads a graph's inputs (protocol.md §2).

Each worker process loads its inputs itself rather than receiving the campaign process's copy
through a pipe (a gigabyte for road_usa): the campaign process prepares every input first, so the
worker reads them back from the prepared cache (``bench.prepare``), with no progress display. The
loader is a small picklable object, since it travels to the spawned worker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CachedInputs:
    """``loader(name)`` -> the prepared inputs of gate ``name``, or of the graph file ``spec``."""

    data_dir: str | None = None
    cache_dir: str | None = None
    spec: object = None  # bench.graph_file.GraphFileSpec (identified), or None

    def __call__(self, name: str):
        if self.spec is not None and name == self.spec.name:
            from .graph_file import prepare_graph_file

            return prepare_graph_file(self.spec, cache_dir=self.cache_dir, progress=False)
        from .prepare import prepare_gate

        return prepare_gate(name, data_dir=self.data_dir, cache_dir=self.cache_dir, progress=False)


__all__ = ["CachedInputs"]
