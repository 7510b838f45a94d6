"""Polling for the commit's record while a fused update runs (``ENGINES_FUSED_POLL_RECORD=1``, off
by default; engines/sssp/cuda/fused.py POLL_RECORD_ENV, runtime.poll_while_running).

With the switch on, update() chains through both CUDA engines must still equal the host reference
(the operators engine ignores the switch), every update must still synchronize exactly as often as
it says, counted by CUPTI from outside (event and stream queries are no synchronization), no read
of the record may wait for the device apply before the engine's synchronization, and a captured
fused update must have read its commit's record before its one wait.
"""

from __future__ import annotations

import pytest

from engines import sssp
from engines.sssp.cuda import fused, runtime

from .. import harness as H
from . import ops_support as S
from . import test_captured_apply as C
from . import test_syncs as Y

pytestmark = S.GPU

cupti_counter = Y.cupti_counter
test_polled_update_chains = C.test_update_chains_with_graph_launch_equal_the_host
test_polled_cupti_count = Y.test_cupti_count_equals_host_syncs
test_polled_no_early_wait = Y.test_no_wait_for_the_commit_before_the_engine_synchronizes


@pytest.fixture(autouse=True)
def polling(monkeypatch):
    monkeypatch.setenv(fused.POLL_RECORD_ENV, "1")


def test_a_polled_fused_update_has_read_its_record_before_its_wait(monkeypatch):
    """Whatever the timing: at the fused run's one wait (runtime.wait_record), the commit's record
    has been read, for every update of a chain."""
    if not S.fused_available():
        pytest.skip("no cooperative launch on this device")
    from engines.graph import device_apply

    seen = []
    real_wait = runtime.wait_record
    pending = []
    real_commit = device_apply.commit

    def tracked_commit(*args, **kwargs):
        out = real_commit(*args, **kwargs)
        pending.append(out)
        return out

    def checked_wait(*args, **kwargs):
        seen.append(pending[-1].resolved if pending else None)
        return real_wait(*args, **kwargs)

    monkeypatch.setattr(device_apply, "commit", tracked_commit)
    monkeypatch.setattr(runtime, "wait_record", checked_wait)
    graph, rng = Y._graph(8, n=800)
    r = sssp.compute(graph, 0, backend="cuda", update_launch="graph", **S.CUDA_CONFIGS["fused"])
    for _ in range(6):
        _, parents = r.to_numpy()
        batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), parents, 0, "mid"))
        sssp.update(graph, batch, r)
    assert len(seen) == 6 and all(x is True for x in seen), seen
