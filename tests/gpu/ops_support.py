"""Helpers of the GPU tests of the operators engine: the skip condition and cross-engine runs.

Every expected value comes from the host reference (``backend="host"``), never from stored
numbers: the CUDA engines must reproduce its bytes (algorithm.md §13.2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from pathlib import Path

import numpy as np
import pytest

from engines import sssp
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION, PUSH_EXPANSIONS

from .. import harness as H
from conformance import oracles as O


def gpu_available() -> bool:
    try:
        from engines.sssp import cuda
    except Exception:
        return False
    return bool(cuda.is_available())


#: Marks and skips a GPU test module: ``pytestmark = GPU``.
GPU = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA GPU"),
]

#: The CUDA engine configurations under test: name -> the options that select it. The operators
#: engine runs in both loop modes (operators.py): "operators" is its default, the device-driven
#: loop (replays of captured launches); "operators-host" the ADR's host loop (a readback per push
#: iteration and epoch). A result keyed "operators" that a test made with cuda_engine="operators"
#: alone runs the default, so the expectations below key on these names.
CUDA_CONFIGS = {
    "fused": {"cuda_engine": "fused"},
    "operators": {"cuda_engine": "operators", "operators_loop": "device"},
    "operators-host": {"cuda_engine": "operators", "operators_loop": "host"},
}
CUDA_ENGINES = tuple(CUDA_CONFIGS)
#: The push expansions the default configurations do not run (Options.push_expansion), pinned:
#: every expansion of both engines' pushes is tested whichever is the default.
OTHER_EXPANSIONS = tuple(e for e in PUSH_EXPANSIONS if e != DEFAULT_PUSH_EXPANSION)
for _expansion in OTHER_EXPANSIONS:
    CUDA_CONFIGS.update({
        f"fused+{_expansion}": {"cuda_engine": "fused", "push_expansion": _expansion},
        f"operators+{_expansion}": {"cuda_engine": "operators", "operators_loop": "device",
                                    "push_expansion": _expansion},
        f"operators-host+{_expansion}": {"cuda_engine": "operators", "operators_loop": "host",
                                         "push_expansion": _expansion},
    })
#: Every configuration: both loop modes of the operators engine, every push expansion.
ALL_CUDA_CONFIGS = tuple(CUDA_CONFIGS)


def base_config(name: str) -> str:
    """The configuration without its pinned push expansion: "operators-host+group" ->
    "operators-host" (the expansion changes no result and no synchronization)."""
    return name.split("+", 1)[0]


def engine_of(name: str) -> str:
    """The ``engine_used`` a configuration (or "host") reports."""
    return CUDA_CONFIGS[name]["cuda_engine"] if name in CUDA_CONFIGS else name


def device_loop_replays(launches: int) -> int:
    """Replays of the operators device loop (conformance/replay.py owns the rule)."""
    from conformance.replay import device_loop_replays as replays

    return replays(launches)


#: Statistics every engine must agree on (algorithm.md §9); iterations, epochs, pushes never
#: compared.
COMPARED_STATS = ("invalidated", "affected", "packed_parents", "batch")


def fused_available() -> bool:
    from engines.sssp import cuda

    return cuda.fused_unavailable_reason(cuda.current_device()) is None


def skip_unless_it_runs(config: str) -> None:
    """Skip the calling test where the engine of ``config`` cannot run on this device (the fused
    engine without a cooperative launch); the operators engine runs everywhere."""
    if engine_of(config) == "fused" and not fused_available():
        pytest.skip("the fused engine cannot run on this device")


def compute_all(graph, source, *, engines=CUDA_ENGINES, **options) -> dict:
    """``compute()`` on the host and on each CUDA engine: {"host": r, "fused": r, ...}."""
    results = {"host": sssp.compute(graph, source, backend="host", **options)}
    for engine in engines:
        results[engine] = sssp.compute(graph, source, backend="cuda", **CUDA_CONFIGS[engine], **options)
    return results


def import_all(graph, source, distances, parents, *, engines=CUDA_ENGINES, validate=None,
               **options) -> dict:
    """The same (possibly non-canonical) tree imported as it is on every backend and engine."""
    host = sssp.Result.from_arrays(graph, source, distances, parents, canonicalize=False,
                                   validate=validate, backend="host", **options)
    results = {"host": host}
    for engine in engines:
        r = host.clone(backend="cuda")
        r.set_options(**CUDA_CONFIGS[engine])
        results[engine] = r
    return results


def perturb_all(rng, graph, results: dict, objective: int = 0) -> dict:
    """Re-import every result's tree with each tie parent a random tight in-neighbour
    (algorithm.md §13.4)."""
    host = results["host"]
    d, _ = host.to_numpy()
    ref = H.ref_of(graph)
    src, dst, w = ref.edges(objective)
    p = O.perturbed_parents(rng, ref.num_vertices, host.source, d, src, dst, w).astype(np.int32)
    engines = tuple(k for k in results if k != "host")
    opts = host.options
    return import_all(graph, host.source, d, p, engines=engines, objective=opts.objective,
                      delta=opts.delta)


def stats_shape_problems(stats, engine: str, *, update: bool) -> list[str]:
    """Where host_syncs and sync_budget differ from what algorithm.md §9 says for ``engine``."""
    problems = []
    if stats.engine_used != engine_of(engine):
        problems.append(f"engine_used {stats.engine_used!r}, expected {engine_of(engine)!r}")
    if engine == "host":
        if (stats.host_syncs, stats.sync_budget) != (0, 0):
            problems.append(f"host syncs {stats}")
    elif base_config(engine) == "fused":
        if (stats.host_syncs, stats.sync_budget) != (1, 1):
            problems.append(f"fused syncs {stats}")
    else:  # the operators engine in one of its loop modes
        from conformance.replay import operators_syncs

        loop = CUDA_CONFIGS.get(engine, {}).get("operators_loop", sssp.Options().operators_loop)
        # an update without candidates runs no loop: the host loop stops after #1 and the last
        # readback (2 syncs, against 3 for candidates without an iteration); the device loop runs
        # only the unpack (or recovery), which its first replay covers, as it covers a loop with
        # candidates but no iteration: the same count either way (device_loop_replays)
        without_loop = (update and loop == "host" and stats.iterations == 0 and stats.epochs == 0
                        and stats.host_syncs == 2)
        expected, budget = operators_syncs(loop, stats.iterations, stats.epochs, is_update=update,
                                           candidates=0 if without_loop else 1,
                                           packed=bool(stats.packed_parents))
        if stats.sync_budget != budget:
            problems.append(f"operators budget {stats}, expected {budget}")
        elif stats.host_syncs > stats.sync_budget:
            problems.append(f"operators over budget {stats}")
        elif stats.host_syncs != expected:
            problems.append(f"operators syncs {stats.host_syncs}, expected {expected}: {stats}")
    return problems


def check_stats_shape(stats, engine: str, *, update: bool) -> None:
    """host_syncs and sync_budget exactly as algorithm.md §9 says for ``engine``."""
    problems = stats_shape_problems(stats, engine, update=update)
    assert not problems, problems


def assert_conformant(results: dict, stats: dict | None = None, *, update: bool = False,
                      what: str = "") -> None:
    """Every result equals the host's byte for byte, and the compared statistics agree.

    Every engine is checked before failing, so one failure reports all the engines that differ.
    """
    host = results["host"]
    hd, hp = host.to_numpy()
    problems = []
    for name, r in results.items():
        if name == "host":
            continue
        d, p = r.to_numpy()
        if d.dtype != hd.dtype or p.dtype != hp.dtype:
            problems.append(f"{name}: dtypes {d.dtype}, {p.dtype}")
            continue
        bad = np.flatnonzero(d != hd)
        if bad.size:
            problems.append(f"{name}: {bad.size} distances differ from the host, at "
                            f"{bad[:8].tolist()}: {d[bad[:8]].tolist()} vs {hd[bad[:8]].tolist()}")
        bad = np.flatnonzero(p != hp)
        if bad.size:
            problems.append(f"{name}: {bad.size} parents differ from the host, at "
                            f"{bad[:8].tolist()}: {p[bad[:8]].tolist()} vs {hp[bad[:8]].tolist()}")
        if r.graph_version != host.graph_version:
            problems.append(f"{name}: graph_version {r.graph_version} vs {host.graph_version}")
    all_stats = stats if stats is not None else {k: r.stats for k, r in results.items()}
    reference = all_stats["host"]
    for name, st in all_stats.items():
        for field in COMPARED_STATS:
            if getattr(st, field) != getattr(reference, field):
                problems.append(f"{name}: {field} = {getattr(st, field)!r}, host "
                                f"{getattr(reference, field)!r}")
        problems += [f"{name}: {p}" for p in stats_shape_problems(st, name, update=update)]
    assert not problems, f"{what}: " + "; ".join(problems)


def update_all(graph, batch, results: dict) -> dict:
    """One ``update()`` carrying every result (one commit); {name: Stats}."""
    names = list(results)
    stats = sssp.update(graph, batch, *[results[k] for k in names])
    if not isinstance(stats, tuple):
        stats = (stats,)
    return dict(zip(names, stats))


def stats_dict(stats) -> dict:
    return {f.name: getattr(stats, f.name) for f in dataclasses.fields(stats)}


# ---------------------------------------------------------------------------------------------
# the golden corpus (tests/golden), for the GPU tests that replay it shard by shard

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"


def golden_shards() -> list[str]:
    """The corpus's shard files (none without a manifest: the parametrized tests then collect
    nothing)."""
    manifest = GOLDEN_DIR / "manifest.json"
    if not manifest.is_file():
        return []
    return sorted(json.loads(manifest.read_text())["files"])


@functools.lru_cache(maxsize=1)
def golden_corpus():
    """The whole corpus, loaded once per process."""
    from conformance.store import load_corpus

    return load_corpus(GOLDEN_DIR)


@contextlib.contextmanager
def recording_plans(monkeypatch, launch: str, record):
    """The device apply's commits under ``launch`` (its DEFAULT_LAUNCH) with every plan's steps
    passed to ``record`` as it is made; on leaving, every capture must have worked (a failed one
    would have launched the commit one by one). For the tests of a switch that changes the plan."""
    from engines.graph import device_apply

    monkeypatch.setattr(device_apply, "DEFAULT_LAUNCH", launch)
    original_plan, original_init = device_apply._plan, device_apply.ApplyScratch.__init__
    scratches = []

    def recorded_plan(*args, **kwargs):
        steps = original_plan(*args, **kwargs)
        record(steps)
        return steps

    def tracked(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        scratches.append(self)

    monkeypatch.setattr(device_apply, "_plan", recorded_plan)
    monkeypatch.setattr(device_apply.ApplyScratch, "__init__", tracked)
    yield
    problems = [s.capture_problem for s in scratches if s.capture_problem is not None]
    assert not problems, f"capture failed, the commits ran one by one: {problems[0]}"
