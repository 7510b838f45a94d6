"""``perf_ab.py sweep`` on the CUDA engines (issue 33): a small sweep end to end, every update
checked against the host reference and compute() from scratch before its times count."""

from __future__ import annotations

import json

import pytest

from bench import sweep, sweep_cmd
from protocol.records import RecordStore

from ..bench.graph_files import connected_edge_list
from .ops_support import GPU

pytestmark = GPU


def _graph_file(folder, n=400, m=1_600, seed=5):
    return connected_edge_list(folder, "tinygpu.edges", n, m, seed)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_cuda_sweep_end_to_end(tmp_path, processes):
    graph = _graph_file(tmp_path)
    out = tmp_path / "out"
    code = sweep_cmd.cli(["--engines", "cuda:fused,cuda:operators", "--graph-file", str(graph), "--sizes", "10", "100",
                      "1k", "--rounds", "6", "--processes", str(processes), "--max-foreign-cpu", "64",
                      "--no-control", "--allow-dirty", "--no-progress", "--out", str(out),
                      "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    record = json.loads((out / "sweep.json").read_text())
    info = record["graphs"]["tinygpu"]
    # a small graph: every CUDA update is checked against the host reference in every guard
    assert info["verify"] == {"cuda:fused": "host", "cuda:operators": "host"}
    for engine in ("cuda:fused", "cuda:operators"):
        store = RecordStore(out / info["campaigns"][engine])
        campaign = store.read_campaign()
        assert campaign["parameters"]["verify_host"] is True
        assert {c["status"] for c in campaign["cells"].values()} == {"done"}
        rows = store.read_rounds()
        timed = rows[~rows["warmup"] & rows["accepted"]]
        a, b = timed[timed["role"] == "A"], timed[timed["role"] == "B"]
        assert a["engine_device_ms"].notna().all()  # the update's engine region on CUDA events
        assert b["engine_device_ms"].isna().all()  # compute() is timed on the host clock
        assert (b["update_host_ms"] >= b["engine_host_ms"]).all()
        assert a["engine"].str.contains(engine.split(":")[1]).all()  # the engine asked for, not a fallback
    crossover = json.loads((out / "crossover.json").read_text())
    assert {(e["engine"], e["locality"]) for e in crossover["entries"]} == {
        (e, loc) for e in ("cuda:fused", "cuda:operators") for loc in ("uniform", "local")}
    assert all([p["size"] for p in e["points"]] == [10, 100, 1_000] for e in crossover["entries"])
    assert (out / "sweep.md").is_file() and (out / "plots" / "sweep-tinygpu.png").is_file()
