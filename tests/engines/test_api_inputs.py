"""update()'s arguments are checked before the commit (algorithm.md §8.2): a bad one changes
neither the graph nor its results."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError


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
