"""The device apply's lanes per touched row (``ENGINES_APPLY_GROUP``, device_apply.cu ``Group``):
apply_decide and apply_rebuild walk a row's events and entries with 2^shift lanes of a warp
instead of the whole warp, several rows per warp.

The graph a commit leaves must be the host twin's byte for byte whatever the width: the
device-graph tests (random chains, the golden corpus, the real graphs, update() chains through
both CUDA engines) run again with one lane per row (every vote, sum and compaction over a group of
one), four lanes and the degree rule (the default: the rest of the GPU suite runs under it too),
under both launches of the apply; then what only the width
has: rows much longer than the group, touched by many events each (deletions of parallel copies,
upserts, appends and duplicates in one batch). Every plan is recorded: each test also checks that
the width it sets reached both kernels (and that every capture worked).
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

(test_group_random_chains, test_group_golden_cases, test_group_real_graphs,
 test_group_update_chains, test_group_mixed_results) = A.TESTS

#: The shifts of the row kernels (apply_decide, apply_rebuild: their last argument) per plan made.
_shifts: list = []


def _row_kernel_shifts(steps) -> list[int]:
    """The group shift each row kernel of a plan takes: apply_decide's and apply_rebuild's last
    argument (the only kernels with a group)."""
    names = {id(fn): name for name in ("apply_decide", "apply_rebuild") for fn in _functions(name)}
    return [int(step[3][-1]) for step in steps if step[0] == "kernel" and id(step[1]) in names]


def _functions(name: str):
    module = device_apply.load_module(0)
    return [module.functions(np.int32, offset)[name] for offset in (np.int32, np.int64)]


@pytest.fixture(autouse=True, params=[("1", 0), ("4", 2), ("degree", None)],
                ids=["one lane", "four lanes", "degree"])
def group_width(request, monkeypatch):
    """Every commit of this module's tests walks its rows with the parameter's width."""
    value, shift = request.param
    monkeypatch.setenv(device_apply.GROUP_ENV, value)
    return value, shift


@pytest.fixture(autouse=True, params=["python", "graph"])
def launch(request, monkeypatch, group_width):
    """Both launches of the apply; afterwards (a test that ran), some plan must have passed the
    width to both row kernels of both sides (the degree rule: some width of at least GROUP_MIN
    lanes), and every capture must have worked."""
    A.skip_python_launch(request, request.param)
    _shifts.clear()
    with S.recording_plans(monkeypatch, request.param, lambda steps: _shifts.append(_row_kernel_shifts(steps))):
        yield request.param
    _, shift = group_width
    assert _shifts, "no plan was made"
    for shifts in _shifts:
        assert len(shifts) == 4, shifts  # two sides, two row kernels each
        if shift is not None:
            assert set(shifts) == {shift}
        else:
            assert len(set(shifts)) == 1 and device_apply.GROUP_MIN.bit_length() - 1 <= shifts[0] <= 5


def test_long_rows_touched_by_many_events_give_the_host_bytes(group_width, launch):
    """A few hub rows of hundreds of entries with parallel copies, each batch deleting copies,
    upserting, appending new pairs twice and re-inserting what it deleted: every row spans many
    chunks of the group and holds many events, on both sides (hubs as sources and as targets)."""
    rng = np.random.default_rng(D._seed("long rows", group_width[0], launch))
    n, hubs = 300, np.array([0, 7, 150])
    src = np.concatenate([np.repeat(hubs, 400), rng.integers(0, n, 600)])
    dst = np.concatenate([rng.integers(0, 40, 3 * 400), np.repeat(hubs, 200)])
    w = rng.integers(1, 100, (src.size, 2))
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    twin = D.host_twin(graph)
    graph.to_device()
    for step in range(4):
        rows = rng.choice(hubs, 120)
        targets = rng.integers(0, 60, 120)
        dsrc, ddst = np.concatenate([rows[:60], targets[60:]]), np.concatenate([targets[:60], rows[60:]])
        isrc = np.concatenate([rows, rows[:30], dsrc[:20]])
        idst = np.concatenate([targets, targets[:30], ddst[:20]])
        iw = rng.integers(1, 100, (isrc.size, 2))
        batch = H.make_batch((isrc, idst, iw, dsrc, ddst))
        D._apply_both(graph, twin, batch, f"step {step}")
