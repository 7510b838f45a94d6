"""prepare() reads a run's switches once and hands the reading to the run (variants.RunChoice,
engines/sssp/cuda/__init__.py): the module prepare() compiled is the one the run loads, and the
run reads none of those switches again. Checked by spoiling the switches between prepare() and
the run: a run that read them again would refuse the spoiled values; this one must return the
host reference's bytes."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError
from engines.sssp import cuda as sssp_cuda
from engines.sssp.cuda import appends, chains, fused, passes
from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU

#: The switches a RunChoice reads (variants.run_choice), and a value each of them refuses.
SPOILED = {appends.APPEND_ENV: "bogus", chains.CHAIN_ENV: "bogus", chains.DEGREE_ENV: "bogus",
           passes.WIDE_ENV: "bogus", fused.SOLO_ENV: "bogus", fused.CAPTURE_ENV: "bogus"}
#: What the control's refusal names: one of the spoiled switches.
SPOILED_NAMES = "|".join(SPOILED)


def _graph_and_batches(seed: int, n: int = 3_000, m: int = 24_000, batches: int = 3, size: int = 200):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 100, src.size), num_vertices=n)
    out = []
    for _ in range(batches):
        pick = rng.choice(src.size, size // 2, replace=False)
        ins_src, ins_dst = rng.integers(0, n, size // 2), rng.integers(0, n, size // 2)
        ok = ins_src != ins_dst
        out.append(engines.Batch(insert_src=ins_src[ok], insert_dst=ins_dst[ok],
                                 insert_weights=rng.integers(1, 100, int(ok.sum())),
                                 delete_src=src[pick], delete_dst=dst[pick]))
    return graph, out


@pytest.mark.parametrize("config", ["fused", "operators", "operators-host"])
def test_the_run_uses_the_reading_prepare_handed_it(monkeypatch, config):
    if config == "fused" and not S.fused_available():
        pytest.skip("the fused engine does not fit this device")
    for name in SPOILED:
        monkeypatch.delenv(name, raising=False)
    graph, batches = _graph_and_batches(2710)
    host = sssp.compute(graph, 0, backend="host")
    cuda = sssp.compute(graph, 0, backend="cuda", **S.CUDA_CONFIGS[config])
    H.assert_result_bytes_equal(host, cuda)

    original = sssp_cuda.prepare
    choices = []

    def prepare_then_spoil(*args, **kwargs):
        choice = original(*args, **kwargs)
        choices.append(choice)
        for name, value in SPOILED.items():
            monkeypatch.setenv(name, value)
        return choice

    monkeypatch.setattr(sssp_cuda, "prepare", prepare_then_spoil)
    for batch in batches:
        for name in SPOILED:
            monkeypatch.delenv(name, raising=False)
        sssp.update(graph, batch, host, cuda)
        H.assert_result_bytes_equal(host, cuda)
    assert len(choices) == len(batches)
    assert all(c.defines == choices[0].defines for c in choices), choices

    # the control: the spoiled switches are refused when read, so the runs above did not read them
    monkeypatch.setattr(sssp_cuda, "prepare", original)
    for name, value in SPOILED.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(InvalidArgumentError, match=SPOILED_NAMES):
        sssp.update(graph, batches[0], cuda)
