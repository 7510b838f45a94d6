"""Bring your own graph, the review of issue 15: a file that cannot be read is an input problem
(exit 2), never "cannot write the cache"; ``--resume`` is bound to the file's identity and
options; a file whose ids make n huge ends with exit 3 and a message before any allocation; one
mapping of preparation errors to exit codes; the records keep the options the report renders."""

from __future__ import annotations

import json
import resource
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import perf_ab
from bench.graph_file import default_name, make_spec, prepare_graph_file
from engines.io import mosp

from .graph_files import N, directed_csr, undirected_edges, write_format
from .test_graph_file import REPO, engines, prepare


# ---- finding 1: an unreadable input is exit 2, naming it ---------------------------------------

def test_an_unreadable_graph_file_is_an_input_problem(tmp_path, capsys, unreadable):
    path, _, _ = write_format("edge_list", tmp_path / "data")
    unreadable(path)
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{path}: cannot read the file: Permission denied" in err
    assert "cannot write" not in err and "Traceback" not in err
    assert engines("--graph-file", path, "--cache-dir", tmp_path / "c", "--out", tmp_path / "r") == 2
    err = capsys.readouterr().err
    assert f"{path}: cannot read the file: Permission denied" in err
    assert "cannot write" not in err and "Traceback" not in err


