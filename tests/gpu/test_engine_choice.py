"""The engine choice of docs/algorithm.md §10.1 (ADR 0026 item 4; algorithm.md §13.9): the three
``cuda_engine`` options on a cooperative device, and under the "no cooperative launch" hooks (the
context manager and ``ENGINES_NO_COOPERATIVE_LAUNCH=1``) "automatic" runs the operators engine while
"fused" raises ``NotSupportedError`` before anything changes. ``stats.engine_used`` names the engine
that ran.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import engines
from engines import errors, sssp

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


def _graph(seed=11, n=200):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, "sparse", n, 1, "mid")
    return engines.Graph.from_edges(src, dst, w, num_vertices=n), rng


def _batch(rng, graph, result):
    _, parents = result.to_numpy()
    return H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), parents, 0, "mid"))


@contextlib.contextmanager
def _hook(kind, monkeypatch):
    from engines.sssp import cuda

    if kind == "context":
        with cuda.without_cooperative_launch():
            yield
    else:
        with monkeypatch.context() as m:
            m.setenv("ENGINES_NO_COOPERATIVE_LAUNCH", "1")
            yield


@pytest.fixture
def cooperative_device():
    from engines.sssp.cuda import runtime

    info = runtime.device_info(runtime.current_device())
    if not info.cooperative_launch:
        pytest.skip("the device does not support cooperative launch")
    if not S.fused_available():
        pytest.skip("the fused kernel does not fit on this device")
    return info.device


@pytest.mark.parametrize("option,expected", [("automatic", "fused"), ("fused", "fused"),
                                             ("operators", "operators")])
def test_options_on_a_cooperative_device(cooperative_device, option, expected):
    graph, rng = _graph()
    host = sssp.compute(graph, 0, backend="host")
    r = sssp.compute(graph, 0, backend="cuda", cuda_engine=option)
    assert r.stats.engine_used == expected
    S.assert_conformant({"host": host, expected: r})
    batch = _batch(rng, graph, host)
    stats = S.update_all(graph, batch, {"host": host, expected: r})
    assert stats[expected].engine_used == expected
    S.assert_conformant({"host": host, expected: r}, stats, update=True)


@pytest.mark.parametrize("hook", ["context", "environment"])
def test_automatic_runs_operators_without_cooperative_launch(hook, monkeypatch):
    graph, rng = _graph(12)
    host = sssp.compute(graph, 0, backend="host")
    with _hook(hook, monkeypatch):
        r = sssp.compute(graph, 0, backend="cuda", cuda_engine="automatic")
        assert r.stats.engine_used == "operators"
        stats = S.update_all(graph, _batch(rng, graph, host), {"host": host, "operators": r})
        assert stats["operators"].engine_used == "operators"
        S.assert_conformant({"host": host, "operators": r}, stats, update=True)


@pytest.mark.parametrize("hook", ["context", "environment"])
def test_fused_raises_before_anything_changes(hook, monkeypatch):
    graph, rng = _graph(13)
    fused = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    fused.set_options(cuda_engine="fused")
    other = sssp.compute(graph, 0, backend="host")
    batch = _batch(rng, graph, other)
    before = (graph.version, graph.num_vertices, np.asarray(graph.row_ptr).tobytes(),
              np.asarray(graph.col_ind).tobytes(), np.asarray(graph.weights).tobytes())
    d0, p0 = fused.to_numpy()
    o0 = other.to_numpy()
    with _hook(hook, monkeypatch):
        with pytest.raises(errors.NotSupportedError) as info:
            sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")
        assert "operators" in str(info.value)
        with pytest.raises(errors.NotSupportedError) as info:
            sssp.update(graph, batch, other, fused)  # the host result must not be updated either
        assert "operators" in str(info.value) and "automatic" in str(info.value)
    after = (graph.version, graph.num_vertices, np.asarray(graph.row_ptr).tobytes(),
             np.asarray(graph.col_ind).tobytes(), np.asarray(graph.weights).tobytes())
    assert after == before
    assert not fused.poisoned and not other.poisoned
    d1, p1 = fused.to_numpy()
    assert d1.tobytes() == d0.tobytes() and p1.tobytes() == p0.tobytes()
    assert other.to_numpy()[0].tobytes() == o0[0].tobytes()
    assert fused.graph_version == graph.version == other.graph_version
    # the hook gone, the same result updates with the fused engine where it can run
    if S.fused_available():
        stats = sssp.update(graph, batch, other, fused)
        assert stats[1].engine_used == "fused"
        S.assert_conformant({"host": other, "fused": fused}, dict(zip(("host", "fused"), stats)),
                            update=True)


def test_operators_option_ignored_on_the_host():
    graph, _ = _graph(14, 50)
    r = sssp.compute(graph, 0, backend="host", cuda_engine="operators")
    assert r.stats.engine_used == "host"
