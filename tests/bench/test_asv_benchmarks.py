"""The asv benchmark module, run directly at the ``tiny`` scale, and asv's own check of the suite."""

from __future__ import annotations

import importlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp import backends

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench_modules(monkeypatch, tmp_path):
    monkeypatch.setenv("SSSPAB_ASV_SCALE", "tiny")
    monkeypatch.setenv("SSSPAB_CACHE_DIR", str(tmp_path))
    common = importlib.import_module("benchmarks.common")
    module = importlib.import_module("benchmarks.sssp_engines")
    module._STATES.clear()
    module._GRAPHS.clear()
    module._TIMINGS.clear()
    apply_module = importlib.import_module("benchmarks.graph_apply")
    apply_module._APPLY.clear()
    module.graph_apply = apply_module  # the tests below reach both suites through one fixture
    return common, module


def _methods(cls, prefixes=("time_", "track_")):
    return [name for name in dir(cls) if name.startswith(prefixes)]


def test_every_benchmark_runs_or_skips(bench_modules):
    common, module = bench_modules
    ran = set()
    for cls in (module.Compute, module.Update, module.EngineRegion, module.OperatorsOverFused,
                module.graph_apply.Apply):
        for params in itertools.product(*cls.params):
            bench = cls()
            try:
                bench.setup(*params)
            except NotImplementedError:  # asv's skip: only CUDA benchmarks, only without a GPU
                assert not backends.cuda_available()
                assert cls is module.OperatorsOverFused or params[0].startswith("cuda")
                continue
            for name in _methods(cls):
                bench.setup(*params)  # asv re-runs setup before every call
                value = getattr(bench, name)(*params)
                if name.startswith("track_"):
                    assert isinstance(value, (int, float)) and value >= 0, (cls.__name__, name, params)
                    assert getattr(cls, name).unit
                ran.add((cls.__name__, name, params[0]))
    assert ("Update", "time_update", "host") in ran and ("Compute", "time_compute", "host") in ran
    assert ("EngineRegion", "time_engine", "host") in ran
    assert ("Apply", "time_apply", "host") in ran and ("Apply", "track_edges_after", "host") in ran


def test_host_counters_match_the_api(bench_modules):
    common, module = bench_modules
    bench = module.Update()
    inputs = common.load_inputs()
    for kind in common.BATCHES:
        bench.setup("host", kind)
        assert bench.track_host_syncs("host", kind) == 0
        bench.setup("host", kind)
        affected = bench.track_affected("host", kind)
        # the same update through the public API, from scratch
        graph = common.build_graph(inputs)
        result = sssp.compute(graph, common.SOURCE)
        batch = engines.Batch(*(inputs[f"{kind}/{k}"] for k in
                                ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst")))
        stats = sssp.update(graph, batch, result)
        assert affected == stats.affected > 0
        # and setup really restores the pre-batch state: a second run gives the same tree
        bench.setup("host", kind)
        bench.time_update("host", kind)
        assert np.array_equal(bench.state.work.distances, result.distances)
        assert np.array_equal(bench.state.work.parents, result.parents)


def test_apply_benchmark_starts_every_call_from_the_snapshot(bench_modules):
    common, module = bench_modules
    Apply = module.graph_apply.Apply
    assert Apply.number == 1 and Apply.warmup_time == 0  # asv then runs setup before every call
    inputs = common.load_inputs()
    batch = common.load_batch(inputs, common.APPLY_BATCH)
    fresh = common.build_graph(inputs)
    fresh.apply(batch)
    bench = Apply()
    for _ in range(3):
        bench.setup("host")  # restores the snapshot outside the timed call
        graph = bench.state.graph
        assert graph.state_id == bench.state.snapshot.state_id
        version = graph.version
        bench.time_apply("host")
        # the call really applied the batch (one commit, a new state), from the pre-batch state
        assert graph.version == version + 1 and graph.state_id != bench.state.snapshot.state_id
        assert graph.num_edges == fresh.num_edges
        # the same apply as on a fresh graph: byte-identical CSR
        assert np.array_equal(np.asarray(graph.row_ptr), np.asarray(fresh.row_ptr))
        assert np.array_equal(np.asarray(graph.col_ind), np.asarray(fresh.col_ind))
        assert np.array_equal(np.asarray(graph.weights), np.asarray(fresh.weights))
    bench.setup("host")
    assert bench.track_edges_after("host") == fresh.num_edges


def test_apply_benchmark_skips_the_device_without_a_gpu(bench_modules):
    if backends.cuda_available():
        pytest.skip("a GPU is present: the device variant runs (tests/gpu covers the device apply)")
    _, module = bench_modules
    with pytest.raises(NotImplementedError):
        module.graph_apply.Apply().setup("cuda")


def test_inputs_are_deterministic_and_cached(bench_modules, tmp_path):
    common, _ = bench_modules
    first = common.load_inputs()
    cached = list((tmp_path / "asv").glob("*.npz"))
    assert len(cached) == 1 and "tiny" in cached[0].name
    again = common.load_inputs()
    for key in first:
        assert np.array_equal(first[key], again[key]), key
    cached[0].unlink()
    fresh = common.load_inputs()
    for key in first:
        assert np.array_equal(first[key], fresh[key]), key
    n = first["row_ptr"].size - 1
    assert n == 30 * 30
    assert first["uniform/insert_src"].size + first["uniform/delete_src"].size == common.SCALES["tiny"]["uniform"]


def test_scale_must_be_known(monkeypatch, bench_modules):
    common, _ = bench_modules
    monkeypatch.setenv("SSSPAB_ASV_SCALE", "huge")
    with pytest.raises(ValueError, match="SSSPAB_ASV_SCALE"):
        common.scale()


def test_asv_config_points_at_the_suite():
    conf = json.loads((REPO / "asv.conf.json").read_text())
    assert (REPO / conf["benchmark_dir"] / "sssp_engines.py").is_file()
    assert conf["environment_type"] in ("virtualenv", "existing", "conda", "mamba")
    assert conf["results_dir"].startswith(".asv")


@pytest.mark.skipif(shutil.which("git") is None, reason="asv needs git")
@pytest.mark.slow
def test_asv_check_discovers_the_suite(tmp_path):
    pytest.importorskip("asv")
    proc = subprocess.run([sys.executable, "-m", "asv", "check", "--python=same"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "SSSPAB_ASV_SCALE": "tiny",
                                                       "SSSPAB_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No problems found" in proc.stdout

