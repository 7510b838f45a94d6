"""prepare_gate and the ``prepare`` subcommand: real and stand-in gates, the cache, exit codes."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from bench import gates, prepare_cmd
from bench.gates import ALL_GATES, Gate
from bench.prepare import InputError, prepare_gate
from bench.weights import draw_weights
from engines.sssp import Options, compute

from .standin_checks import TINY, TINY_PARAMS


def run_cmd(argv):
    parser = argparse.ArgumentParser()
    prepare_cmd.add_arguments(parser)
    return prepare_cmd.main(parser.parse_args(argv))


def test_real_gate_prepared_and_cached(shared_graphs_dir, tmp_path):
    p = prepare_gate("uspowergrid", data_dir=shared_graphs_dir, cache_dir=tmp_path, progress=False)
    assert p.origin["kind"] == "real" and len(p.origin["sha256"]) == 64
    g = p.graph
    assert (g.num_vertices, g.num_edges, g.num_weights) == (4941, 13188, 3) and p.source == 0
    # weights: seed 12345, (m, 3), CSR edge order
    expected = draw_weights(g.num_edges)
    for k in range(3):
        np.testing.assert_array_equal(g.weight_column(k), expected[:, k])
        d, par = compute(g, 0, options=Options(objective=k)).to_numpy()
        np.testing.assert_array_equal(p.trees[k][0], d)
        np.testing.assert_array_equal(p.trees[k][1], par)
    assert set(p.batches) == {"safe50k", "unsafe50k", "local10k"}
    assert p.batches["local10k"].batch.num_insertions == 5000
    assert p.facts["largest_component_share"] == 1.0 and not p.facts["is_standin"]
    # read back from the cache: same digests, no rebuild (the cached facts keep the first build time)
    files = sorted(x.name for x in tmp_path.rglob("*") if x.is_file())
    again = prepare_gate("uspowergrid", data_dir=shared_graphs_dir, cache_dir=tmp_path, progress=False)
    assert sorted(x.name for x in tmp_path.rglob("*") if x.is_file()) == files
    assert {k: b.digest for k, b in again.batches.items()} == {k: b.digest for k, b in p.batches.items()}
    assert again.facts["build_seconds"] == p.facts["build_seconds"]


def test_standin_gate_records_its_generator(monkeypatch, tmp_path):
    params, tiny = TINY_PARAMS, TINY
    monkeypatch.setitem(gates.GATES, "tiny", tiny)
    p = prepare_gate("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c", progress=False)
    assert p.origin["kind"] == "standin" and p.origin["generator"] == "road_grid"
    assert p.origin["params"] == params and p.origin["seed"] == 4 and p.is_standin
    assert p.facts["standin"]["params"] == params
    assert p.graph.num_vertices == 3000 and p.graph.num_edges == 8400
    # a changed parameter is a new cache entry, never the stale one
    monkeypatch.setitem(gates.GATES, "tiny", Gate("tiny", "road", ("tiny.mtx",), tiny.facts, 5, "road_grid",
                                                   dict(params, seed=5)))
    q = prepare_gate("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c", progress=False)
    assert q.facts["cache_key"] != p.facts["cache_key"]
    assert not np.array_equal(np.asarray(q.graph.col_ind), np.asarray(p.graph.col_ind))
    # a real file in the data folder wins over the stand-in, once its counts are the gate's (a
    # 3-vertex file named like the gate is another graph and is refused)
    (tmp_path / "tiny.mtx").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n")
    with pytest.raises(InputError, match="3 vertices, but the gate tiny"):
        prepare_gate("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c", progress=False, with_batches=False)
    pairs = [(i + 1, i) for i in range(1, 3000)] + [(i + 2, i) for i in range(1, 1202)]  # 4,200 edges
    (tmp_path / "tiny.mtx").write_text("%%MatrixMarket matrix coordinate pattern symmetric\n3000 3000 4200\n"
                                       + "".join(f"{a} {b}\n" for a, b in pairs))
    r = prepare_gate("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c", progress=False, with_batches=False)
    assert r.origin["kind"] == "real" and r.graph.num_edges == 8400


def test_cmd_success_prints_facts(shared_graphs_dir, tmp_path, capsys):
    assert run_cmd(["--graphs", "uspowergrid", "--data-dir", str(shared_graphs_dir.parent),
                    "--cache-dir", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "uspowergrid" in out and "4,941" in out and "local10k" in out


def test_cmd_exit_2_on_missing_file(tmp_path, capsys):
    assert run_cmd(["--graphs", "luxembourg_osm", "--data-dir", str(tmp_path / "empty"),
                    "--cache-dir", str(tmp_path), "--no-progress"]) == 2
    assert "luxembourg_osm.edges" in capsys.readouterr().err


def test_cmd_exit_2_on_corrupt_file(tmp_path, capsys):
    (tmp_path / "uspowergrid.edges").write_text("1 2\n2 3\nthree 4\n")
    assert run_cmd(["--graphs", "uspowergrid", "--data-dir", str(tmp_path),
                    "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "uspowergrid.edges, line 3" in err


def test_cmd_exit_2_on_unknown_gate(tmp_path, capsys):
    assert run_cmd(["--graphs", "roadNet-XX", "--cache-dir", str(tmp_path)]) == 2
    # the one refusal every bench command gives (bench.gates.check_gate_names), before any work
    assert capsys.readouterr().err == (
        f"prepare: unknown gate name(s): roadNet-XX (known: {', '.join(ALL_GATES)})\n")
    assert not any(tmp_path.iterdir())


def test_perf_ab_script_exit_2_on_missing_file(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "perf_ab.py"
    proc = subprocess.run([sys.executable, str(script), "prepare", "--graphs", "uspowergrid",
                           "--data-dir", str(tmp_path), "--cache-dir", str(tmp_path / "c"), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "uspowergrid.edges" in proc.stderr


# -- the cached inputs' JSON and digest files ----------------------------------------------------
def test_the_cache_files_beside_the_arrays_are_written_whole(monkeypatch, tmp_path, interrupted_write):
    """facts.json, the trees' digest, the batches' facts: each, damaged and so rebuilt, is replaced
    whole or not at all (an interrupted write leaves the earlier file and no temporary one)."""
    monkeypatch.setitem(gates.GATES, "tiny", TINY)
    cache = tmp_path / "c"
    first = prepare_gate("tiny", data_dir=tmp_path, cache_dir=cache, progress=False)
    [folder] = (cache / "gates").iterdir()
    sidecars = sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".sha256"))
    assert "facts.json" in sidecars and any(n.endswith(".sha256") for n in sidecars)
    assert any(n.startswith("batches-") for n in sidecars)
    kept = {name: (folder / name).read_text() for name in sidecars}
    for name in sidecars:
        interrupted_write.paths.clear()
        interrupted_write.of(folder / name)  # damaged: rebuilt, and its write interrupted
        with pytest.raises(OSError, match="No space left on device"):
            prepare_gate("tiny", data_dir=tmp_path, cache_dir=cache, progress=False)
        interrupted_write.check_kept()
        (folder / name).write_text(kept[name])
    interrupted_write.paths.clear()
    again = prepare_gate("tiny", data_dir=tmp_path, cache_dir=cache, progress=False)
    assert {name: (folder / name).read_text() for name in sidecars} == kept
    assert {k: b.digest for k, b in again.batches.items()} == {k: b.digest for k, b in first.batches.items()}


def test_the_initial_tree_check_record_is_written_whole(monkeypatch, tmp_path, interrupted_write):
    """The check's record (a graph file's, trees-...check.json) is replaced whole or not at all."""
    from types import SimpleNamespace

    from bench import prepare

    trees = [(np.arange(4, dtype=np.int64), np.array([-1, 0, 1, 2], dtype=np.int32))]
    plan = SimpleNamespace(tree_check=lambda graph, trees, source: {"checked": "against SciPy"})
    prepared = SimpleNamespace(name="g", graph=None, source=0, trees=trees)
    record = tmp_path / f"trees-v{prepare.TREES_VERSION}-s0.check.json"
    facts = prepare._checked_trees(plan, prepared, tmp_path, prepare.Progress(False))
    assert facts == {"checked": "against SciPy", "trees_sha256": prepare.trees_sha256(trees)}
    assert record.read_text() == json.dumps(facts, indent=1, sort_keys=True)
    interrupted_write.of(record)  # another set of trees' record: checked again, its write interrupted
    with pytest.raises(OSError, match="No space left on device"):
        prepare._checked_trees(plan, prepared, tmp_path, prepare.Progress(False))
    interrupted_write.check_kept()
