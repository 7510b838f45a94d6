"""The change lists' staging over a grid (``ENGINES_CHANGES_GRID``, device_apply.cu
write_changes) without a GPU (the switch's spellings: tests/engines/test_switches.py): the
blocks it asks for, the kernel each launch takes, the launch a captured run gets (dimensions fixed by the
reserved capacity), and the grid's partition of the insertions: a model of the kernel's
arithmetic (each block's chunk, each thread's run, the count before the chunk) must write every
increased insertion once, in order, at the slot a sequential compaction gives it. The bytes are
checked on the GPU (tests/gpu/test_changes_grid.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.graph import device_apply as da

from tests.switch_env import set_switch


@pytest.fixture
def device_with_132(monkeypatch):
    monkeypatch.setattr(da.runtime, "device_info", lambda device: SimpleNamespace(multiprocessors=132))


@pytest.mark.parametrize("events, on, blocks", [
    (48_227, "0", 1),                        # off: one block whatever the batch
    (48_227, None, 12),                      # unset: the grid (the default)
    (0, "1", 1), (1, "1", 1), (da.CHANGES_PER_BLOCK, "1", 1), (da.CHANGES_PER_BLOCK + 1, "1", 2),
    (48_227, "1", 12),                       # roadNet-PA safe50k's events
    (10**7, "1", 132),                       # at most one a multiprocessor
])
def test_the_blocks(monkeypatch, device_with_132, events, on, blocks):
    set_switch(monkeypatch, da.CHANGES_GRID_ENV, on)
    assert da.changes_blocks(events, 0, da.changes_grid()) == blocks


def test_the_commit_reads_the_switch_first(monkeypatch):
    """A bad value is refused by the commit before it touches the graph or the device (the engines
    stage the lists after the commit, where a refusal would poison their results)."""
    monkeypatch.setenv(da.CHANGES_GRID_ENV, "grid")
    monkeypatch.setattr(da, "cupy_module", lambda: pytest.fail("the device was reached first"))
    with pytest.raises(errors.InvalidArgumentError, match=da.CHANGES_GRID_ENV):
        da.commit(object(), SimpleNamespace(n_after=3, size=5), (1,), (1,), "stream")


def test_the_commit_carries_its_reading_to_the_staging(monkeypatch):
    """The switch read once per commit: an empty batch's commit (no device work) carries it too."""
    monkeypatch.setattr(da, "cupy_module", lambda: None)
    dgraph = SimpleNamespace(current=SimpleNamespace(num_weights=1, num_edges=4, num_vertices=3),
                             scratch=SimpleNamespace(num_weights=1))
    events = SimpleNamespace(n_after=3, n_old=3, size=0, num_deletions=0, out_of_range=0)
    for on in ("1", "0"):
        monkeypatch.setenv(da.CHANGES_GRID_ENV, on)
        pending = da.commit(dgraph, events, (1,), (1,), "stream")
        assert pending.changes_grid is (on == "1")


class _Module:
    def functions(self, vertex, offset):  # CompiledModule.functions: every kernel by name
        return {name: name for name in da.KERNELS}


@pytest.mark.parametrize("on, cap, kernel, blocks", [
    ("0", 100_000, "apply_changes_sized", 1),         # off: one block of the same kernel
    (None, 100_000, "apply_changes_sized", 25),       # unset: the grid
    ("1", 1024, "apply_changes_sized", 1),
    ("1", 100_000, "apply_changes_sized", 25),        # sized by the reserved capacity, not the batch
])
def test_a_captured_run_gets_the_capacitys_grid(monkeypatch, device_with_132, on, cap, kernel, blocks):
    set_switch(monkeypatch, da.CHANGES_GRID_ENV, on)
    monkeypatch.setattr(da, "load_module", lambda device: _Module())
    scratch = SimpleNamespace(device=0, num_weights=2, sizes="sizes", ev_src="src", ev_dst="dst", increased="inc",
                              event_cap=cap)
    commit = da.PendingCommit.__new__(da.PendingCommit)
    commit.scratch, commit.events, commit._pending, commit._expired = scratch, SimpleNamespace(size=5), True, False
    commit.changes_grid = da.changes_grid()  # as the commit reads it
    fn, args, dims = commit.sized_staging(0, "from", "to", "heads", "count")
    assert fn == kernel and dims == ((blocks,), (da.CHANGES_THREADS,))
    assert args[:4] == ("sizes", "src", "dst", "inc") and args[6:] == ("from", "to", "heads", "count")


@pytest.mark.parametrize("on, kernel, blocks", [("0", "apply_changes", 1), ("1", "apply_changes", 12),
                                                (None, "apply_changes", 12)])
def test_a_launch_from_python_gets_the_batchs_grid(monkeypatch, device_with_132, on, kernel, blocks):
    set_switch(monkeypatch, da.CHANGES_GRID_ENV, on)
    launched = []
    monkeypatch.setattr(da, "load_module", lambda device: SimpleNamespace(
        functions=lambda v, o: {name: (lambda name: lambda grid, block, args, stream: launched.append(
            (name, grid, block, int(args[0]), int(args[1]))))(name) for name in da.KERNELS}))
    scratch = SimpleNamespace(device=0, num_weights=1, ev_src="src", ev_dst="dst", increased="inc", event_cap=10**6)
    commit = da.PendingCommit.__new__(da.PendingCommit)
    events = SimpleNamespace(size=48_227, num_deletions=23_227, num_insertions=25_000)
    commit.scratch, commit.events, commit._expired = scratch, events, False
    commit.changes_grid = da.changes_grid()
    commit.stage_changes(0, "from", "to", "heads", "count", stream="s")
    assert launched == [(kernel, (blocks,), (da.CHANGES_THREADS,), 23_227, 25_000)]


def _grid_model(flags: np.ndarray, blocks: int, threads: int) -> tuple[list, int]:
    """write_changes's arithmetic for the increased insertions (device_apply.cu): per block the
    chunk [lo, hi), the count before it, each thread's run and its exclusive scan; the (slot,
    insertion) pairs written and the changed count (deletions left out: 0 of them here)."""
    n = flags.size
    chunk = (n + blocks - 1) // blocks
    written, count = [], None
    for block in range(blocks):
        lo = min(block * chunk, n)
        hi = min(lo + chunk, n)
        earlier = int(flags[:lo].sum()) if block > 0 else 0
        per = (hi - lo + threads - 1) // threads
        runs = []
        for tid in range(threads):
            first = lo + tid * per if lo + tid * per < hi else hi
            last = first + per if first + per < hi else hi
            runs.append((first, last))
        mine = [int(flags[a:b].sum()) for a, b in runs]
        before = np.concatenate(([0], np.cumsum(mine)[:-1]))
        for (a, b), start in zip(runs, before):
            at = earlier + int(start)
            for i in range(a, b):
                if flags[i]:
                    written.append((at, i))
                    at += 1
        if block == blocks - 1:
            count = earlier + sum(mine)
    return written, count


@pytest.mark.parametrize("n, blocks, threads", [(0, 1, 8), (5, 1, 8), (5, 8, 8), (37, 3, 4), (100, 7, 8),
                                                (4096, 12, 32), (1000, 132, 8), (17, 4, 1)])
def test_the_grid_writes_every_increased_insertion_once_in_order(n, blocks, threads):
    rng = np.random.default_rng(n * 1000 + blocks)
    flags = rng.random(n) < 0.4
    written, count = _grid_model(flags, blocks, threads)
    want = np.flatnonzero(flags)
    assert count == want.size
    assert sorted(written) == list(enumerate(want.tolist()))  # slot j holds the j-th increased insertion
