"""The pushes with and without the racy pre-check on the GPU (kernels.cuh push_list, the push
argument's SSSP_NO_PRECHECK_BIT, issue 34). Without it (the default; the rest of the GPU suite runs
so) every offer goes straight to its atomic minimum; ``ENGINES_PUSH_PRECHECK=1`` first loads the
neighbour's word. No write changes (a filtered offer is not below the word), so every run must
return the host reference's bytes. With the pre-check put back: the golden corpus,
randomized chains on the push-width shapes (packed and distance-only, with and without the fused
solo push) against the canonical tree and the host, and the same graph and batches with the
pre-check on and off giving equal bytes and compared statistics, with the block appends and
without.
"""

from __future__ import annotations

import numpy as np
import pytest

from engines.sssp.cuda import appends, push
from . import ops_support as S
from .test_push_width import SHAPES, shape_edges
from .test_wide_passes import SOLO, _configs, chains_with, replay_golden_with, switch_sides

pytestmark = S.GPU


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(monkeypatch, shard, solo):
    replay_golden_with(monkeypatch, push.PRECHECK_ENV, None, shard, solo, value="1")


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(monkeypatch, shape, words, solo):
    chains_with(monkeypatch, push.PRECHECK_ENV, None, shape, words, solo, seed=3405, value="1")


@pytest.mark.parametrize("appends_on", ["0", "1"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_with_and_without_the_precheck_the_same_bytes(monkeypatch, shape, appends_on):
    monkeypatch.setenv(appends.APPEND_ENV, appends_on)
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 3406)
    switch_sides(monkeypatch, push.PRECHECK_ENV, ("1", "0"), shape_edges(shape, "packed", rng),
                 _configs(), rng, delta=10**6)
