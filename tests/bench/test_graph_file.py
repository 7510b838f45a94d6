"""Bring your own graph: ``perf_ab.py prepare|engines --graph-file`` in every format, measured the
way a gate is (issue 15): weights, batches and trees from the gates' generators and seeds, a
host,host campaign end to end, the report naming the file, its SHA-256 and its facts; and every
bad input ending with exit 2 and one line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import batches as batches_mod
from bench import perf_ab
from bench.graph_file import default_name, make_spec, prepare_graph_file
from bench.weights import draw_weights
from engines.io import input_sha256
from engines.sssp import Options, compute

from .graph_files import FORMATS, N, directed_csr, dimacs_weight, mosp_weights, undirected_edges, write_format

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "perf_ab.py"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
HOST_CAMPAIGN = ["--sides", "host,host", "--batches", "local10k", "--objectives", "0", "--rounds", "5",
                 "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


def prepare(*argv):
    return perf_ab.main(["prepare", "--no-progress", *map(str, argv)])


def engines(*argv):
    return perf_ab.main(["engines", *HOST_CAMPAIGN, *map(str, argv)])


def run_script(*argv, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


# ---- every format, end to end ----------------------------------------------------------------

@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.slow
def test_campaign_on_a_graph_file_in_each_format(tmp_path, capsys, name):
    path, options, fmt = write_format(name, tmp_path / "data")
    out, cache = tmp_path / "results", tmp_path / "cache"
    assert engines("--graph-file", path, *options, "--out", out, "--cache-dir", cache) == 0, capsys.readouterr().err
    printed = capsys.readouterr()
    graph_name = default_name(path)
    assert f"{graph_name}/local10k/0" in printed.out

    campaign = json.loads((out / "campaign.json").read_text())
    [entry] = campaign["inputs"]
    origin = entry["origin"]
    assert entry["graph"] == graph_name and campaign["parameters"]["graphs"] == [graph_name]
    assert origin["kind"] == "file" and origin["format"] == fmt
    assert origin["sha256"] == input_sha256(path, fmt) and origin["weights"] == "random"
    assert (entry["n"], entry["m"], entry["K"]) == (N, 2 * len(undirected_edges()), 3)
    assert entry["facts"]["initial_tree_check"]["result"] == "equal"
    assert campaign["cells"][f"{graph_name}/local10k/0"]["status"] == "done"

    report = (out / "M7.md").read_text()
    assert f"real files: {graph_name}" in report
    assert "graph file " in report and origin["sha256"] in report
    assert f"Facts: vertices {N}; directed edges {entry['m']:,}" in report
    assert "--graph-file" in report.split("## 9. Reproduce", 1)[1]

    # the prepared inputs are the gates' recipe applied to this graph
    prepared = prepare_graph_file(make_spec(path, symmetrize=True if options else None), cache_dir=cache,
                                  progress=False)
    g = prepared.graph
    row_ptr, col_ind = directed_csr(undirected_edges())
    np.testing.assert_array_equal(np.asarray(g.row_ptr, dtype=np.int64), row_ptr)
    np.testing.assert_array_equal(np.asarray(g.col_ind), col_ind)
    expected_w = draw_weights(g.num_edges)
    for k in range(3):
        np.testing.assert_array_equal(g.weight_column(k), expected_w[:, k])
        d, p = compute(g, 0, options=Options(objective=k)).to_numpy()
        np.testing.assert_array_equal(prepared.trees[k][0], d)
        np.testing.assert_array_equal(prepared.trees[k][1], p)
    drawn = batches_mod.draw_gate_batches(g, radius=prepared.facts["local_radius"], source=0)
    assert {k: b.digest for k, b in prepared.batches.items()} == {k: b.facts["digest"] for k, b in drawn.items()}
    assert prepared.facts["local_radius"] == max(1, -(-prepared.facts["hop_diameter_lower_bound"] // 8))


def test_every_format_gives_the_same_inputs(tmp_path):
    digests = {}
    for name in FORMATS:
        path, options, _ = write_format(name, tmp_path / name)
        spec = make_spec(path, name="same", symmetrize=True if options else None)
        p = prepare_graph_file(spec, cache_dir=tmp_path / "cache", progress=False)
        digests[name] = {k: b.digest for k, b in p.batches.items()}
    assert len({json.dumps(d, sort_keys=True) for d in digests.values()}) == 1, digests


def test_prepare_prints_the_file_and_its_facts(tmp_path, capsys):
    path, _, _ = write_format("edge_list", tmp_path)
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 0
    out = capsys.readouterr().out
    assert f"file {path.resolve()} (edge_list, sha256 {input_sha256(path)[:16]})" in out
    assert f"{N}" in out and "local10k" in out


@pytest.mark.slow
def test_resume_a_graph_file_campaign(tmp_path, capsys):
    path, _, _ = write_format("edge_list", tmp_path)
    args = ["--graph-file", path, "--out", tmp_path / "r", "--cache-dir", tmp_path / "c"]
    assert engines(*args) == 0
    first = json.loads((tmp_path / "r" / "campaign.json").read_text())
    assert engines(*args, "--resume") == 0
    again = json.loads((tmp_path / "r" / "campaign.json").read_text())
    assert again["campaign_id"] == first["campaign_id"] and len(again["sessions"]) == 2


# ---- weights from the file ------------------------------------------------------------------

def test_own_weights_of_dimacs_and_mosp(tmp_path):
    for name, k in (("dimacs", 1), ("mosp", 2)):
        path, _, _ = write_format(name, tmp_path / name)
        p = prepare_graph_file(make_spec(path, weights="file"), cache_dir=tmp_path / "c", progress=False,
                               with_batches=False)
        g = p.graph
        assert g.num_weights == k and p.facts["weights"] == {"from": "file"}
        src, dst = np.asarray(g.edge_sources()), np.asarray(g.col_ind)
        if name == "dimacs":
            np.testing.assert_array_equal(g.weight_column(0), [dimacs_weight(u, v) for u, v in zip(src, dst)])
        else:
            w = mosp_weights(g.row_ptr, g.col_ind)
            for j in range(k):
                np.testing.assert_array_equal(g.weight_column(j), w[:, j])


def test_weights_file_refused_with_a_reason(tmp_path, capsys):
    path, _, _ = write_format("matrix_market", tmp_path)
    assert prepare("--graph-file", path, "--weights", "file", "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert "carries no weights (a pattern matrix)" in err and "--weights random" in err
    real = tmp_path / "real.mtx"
    real.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 2.5\n")
    assert prepare("--graph-file", real, "--weights", "file", "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert (f"{real}, line 4: --weights file: the entry '2 3 2.5' gives the edge 2 -> 3 the weight 2.5; a weight "
            "must be an integer") in err and "Traceback" not in err


# ---- a file named after a gate must be that gate (gate facts) ---------------------------------

def test_a_file_named_like_a_gate_is_checked_against_the_gate(tmp_path, capsys):
    path, options, _ = write_format("snap_undirected", tmp_path)
    fake = path.with_name("roadNet-PA.txt")
    path.rename(fake)
    assert prepare("--graph-file", fake, *options, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{fake}: refused as roadNet-PA: it has {N} vertices, but the gate roadNet-PA (SNAP/roadNet-PA) " \
           "has 1,090,920" in err and "--name" in err
    assert prepare("--graph-file", fake, *options, "--name", "my-graph", "--cache-dir", tmp_path / "c") == 0


def test_a_real_gate_file_that_is_not_the_gate_is_refused(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "uspowergrid.edges").write_text("".join(f"{u + 1} {v + 1}\n" for u, v in undirected_edges()))
    assert prepare("--graphs", "uspowergrid", "--data-dir", data, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"refused as the real uspowergrid: it has {N} vertices, but the gate uspowergrid" in err
    assert "4,941" in err and "Traceback" not in err
    assert engines("--graphs", "uspowergrid", "--data-dir", data, "--cache-dir", tmp_path / "c",
                   "--out", tmp_path / "r") == 2
    assert "refused as the real uspowergrid" in capsys.readouterr().err


def test_gate_facts_check_tolerance():
    from bench.gates import GATES

    gate = GATES["roadNet-CA"]
    assert gate.real_file_mismatch(1_971_281, 5_533_214) is None
    assert gate.real_file_mismatch(1_971_281, int(5_533_214 * 1.005)) is None
    assert "directed edges" in gate.real_file_mismatch(1_971_281, int(5_533_214 * 1.02))
    assert "vertices" in gate.real_file_mismatch(1_971_280, 5_533_214)
    rgg = GATES["rgg_n_2_20_s0"]  # its edge count is known only as "about 13.8 M"
    assert rgg.real_file_mismatch(1 << 20, 13_783_240) is None
    assert rgg.real_file_mismatch(1 << 20, 6_891_620) is not None


# ---- bad files: exit 2 with one line, never a traceback (defects 1, 3, 6) ---------------------

def test_empty_gate_file_is_exit_2_not_a_crash(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "uspowergrid.edges").write_text("")
    assert prepare("--graphs", "uspowergrid", "--data-dir", data, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert "uspowergrid.edges: no edges" in err and "Traceback" not in err and "argmax" not in err


@pytest.mark.parametrize("suffix", [".txt.gz", ".edges.gz", ".gr.gz", ".mtx.gz"])
def test_bad_and_truncated_gzip_graph_files(tmp_path, capsys, suffix):
    bad = tmp_path / f"plain{suffix}"
    bad.write_text("1 2\n2 3\n")
    assert prepare("--graph-file", bad, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{bad}" in err and "not a gzip file" in err and "Traceback" not in err
    assert engines("--graph-file", bad, "--cache-dir", tmp_path / "c", "--out", tmp_path / "r") == 2
    assert "not a gzip file" in capsys.readouterr().err


@pytest.mark.slow
def test_truncated_gzip_gate_file_in_a_real_process(tmp_path):
    import gzip

    data = tmp_path / "data"
    data.mkdir()
    blob = gzip.compress("".join(f"{u + 1} {v + 1}\n" for u, v in undirected_edges(m=3000)).encode())
    (data / "uspowergrid.edges.gz").write_bytes(blob[: len(blob) // 2])
    for command in ("prepare", "engines"):
        extra = ["--sides", "host,host", "--out", tmp_path / "r", "--allow-dirty"] if command == "engines" else []
        proc = run_script(command, "--graphs", "uspowergrid", "--data-dir", data, "--cache-dir", tmp_path / "c",
                          "--no-progress", *extra)
        assert proc.returncode == 2, proc.stderr
        assert "uspowergrid.edges.gz" in proc.stderr and "truncated" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_huge_matrix_market_header_through_prepare_in_a_real_process(tmp_path):
    huge = tmp_path / "huge.mtx"
    huge.write_text("%%MatrixMarket matrix coordinate real general\n10 10 100000000000\n1 2 1.0\n2 3 1.0\n")
    proc = run_script("prepare", "--graph-file", huge, "--cache-dir", tmp_path / "c", "--no-progress")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert f"{huge}, line 2: the size line states 100,000,000,000 entries" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_headerless_mtx_is_pointed_to_the_edge_list_format(tmp_path, capsys):
    path = tmp_path / "delaunay.mtx"
    path.write_text("".join(f"{u + 1} {v + 1}\n" for u, v in undirected_edges()))
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert "not a Matrix Market header" in err and "--format edge_list" in err
    assert prepare("--graph-file", path, "--format", "edge_list", "--cache-dir", tmp_path / "c") == 0


def test_snap_list_of_an_undirected_network_needs_symmetrize(tmp_path):
    path, _, _ = write_format("snap_undirected", tmp_path)  # each edge once, smaller id first
    last = N - 1
    as_listed = prepare_graph_file(make_spec(path, source=last), cache_dir=tmp_path / "c", progress=False,
                                   with_batches=False)
    both = prepare_graph_file(make_spec(path, symmetrize=True, source=last), cache_dir=tmp_path / "c",
                              progress=False, with_batches=False)
    assert as_listed.facts["source_reachable_vertices"] == 1  # read as listed: a DAG, nothing below reachable
    assert both.facts["source_reachable_vertices"] == N


@pytest.mark.parametrize("make, argv, fragment", [
    (lambda d: write_format("matrix_market", d)[0], ["--one-based"], "--one-based/--zero-based: only for edge lists"),
    (lambda d: write_format("mosp", d)[0], ["--symmetrize"], "--symmetrize: a MOSP folder is measured as stored"),
    (lambda d: write_format("edge_list", d)[0], ["--name", "a/b"], "--name 'a/b'"),
    (lambda d: write_format("edge_list", d)[0], ["--source", 10_000], "source 10000 is not a vertex"),
    (lambda d: write_format("edge_list", d)[0], ["--graphs", "uspowergrid", "--name", "uspowergrid"],
     "also in --graphs"),
    (lambda d: d / "missing.edges", [], "no such file or folder"),
    (lambda d: (d / "g.csv").write_text("1,2\n") and d / "g.csv", [], "unknown graph file type"),
    (lambda d: (d / "none.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 0\n")
     and d / "none.mtx", [], "the graph has no edge"),
])
def test_graph_file_usage_errors_exit_2(tmp_path, capsys, make, argv, fragment):
    tmp_path.mkdir(exist_ok=True)
    path = make(tmp_path)
    assert prepare("--graph-file", path, *argv, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_graph_file_options_without_a_graph_file(tmp_path, capsys):
    assert prepare("--name", "x", "--symmetrize", "--cache-dir", tmp_path) == 2
    assert "--name, --symmetrize describe a --graph-file" in capsys.readouterr().err
    assert engines("--weights", "file", "--out", tmp_path / "r") == 2
    assert "--weights describe a --graph-file" in capsys.readouterr().err


def test_a_graph_that_cannot_carry_the_batches(tmp_path, capsys):
    from engines.io import mosp

    folder = tmp_path / "loops"
    mosp.write_csr(folder, [0, 1, 2], [0, 1], np.array([[1], [1]]))  # two self-loops, nothing to delete
    assert prepare("--graph-file", folder, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{folder}: cannot draw the batches: safe50k: no edge to delete" in err


def test_wrong_initial_trees_are_a_correctness_failure(tmp_path, capsys, monkeypatch):
    from bench import tree_check

    real = tree_check.scipy_distances
    monkeypatch.setattr(tree_check, "scipy_distances", lambda g, k, s: real(g, k, s) + (np.arange(g.num_vertices) == 7))
    path, _, _ = write_format("edge_list", tmp_path)
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 1
    err = capsys.readouterr().err
    assert "objective 0: the initial distance of vertex 7" in err and "SciPy" in err
    assert engines("--graph-file", path, "--cache-dir", tmp_path / "c2", "--out", tmp_path / "r") == 1
    assert "differ from their reference" in capsys.readouterr().err


# ---- outputs that cannot be written (defect 5) ------------------------------------------------

def test_out_under_a_regular_file_is_refused_before_any_work(tmp_path, capsys):
    path, _, _ = write_format("edge_list", tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    assert engines("--graph-file", path, "--out", blocker / "results", "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"--out: the records folder cannot be written: cannot create {blocker / 'results'}: " \
           f"{blocker} is a file, not a folder" in err
    assert "Traceback" not in err and "recorded" not in err
    assert not (tmp_path / "c").exists()  # nothing prepared
    assert engines("--graph-file", path, "--out", tmp_path / "r", "--cache-dir", blocker / "cache") == 2
    assert "the cache folder cannot be written" in capsys.readouterr().err
    assert prepare("--graph-file", path, "--cache-dir", blocker / "cache") == 2
    assert "the cache folder cannot be written" in capsys.readouterr().err


@pytest.mark.skipif(IS_ROOT, reason="root writes into read-only folders; the simulated case below covers it")
def test_out_in_a_read_only_folder(tmp_path, capsys):
    path, _, _ = write_format("edge_list", tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert engines("--graph-file", path, "--out", locked, "--cache-dir", tmp_path / "c") == 2
    finally:
        locked.chmod(0o755)
    assert f"{locked} is not writable" in capsys.readouterr().err


def test_out_in_a_folder_the_user_cannot_write(tmp_path, capsys, monkeypatch):
    path, _, _ = write_format("edge_list", tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    assert engines("--graph-file", path, "--out", locked, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"--out: the records folder cannot be written: {locked} is not writable (permission denied)" in err
    assert not (locked / "campaign.json").exists()


@pytest.mark.slow
def test_a_write_failing_mid_campaign_is_exit_3_naming_the_file(tmp_path, capsys, monkeypatch):
    from protocol import records

    path, _, _ = write_format("edge_list", tmp_path)
    real_flush = records.CellRounds._flush
    calls = {"n": 0, "kept": 0}

    def flush(self):
        calls["n"] += 1
        if calls["n"] > 6:
            raise OSError(28, "No space left on device", str(self.path))
        real_flush(self)
        calls["kept"] = len(self.rows)

    monkeypatch.setattr(records.CellRounds, "_flush", flush)
    out = tmp_path / "r"
    assert engines("--graph-file", path, "--out", out, "--cache-dir", tmp_path / "c") == 3
    err = capsys.readouterr().err
    assert "cannot write the records" in err and "No space left on device" in err and ".parquet" in err
    assert "the rounds written before this are kept" in err and "Traceback" not in err
    assert 0 < len(records.RecordStore(out).read_rounds()) == calls["kept"]


def test_an_internal_error_says_it_is_one(tmp_path, capsys, monkeypatch):
    from protocol import cell

    path, _, _ = write_format("edge_list", tmp_path)
    monkeypatch.setattr(cell.CellRun, "_round", lambda self, *a, **k: {}["missing"])
    # one process: the rounds run in this one, where the patch is (a worker process would not see it)
    assert engines("--graph-file", path, "--out", tmp_path / "r", "--cache-dir", tmp_path / "c",
                   "--processes", "1") == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error (a bug in ssspab" in err and "--resume" in err


# ---- small parts ----------------------------------------------------------------------------

@pytest.mark.parametrize("file_name, name", [
    ("ego-Facebook.txt.gz", "ego-Facebook"), ("delaunay_n16.mtx", "delaunay_n16"), ("3elt.tar.gz", "3elt"),
    ("USA-road-d.NY.gr", "USA-road-d.NY"), ("uspowergrid.edges", "uspowergrid"), ("folder", "folder"),
])
def test_default_name(file_name, name):
    assert default_name(Path(file_name)) == name


def test_graph_facts_of_an_empty_graph():
    from bench.graphfacts import graph_facts

    facts = graph_facts(0, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))
    assert facts["vertices"] == 0 and facts["largest_component_share"] == 0.0
    with pytest.raises(ValueError, match="source 5 is not a vertex"):
        graph_facts(2, np.array([0, 1, 1]), np.array([1], dtype=np.int32), source=5)


def test_batch_draw_errors_name_the_batch():
    from engines import Graph

    loops = Graph.from_edges([0, 1], [0, 1], [[1, 1, 1], [1, 1, 1]])
    with pytest.raises(batches_mod.BatchDrawError, match="safe50k: no edge to delete"):
        batches_mod.draw_batch(batches_mod.BATCH_SPECS[0], loops)
    isolated = Graph.from_edges([0], [1], [[1, 1, 1]], num_vertices=100_000)
    spec = batches_mod.BATCH_SPECS[2]
    assert spec.local
    with pytest.raises(batches_mod.BatchDrawError, match="local10k: no centre with a region of >= 2 vertices"):
        batches_mod.draw_batch(spec, isolated, radius=3)
