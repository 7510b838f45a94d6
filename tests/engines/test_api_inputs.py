"""update()'s arguments are checked before the commit (algorithm.md §8.2): a bad one changes
neither the graph nor its results."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError, StaleResultError


class HalfProbe:
    def engine_start(self, stream):
        pass


@pytest.mark.parametrize("probe, missing", [(object(), "engine_start and engine_stop"), (HalfProbe(), "engine_stop"),
                                            (1, "engine_start and engine_stop")])
def test_a_probe_without_its_calls_is_refused_before_the_commit(probe, missing):
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 1, 1])
    r = sssp.compute(g, 0)
    before = (g.version, g.state_id, g.col_ind.tobytes(), [a.tobytes() for a in r.to_numpy()])
    with pytest.raises(InvalidArgumentError, match=f"^probe must be None or have callable {missing}, got "):
        sssp.update(g, engines.Batch([0], [3], [1]), r, probe=probe)  # committed, then poisoned r
    assert not r.poisoned
    assert (g.version, g.state_id, g.col_ind.tobytes(), [a.tobytes() for a in r.to_numpy()]) == before
    sssp.update(g, engines.Batch([0], [3], [1]), r)
    assert r.to_numpy()[0].tolist() == [0, 1, 2, 1]


class InterruptedProbe:
    """Ctrl-C as the engine finishes: the result's arrays hold the new tree, its version the old."""

    def engine_start(self, stream):
        pass

    def engine_stop(self, stream):
        raise KeyboardInterrupt


def test_an_interrupted_update_poisons_its_result():
    # the interrupted result stayed healthy at version 0 while its arrays showed version 1's tree
    # (0 1 2 1): readable as the old state, a silent wrong answer
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 1, 1])
    r, later = sssp.compute(g, 0), sssp.compute(g, 1)
    later_before = [a.tobytes() for a in later.to_numpy()]
    with pytest.raises(KeyboardInterrupt):
        sssp.update(g, engines.Batch([0], [3], [1]), r, later, probe=InterruptedProbe())
    assert g.version == 1 and r.poisoned
    with pytest.raises(StaleResultError, match="left unusable by a failed update"):
        r.distances
    # the interrupt stops the update: a result after it was not run and describes version 0 still
    assert not later.poisoned and later.graph_version == 0
    assert [a.tobytes() for a in later.to_numpy()] == later_before
