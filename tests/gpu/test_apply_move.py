"""The device apply's move of the untouched rows by segments (``ENGINES_APPLY_MOVE=segments``,
device_apply.cu ``apply_move_segments``).

Instead of reading every entry's row flag and both row offsets (``apply_move``), each block walks
the side's sorted events, which bound runs of untouched entries that all move by one shift, and
copies those runs. The graph it leaves must be the host twin's byte for byte: the device-graph
tests (random chains, the golden corpus, the real graphs) run again here with the switch on, under
both launches of the apply, and so do update() chains through both CUDA engines; then what only
the segments have: more touched rows in one block's range than one round of boundaries holds
(several rounds, a row's events straddling two), touched rows of new vertices and rows with no old
entries (a shift changes with no entry between), and a graph of many blocks with sparse and dense
batches. Every plan is recorded, so each test also checks that the segments' kernel ran (and every
capture worked: a failed one would launch the commit one by one).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines

from .. import harness as H
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D
from engines.graph import device_apply

pytestmark = S.GPU

(test_segments_random_chains, test_segments_golden_cases, test_segments_real_graphs,
 test_segments_update_chains, test_segments_mixed_results) = A.TESTS

#: Per plan made during a test: the move kernels it launches (by name).
_plans: list = []


def _move_kernels(steps) -> list[str]:
    names = {}
    module = device_apply.load_module(0)
    for offset in (np.int32, np.int64):
        functions = module.functions(np.int32, offset)
        for name in ("apply_move", "apply_move_segments"):
            names[id(functions[name])] = name
    return [names[id(step[1])] for step in steps if step[0] == "kernel" and id(step[1]) in names]


@pytest.fixture(autouse=True, params=["python", "graph"])
def segments_on(request, monkeypatch):
    """Every commit of this module's tests moves by segments (both launches of the apply);
    afterwards, every plan made must have moved both sides by segments, and every capture must
    have worked."""
    A.skip_python_launch(request, request.param)
    monkeypatch.setenv(device_apply.MOVE_ENV, "segments")
    _plans.clear()
    with S.recording_plans(monkeypatch, request.param, lambda steps: _plans.append(_move_kernels(steps))):
        yield request.param
    assert _plans, "no plan was made"
    assert all(kernels == ["apply_move_segments"] * 2 for kernels in _plans), _plans


def _chain(graph, twin, batches, what: str) -> None:
    graph.to_device()
    for step, batch in enumerate(batches):
        D._apply_both(graph, twin, H.make_batch(batch), f"{what}, step {step}")


def test_more_touched_rows_than_one_round_holds(segments_on):
    """A few thousand entries over few blocks, batches of up to 3,000 events on rows of one to
    hundreds of entries: a block's range meets more than one round (256) of boundaries, and the
    events of a long row straddle two rounds."""
    rng = np.random.default_rng(D._seed("rounds", segments_on))
    n = 400
    hubs = np.array([3, 150, 151, 399])
    src = np.concatenate([np.repeat(hubs, 300), rng.integers(0, n, 2000)])
    dst = np.concatenate([rng.integers(0, n, hubs.size * 300), rng.integers(0, n, 2000)])
    w = rng.integers(1, 100, (src.size, 1))
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    twin = D.host_twin(graph)
    batches = []
    for size in (3000, 700, 1, 257):
        rows = np.concatenate([rng.choice(hubs, size // 2), rng.integers(0, n, size - size // 2)])
        cols = rng.integers(0, n, size)
        half = size // 2
        batches.append((rows[:half], cols[:half], rng.integers(1, 100, (half, 1)),
                        np.concatenate([rows[half:], cols[:3]]), np.concatenate([cols[half:], rows[:3]])))
    _chain(graph, twin, batches, "rounds")


def test_new_vertices_and_rows_without_entries(segments_on):
    """Insertions from and into vertices with no entries yet (isolated ones, and new vertices past
    the old count): touched rows whose old range is empty change the shift between two entries
    with no touched entry between them, and rows past the old count end the walk."""
    rng = np.random.default_rng(D._seed("empty rows", segments_on))
    n = 300
    src = rng.integers(0, n, 900)
    src[src % 3 == 0] += 1  # every third vertex has no out-entries
    dst = rng.integers(0, n, 900)
    dst[dst % 5 == 0] += 1  # every fifth none in
    keep = (src < n) & (dst < n)
    src, dst = src[keep], dst[keep]
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 50, (src.size, 2)), num_vertices=n)
    twin = D.host_twin(graph)
    empty = np.arange(0, n, 3)
    batches = [
        (empty[:40], rng.integers(0, n, 40), rng.integers(1, 50, (40, 2)), src[:10], dst[:10]),
        (np.concatenate([empty[40:60], [n + 5, n + 2, n + 9]]), np.concatenate([rng.integers(0, n, 20), [0, 1, n]]),
         rng.integers(1, 50, (23, 2)), np.zeros(0, np.int64), np.zeros(0, np.int64)),
        (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.int64), src[10:200], dst[10:200]),
        (np.array([n + 20]), np.array([0]), np.array([[7, 7]]), np.array([n + 5]), np.array([0])),
    ]
    _chain(graph, twin, batches, "empty rows")


@pytest.mark.parametrize("fraction", [0.0002, 0.01, 0.2])
def test_a_graph_of_many_blocks(segments_on, fraction):
    """300,000 entries a side (about 150 blocks, and a grid cap's worth under the captured
    launch's capacity): batches touching a few rows per block, a 1 % batch, and a fifth of the
    rows (many rounds a block), deletions, upserts and appends mixed."""
    rng = np.random.default_rng(D._seed("many blocks", segments_on, fraction))
    n, m = 60_000, 300_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 1000, (m, 1)), num_vertices=n)
    twin = D.host_twin(graph)
    batches = []
    for _ in range(2):
        size = max(1, int(fraction * m))
        picked = rng.integers(0, m, size)
        new = size // 2
        isrc = np.concatenate([src[picked[:new // 2]], rng.integers(0, n + 10, new - new // 2)])
        idst = np.concatenate([dst[picked[:new // 2]], rng.integers(0, n, new - new // 2)])
        batches.append((isrc, idst, rng.integers(1, 1000, (new, 1)), src[picked[new:]], dst[picked[new:]]))
    _chain(graph, twin, batches, f"{fraction} of the entries")