def test_an_unreadable_file_of_a_mosp_folder_is_an_input_problem(tmp_path, capsys, unreadable):
    folder, _, _ = write_format("mosp", tmp_path / "data")
    unreadable(folder / mosp.VALUES_FILE)
    assert prepare("--graph-file", folder, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{folder / mosp.VALUES_FILE}: cannot read the file: Permission denied" in err and "cannot write" not in err


def test_an_unreadable_real_gate_file_is_an_input_problem(tmp_path, capsys, unreadable):
    data = tmp_path / "data"
    data.mkdir()
    gate_file = data / "uspowergrid.edges"
    gate_file.write_text("1 2\n2 3\n")
    unreadable(gate_file)
    assert prepare("--graphs", "uspowergrid", "--data-dir", data, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{gate_file}: cannot read the file: Permission denied" in err and "cannot write" not in err


def test_an_os_error_is_a_write_failure_only_under_the_folders_written(tmp_path):
    from bench.prepare_failures import prepare_failure
    from protocol.exitcodes import ExitCode

    cache, out = tmp_path / "cache", tmp_path / "out"
    written = (cache, out)
    for inside in (cache / "gates" / "g" / "graph.npz", out / "rounds" / "x.parquet"):
        failure = prepare_failure("g", PermissionError(13, "Permission denied", str(inside)), written=written)
        assert failure.exit_code == ExitCode.ENVIRONMENT
        assert str(failure) == f"graph g: cannot write its prepared inputs: {inside}: Permission denied"
    elsewhere = tmp_path / "cache-like" / "file.edges"  # a sibling whose name starts like the cache's
    failure = prepare_failure("g", PermissionError(13, "Permission denied", str(elsewhere)), written=written)
    assert failure.exit_code == ExitCode.USAGE
    assert str(failure) == f"graph g: cannot read an input: {elsewhere}: Permission denied"
    failure = prepare_failure("g", OSError(28, "No space left on device"), written=written)
    assert failure.exit_code == ExitCode.ENVIRONMENT and "No space left on device" in str(failure)


def test_a_write_failing_in_the_cache_is_exit_3(tmp_path, capsys, monkeypatch):
    from bench import prepare as prepare_mod

    path, _, _ = write_format("edge_list", tmp_path / "data")

    def save_arrays(target, **arrays):
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(prepare_mod, "save_arrays", save_arrays)
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 3
    err = capsys.readouterr().err
    assert "cannot write its prepared inputs" in err and str(tmp_path / "c") in err and "No space left" in err


# ---- finding 5: one mapping; a bug's KeyError is an internal error in both commands -------------

def test_a_key_error_while_preparing_is_a_bug_in_both_commands(tmp_path, capsys, monkeypatch):
    from bench import graph_file

    path, _, _ = write_format("edge_list", tmp_path / "data")
    monkeypatch.setattr(graph_file, "prepare_plan", lambda *a, **k: {}["missing"])
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "prepare: internal error (a bug in ssspab" in err
    assert engines("--graph-file", path, "--cache-dir", tmp_path / "c", "--out", tmp_path / "r") == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "perf_ab.py engines: internal error (a bug in ssspab" in err
    assert "KeyError: 'missing'" in err


def test_both_commands_word_a_preparation_failure_alike(tmp_path, capsys):
    path = tmp_path / "none.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 0\n")
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 2
    said_by_prepare = capsys.readouterr().err.strip().removeprefix("prepare: ")
    assert engines("--graph-file", path, "--cache-dir", tmp_path / "c", "--out", tmp_path / "r") == 2
    said_by_engines = capsys.readouterr().err.strip().removeprefix("perf_ab.py engines: error: ")
    assert said_by_prepare == said_by_engines == f"graph none: bad input: {path}: the graph has no edge, so no " \
                                                 "batch can delete one"


# ---- finding 2: --resume is bound to the file's identity and options ---------------------------

def mosp_folder_with_three_weights(folder: Path) -> Path:
    """A MOSP folder with K = 3 weight columns: ``--weights file`` then gives the same batches as
    ``--weights random`` (the batches draw K weights), so only the parameters tell them apart."""
    row_ptr, col_ind = directed_csr(undirected_edges())
    m = col_ind.size
    mosp.write_csr(folder, row_ptr, col_ind, np.stack([np.arange(m) % 9 + 1, np.arange(m) % 5 + 2,
                                                       np.arange(m) % 7 + 3], axis=1))
    return folder


@pytest.mark.slow
def test_resume_refuses_other_weights_for_the_same_file(tmp_path, capsys):
    folder = mosp_folder_with_three_weights(tmp_path / "data" / "k3")
    args = ["--graph-file", folder, "--out", tmp_path / "r", "--cache-dir", tmp_path / "c"]
    assert engines(*args) == 0
    capsys.readouterr()
    before = (tmp_path / "r" / "campaign.json").read_bytes()
    assert engines(*args, "--weights", "file", "--resume") == 2
    err = capsys.readouterr().err
    assert "--resume: the parameters differ from the recorded campaign in graph_file" in err
    assert (tmp_path / "r" / "campaign.json").read_bytes() == before
    assert engines(*args, "--resume") == 0  # the same options continue


@pytest.mark.slow
def test_resume_refuses_a_changed_file(tmp_path, capsys):
    folder = mosp_folder_with_three_weights(tmp_path / "data" / "k3")
    args = ["--graph-file", folder, "--out", tmp_path / "r", "--cache-dir", tmp_path / "c"]
    assert engines(*args) == 0
    values = folder / mosp.VALUES_FILE
    values.write_text(values.read_text().replace("\n1\n", "\n7\n", 1))  # other weights, same CSR and batches
    capsys.readouterr()
    assert engines(*args, "--resume") == 2
    assert "differ from the recorded campaign in graph_file" in capsys.readouterr().err


@pytest.mark.slow
def test_the_parameters_hold_the_files_identity_and_not_its_path(tmp_path):
    path, options, _ = write_format("snap_undirected", tmp_path / "data")
    out = tmp_path / "r"
    assert engines("--graph-file", path, *options, "--source", 3, "--out", out, "--cache-dir", tmp_path / "c") == 0
    campaign = json.loads((out / "campaign.json").read_text())
    identity = campaign["parameters"]["graph_file"]
    [entry] = campaign["inputs"]
    assert identity == {**{k: v for k, v in entry["origin"].items() if k != "path"}, "source": 3,
                        "local_radius": None}
    assert identity["symmetrize"] is True and identity["format"] == "snap" and len(identity["sha256"]) == 64


def test_gate_campaigns_record_no_graph_file_parameter():
    from protocol.config import CampaignConfig
    from protocol.sides import parse_sides

    assert "graph_file" not in CampaignConfig(sides=parse_sides("host,host")).parameters()


# ---- finding 5: the commands to reproduce are rendered from what the records hold ---------------

@pytest.mark.slow
def test_the_reproduce_commands_spell_out_the_options(tmp_path, capsys):
    folder, _, _ = write_format("mosp", tmp_path / "data")
    out = tmp_path / "r"
    assert engines("--graph-file", folder, "--weights", "file", "--local-radius", 2, "--out", out,
                   "--cache-dir", tmp_path / "c") == 0
    campaign = json.loads((out / "campaign.json").read_text())
    options = campaign["inputs"][0]["facts"]["graph_file"]["options"]
    assert options == ["--name", default_name(folder), "--format", "mosp", "--no-symmetrize", "--weights", "file",
                       "--source", "0", "--local-radius", "2"]
    assert campaign["reproduce"].endswith(" ".join(["--graph-file", str(folder), *options]))
    report = (out / "M7.md").read_text()
    command = next(line for line in report.split("## 9. Reproduce", 1)[1].splitlines()
                   if line.startswith("python bench/perf_ab.py prepare"))
    assert command.endswith(" ".join(options))
    capsys.readouterr()
    argv = shlex.split(command)[2:]  # without "python bench/perf_ab.py"
    assert perf_ab.main([*argv, "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 0, capsys.readouterr().err


def test_the_report_words_the_recorded_weights():
    from protocol.report import describe_origin

    origin = {"kind": "file", "path": "g.txt", "format": "snap", "one_based": False, "symmetrize": True,
              "sha256": "ab" * 32, "weights": "random"}
    facts = {"weights": {"from": "random", "seed": 7, "num_objectives": 2, "low": 1, "high": 9}}
    assert "weights drawn like the gates' (K = 2, uniform in [1, 9], seed 7)" in describe_origin(origin, facts)
    assert describe_origin({**origin, "weights": "file"}, {"weights": {"from": "file"}}).endswith("its own weights")


def test_the_help_words_the_weights_from_their_parameters(capsys):
    from bench import weights

    assert perf_ab.main(["prepare", "--help"]) == 0
    assert " ".join(capsys.readouterr().out.split()).count(weights.describe_weights()) == 1


# ---- finding 3: a file whose ids make n huge ends with exit 3 before any allocation -------------

def test_ids_that_make_n_huge_end_cleanly_in_a_real_process(tmp_path):
    path = tmp_path / "two.edges"
    path.write_text("1 2000000000\n2 3\n")
    limit = 6 << 30  # the address space a real run would exceed many times over

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = subprocess.run([sys.executable, str(REPO / "bench" / "perf_ab.py"), "prepare", "--graph-file", str(path),
                           "--cache-dir", str(tmp_path / "c"), "--no-progress"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, preexec_fn=limited)
    assert proc.returncode == 3, proc.stderr
    assert f"graph two: not enough host memory to prepare it ({path}: n = 2,000,000,000 vertices and m = 4 edges " \
           "need about" in proc.stderr
    assert "GB of host memory" in proc.stderr and "ids are sparse" in proc.stderr
    assert "Traceback" not in proc.stderr and "Unable to allocate" not in proc.stderr


def test_not_enough_memory_for_a_graph_is_exit_3_naming_the_estimate(tmp_path, capsys, monkeypatch):
    from bench import host_memory

    path, _, _ = write_format("edge_list", tmp_path / "data")
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 1000)
    assert prepare("--graph-file", path, "--cache-dir", tmp_path / "c") == 3
    err = capsys.readouterr().err
    needed = host_memory.needed_bytes(N, 2 * 420)
    assert f"{path}: n = {N} vertices and m = 840 edges need about {needed / 1e9:,.1f} GB" in err
    assert "0.0 GB is available" in err and "sparse" not in err and "Traceback" not in err
    assert engines("--graph-file", path, "--cache-dir", tmp_path / "c2", "--out", tmp_path / "r") == 3
    assert "not enough host memory to prepare it" in capsys.readouterr().err


def test_available_memory_is_the_smallest_limit(monkeypatch):
    from bench import host_memory

    monkeypatch.setattr(host_memory, "_cgroup_room", lambda: 5 << 30)
    monkeypatch.setattr(host_memory, "_address_space_room", lambda: None)
    assert host_memory.available_bytes() <= 5 << 30
    monkeypatch.setattr(host_memory, "_address_space_room", lambda: 1 << 20)
    assert host_memory.available_bytes() == 1 << 20


# ---- finding 6: messages ------------------------------------------------------------------------

def test_weights_file_on_an_edge_list_uses_the_right_article(tmp_path, capsys):
    path, _, _ = write_format("edge_list", tmp_path / "data")
    assert prepare("--graph-file", path, "--weights", "file", "--cache-dir", tmp_path / "c") == 2
    assert "carries no weights (an edge_list file)" in capsys.readouterr().err


def test_an_empty_mosp_folder_names_what_it_lacks(tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    for command in (prepare, engines):
        extra = ["--out", tmp_path / "r"] if command is engines else []
        assert command("--graph-file", folder, "--cache-dir", tmp_path / "c", *extra) == 2
        err = capsys.readouterr().err
        assert f"{folder}: not a MOSP graph folder: it lacks graphCsrRowPtr.txt, graphCsrColInd.txt, " \
               "graphCsrValues.txt" in err
        assert "Errno" not in err and "Traceback" not in err


def test_a_folder_named_like_a_file_is_a_mosp_folder_and_says_so(tmp_path, capsys):
    folder = tmp_path / "g.mtx.gz"
    folder.mkdir()
    assert prepare("--graph-file", folder, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{folder}: not a MOSP graph folder: it lacks graphCsrRowPtr.txt" in err
    assert "its name ends like a matrix_market file, but it is a folder" in err
    good, _, _ = write_format("mosp", tmp_path / "data")
    renamed = good.rename(tmp_path / "h.mtx.gz")  # a whole MOSP folder is read whatever its name
    assert prepare("--graph-file", renamed, "--cache-dir", tmp_path / "c") == 0


def test_own_weights_are_checked_without_building_a_graph(tmp_path, monkeypatch):
    from engines import Graph

    folder, _, _ = write_format("mosp", tmp_path / "data")
    built = []
    real = Graph.from_csr.__func__
    monkeypatch.setattr(Graph, "from_csr", classmethod(lambda cls, *a, **k: built.append(1) or real(cls, *a, **k)))
    prepared = prepare_graph_file(make_spec(folder, weights="file"), cache_dir=tmp_path / "c", progress=False,
                                  with_trees=False, with_batches=False)
    assert prepared.graph.num_weights == 2 and len(built) == 1  # the graph measured, nothing else
    np.testing.assert_array_equal(prepared.graph.weight_column(1)[:3], [2, 3, 4])
