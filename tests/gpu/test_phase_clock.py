"""The fused kernel's phase clock on the GPU (fused.cu phase_mark, ``ENGINES_FUSED_PHASE_CLOCK``;
engines/sssp/cuda/phase_clock.py): a run of the instrumented module returns the same bytes as the
host reference, and its stamps account for every grid barrier the run reports (``grid_syncs``)
with one stamp per push iteration, epoch phase and jump round, in the kernel's order; the command
that prints them (bench/fused_phases.py) runs end to end.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from bench import fused_phases
from engines.sssp.cuda import fused, phase_clock, runtime
from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


@pytest.fixture(autouse=True)
def _clocked(monkeypatch):
    if not S.fused_available():
        pytest.skip("the fused engine does not run on this device")
    monkeypatch.setenv(fused.PHASE_CLOCK_ENV, "1")
    # the stamps counted here are the grid's push iterations: neither the solo push nor chains
    for name in (fused.SOLO_ENV, "ENGINES_PUSH_CHAIN"):
        monkeypatch.setenv(name, "0")


def _graph(seed: int, n: int = 3000, m: int = 24000):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    w = rng.integers(1, 1000, int(keep.sum()))
    return engines.Graph.from_edges(src[keep], dst[keep], w, num_vertices=n), rng


def _check(times, stats, *, update: bool):
    assert times is not None and times.dropped == 0
    kinds = list(times.kinds)
    assert kinds[-1] == "unpack"  # block 0's end, after the last barrier
    assert len(kinds) - 1 == stats.grid_syncs, (kinds, stats)
    assert kinds.count("push iteration") == stats.iterations
    assert kinds.count("epoch minimum") == kinds.count("epoch split") == stats.epochs
    assert all(c > 0 for c in times.cycles) and times.launch_ns > 0
    if update:
        assert kinds[:1] == ["pack and roots"]
        assert kinds.index("pull") < kinds.index("first split") < len(kinds) - 1
    else:
        assert kinds[:1] == ["seed"]


@pytest.mark.parametrize("delta", [1, 10**9])
def test_stamps_cover_every_barrier_and_change_no_byte(delta):
    graph, rng = _graph(34 + delta % 7)
    device = runtime.current_device()
    phase_clock.reset(device)
    results = S.compute_all(graph, 0, engines=("fused",), delta=delta)
    _check(phase_clock.read(device), results["fused"].stats, update=False)
    S.assert_conformant(results, what=f"compute delta {delta}")

    for kind in ("tree_delete", "mixed", "tree_increase"):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        phase_clock.reset(device)
        stats = S.update_all(graph, batch, results)
        _check(phase_clock.read(device), stats["fused"], update=True)
        S.assert_conformant(results, stats, update=True, what=f"{kind} delta {delta}")


def test_the_command_prints_both_tables(capsys):
    assert fused_phases.main(["--random-graph", "2000,16000", "--repeats", "3", "--warmup", "1",
                              "--compute"]) == 0
    out = capsys.readouterr().out
    assert "fused update()" in out and "fused compute()" in out
    assert "| push iteration |" in out and "| unpack |" in out
