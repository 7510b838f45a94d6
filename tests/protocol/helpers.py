"""Small real inputs and side wrappers for the protocol tests.

The graphs are built with ``engines.Graph.from_edges`` and their trees with the host engine's
``compute()``: the runner measures the real host reference, nothing is mocked.
"""

from __future__ import annotations

import time

import numpy as np

from engines import Batch, Graph, sssp
from protocol.runner import BatchInput, CampaignConfig, GraphInput
from protocol.sides import Side


def write_small_edge_list(path, seed: int):
    """A 200-vertex, 600-line edge list (random pairs, ids from 1) at ``path``: the graph file of
    the tests that run a whole host campaign through perf_ab.py."""
    rng = np.random.default_rng(seed)
    path.write_text("".join(f"{u} {v}\n" for u, v in rng.integers(1, 201, size=(600, 2))))
    return path


def record_host_campaign(root, seed: int, args):
    """A finished campaign through ``perf_ab.py engines ARGS`` on :func:`write_small_edge_list`'s
    graph, under ``root`` (its cache too): the records that the report and damage tests read or
    damage a copy of. Returns (the graph file, the records folder)."""
    from bench import perf_ab

    graph = write_small_edge_list(root / "small.edges", seed)
    out = root / "records"
    assert perf_ab.main(["engines", *args, "--graph-file", str(graph), "--out", str(out),
                         "--cache-dir", str(root / "cache")]) == 0
    return graph, out


def small_graph_input(*, n=2000, m=8000, seed=7, name="toy", insertions=150, deletions=150) -> GraphInput:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    weights = rng.integers(1, 101, (src.size, 3))
    graph = Graph.from_edges(src, dst, weights, num_vertices=n)
    trees = [sssp.compute(graph, 0, objective=k).to_numpy() for k in range(3)]
    ins = rng.integers(0, n, (insertions, 2))
    pick = rng.integers(0, src.size, deletions)
    batch = Batch(ins[:, 0], ins[:, 1], rng.integers(1, 101, (insertions, 3)), src[pick], dst[pick])
    return GraphInput(
        name=name,
        origin={"kind": "standin", "generator": "uniform random (test)", "params": {"n": n, "m": m}, "seed": seed},
        graph=graph,
        source=0,
        facts={"vertices": n},
        trees=trees,
        batches={"mixed": BatchInput("mixed", batch, {"insertions": insertions, "deletions": deletions}, "ab" * 32)},
    )


def host_config(**overrides) -> CampaignConfig:
    values = dict(
        sides=(Side("host", "host"), Side("host", "host")),
        rounds=5,
        warmup=2,
        objectives=[0],
        allow_dirty=True,
        max_foreign_cpu=1e9,  # the CI box is shared; contamination is tested on its own
        control=False,  # the A/A control cell has tests of its own (test_control.py)
    )
    values.update(overrides)
    return CampaignConfig(**values)


class _WrappedProbe:
    """Passes the engine hooks on; ``extra`` runs inside the region just before it closes."""

    def __init__(self, inner, extra):
        self.inner = inner
        self.extra = extra
        self.start_ns = 0

    def engine_start(self, stream):
        self.inner.engine_start(stream)
        self.start_ns = time.perf_counter_ns()

    def engine_stop(self, stream):
        self.extra(time.perf_counter_ns() - self.start_ns)
        self.inner.engine_stop(stream)


class SlowedSide(Side):
    """A side whose engine region lasts ``1 + fraction`` times as long: it spins after the engine."""

    def __init__(self, label, fraction):
        super().__init__(label, "host")
        object.__setattr__(self, "fraction", fraction)

    def update(self, graph, batch, result, probe):
        def spin(elapsed_ns):
            until = time.perf_counter_ns() + int(elapsed_ns * self.fraction)
            while time.perf_counter_ns() < until:
                pass

        return super().update(graph, batch, result, _WrappedProbe(probe, spin) if probe else None)


class HookedSide(Side):
    """A host side that calls ``hook(call_number)`` inside the engine region of every update."""

    def __init__(self, label, hook):
        super().__init__(label, "host")
        object.__setattr__(self, "hook", hook)
        object.__setattr__(self, "calls", [0])

    def update(self, graph, batch, result, probe):
        self.calls[0] += 1
        number = self.calls[0]
        return super().update(graph, batch, result,
                              _WrappedProbe(probe, lambda _ns: self.hook(number)) if probe else None)


class VirtualClock:
    """A stand-in for ``time`` in ``protocol.region`` (the engine timing): ``perf_counter_ns``
    reads a counter that only a ``VirtualSide`` advances, so the measured engine regions are
    exactly the durations it draws."""

    def __init__(self):
        self.now_ns = 0

    def perf_counter_ns(self) -> int:
        self.now_ns += 1  # every reading is a distinct instant
        return self.now_ns


class VirtualSide(Side):
    """The host reference, whose engine region lasts a seeded draw on a ``VirtualClock``:
    ``base_ns`` x lognormal(0, ``sigma``) x (1 + ``slowdown``). Deterministic: a campaign's
    statistics are then a pure function of the seed, so a test of them cannot fail by chance."""

    def __init__(self, label, clock: VirtualClock, rng, *, base_ns=1_000_000, sigma=0.02, slowdown=0.0):
        super().__init__(label, "host")
        for name, value in (("clock", clock), ("rng", rng), ("base_ns", base_ns), ("sigma", sigma),
                            ("slowdown", slowdown)):
            object.__setattr__(self, name, value)

    def update(self, graph, batch, result, probe):
        def advance(_real_ns):
            draw = self.base_ns * float(self.rng.lognormal(0.0, self.sigma)) * (1.0 + self.slowdown)
            self.clock.now_ns += int(draw)

        return super().update(graph, batch, result, _WrappedProbe(probe, advance) if probe else None)


class KillingSide(Side):
    """A host side whose process kills itself (SIGKILL) at its ``at_call``-th update in a process,
    once per campaign: ``marker`` (a file) records that it did, so later worker processes and a
    resumed campaign run undisturbed. Picklable, so that it travels to a spawned worker."""

    def __init__(self, label, marker, at_call):
        super().__init__(label, "host")
        object.__setattr__(self, "marker", str(marker))
        object.__setattr__(self, "at_call", at_call)
        object.__setattr__(self, "calls", [0])

    def update(self, graph, batch, result, probe):
        import os
        import signal
        from pathlib import Path

        self.calls[0] += 1
        if self.calls[0] == self.at_call and not Path(self.marker).exists():
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().update(graph, batch, result, probe)


class SleepingSide(Side):
    """A host side whose process goes silent at its ``at_call``-th update in a process, once per
    campaign: it sleeps ``seconds`` (far past the test's worker deadline) as a hung kernel would,
    alive but answering nothing. ``marker`` records the sleeper's PID, so later worker processes
    and a resumed campaign run undisturbed. Picklable, so that it travels to a spawned worker."""

    def __init__(self, label, marker, at_call, seconds):
        super().__init__(label, "host")
        object.__setattr__(self, "marker", str(marker))
        object.__setattr__(self, "at_call", at_call)
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "calls", [0])

    def update(self, graph, batch, result, probe):
        import os
        import time
        from pathlib import Path

        self.calls[0] += 1
        if self.calls[0] == self.at_call and not Path(self.marker).exists():
            Path(self.marker).write_text(str(os.getpid()))
            time.sleep(self.seconds)
        return super().update(graph, batch, result, probe)
