"""The reproduce lines name no path of the machine that made them (issue 31, item 5): a path inside
the repository is relative to its root, however it was typed and from wherever; any other path is
as the user typed it (``/tmp/toy.txt`` stays ``/tmp/toy.txt``, never ``../../tmp/toy.txt``), or,
typed relative from another folder, the absolute path it named; so a printed line runs as printed
from the repository root on another machine."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from bench import perf_ab
from bench.engines_cmd import _rebuild_argv
from bench.graph_file import GraphFileSpec
from protocol import reproduce
from protocol.reproduce import line_path, prepare_command

REPO = Path(__file__).resolve().parents[2]
HOST_CAMPAIGN = ["--sides", "host,host", "--batches", "local10k", "--objectives", "0", "--rounds", "5",
                 "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


def _spec(path) -> GraphFileSpec:
    return GraphFileSpec(Path(path), "toy", "snap", True, False, "random", 0, None)


def _paths(monkeypatch, *, out, data_dir, graph_file) -> dict:
    """``--out``, ``--data-dir`` and ``--graph-file`` of the recorded engines line, typed so in the
    current folder."""
    monkeypatch.delenv("SSSPAB_DATA_DIR", raising=False)
    monkeypatch.delenv("SSSPAB_SHARED_DATA", raising=False)
    args = perf_ab.build_parser().parse_args(["engines", "--data-dir", str(data_dir), "--graph-file",
                                              str(graph_file)])
    argv = _rebuild_argv(args, _spec(args.graph_file), gates=[], out=str(out))
    return {flag: argv[argv.index(flag) + 1] for flag in ("--out", "--data-dir", "--graph-file")}


def test_a_path_inside_the_repository_given_absolute_is_relative_to_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # typed anywhere
    assert _paths(monkeypatch, out=REPO / "results" / "x", data_dir=REPO / ".devdata",
                  graph_file=REPO / "graphs" / "toy.txt") == {
        "--out": "results/x", "--data-dir": ".devdata", "--graph-file": "graphs/toy.txt"}
    assert line_path(REPO) == "."


def test_an_absolute_path_outside_the_repository_is_kept_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    out, data, toy = tmp_path / "res" / "results", tmp_path / "data", tmp_path / "toy.txt"
    assert _paths(monkeypatch, out=out, data_dir=data, graph_file=toy) == {
        "--out": str(out), "--data-dir": str(data), "--graph-file": str(toy)}
    assert line_path("/tmp/toy.txt") == "/tmp/toy.txt"
    assert line_path("/tmp/res/results", cwd=REPO / "bench") == "/tmp/res/results"


def test_a_relative_path_typed_in_another_folder(tmp_path, monkeypatch):
    # inside the repository: relative to its root, not to the folder it was typed in
    monkeypatch.chdir(REPO / "bench")
    assert _paths(monkeypatch, out="../results/x", data_dir="../.devdata", graph_file="../graphs/toy.txt") == {
        "--out": "results/x", "--data-dir": ".devdata", "--graph-file": "graphs/toy.txt"}
    # outside it: the absolute path it named (a climb out of the repository depends on where it lies)
    monkeypatch.chdir(tmp_path)
    assert _paths(monkeypatch, out="res", data_dir="data", graph_file="toy.txt") == {
        "--out": str(tmp_path / "res"), "--data-dir": str(tmp_path / "data"), "--graph-file": str(tmp_path / "toy.txt")}
    # typed at the repository root, a relative path is already what the line needs
    assert line_path("../shared/data", cwd=REPO) == "../shared/data"


def test_the_repository_reached_through_a_link(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    checkout.symlink_to(REPO, target_is_directory=True)
    monkeypatch.chdir(checkout)
    assert _paths(monkeypatch, out="results/x", data_dir=checkout / ".devdata", graph_file="graphs/toy.txt") == {
        "--out": "results/x", "--data-dir": ".devdata", "--graph-file": "graphs/toy.txt"}


def test_a_link_inside_the_repository_is_named_as_typed(tmp_path, monkeypatch):
    repo, disk = tmp_path / "repo", tmp_path / "disk"
    repo.mkdir()
    disk.mkdir()
    (repo / ".devdata").symlink_to(disk, target_is_directory=True)  # the data of this machine
    monkeypatch.setattr(reproduce, "REPO_ROOT", repo)
    assert line_path(repo / ".devdata") == ".devdata"
    assert line_path(".devdata", cwd=repo) == ".devdata"
    assert line_path(disk) == str(disk)


def test_the_prepare_line_names_the_graph_file_as_typed():
    # the records name the file relative to the repository (../../tmp/toy.txt); the line as typed
    recorded = os.path.relpath("/tmp/toy.txt", REPO)
    campaign = {"reproduce": "python bench/perf_ab.py engines --sides host,host --graph-file /tmp/toy.txt",
                "inputs": [{"graph": "toy", "origin": {"kind": "file", "path": recorded},
                            "facts": {"graph_file": {"options": ["--name", "toy"]}}}]}
    assert prepare_command(campaign) == "python bench/perf_ab.py prepare --graph-file /tmp/toy.txt --name toy"
    # an older record whose engines line lacks the file: the absolute path its records named
    older = {**campaign, "reproduce": "python bench/perf_ab.py engines --sides host,host"}
    assert prepare_command(older) == "python bench/perf_ab.py prepare --graph-file /tmp/toy.txt --name toy"
    inside = {**older, "inputs": [{**campaign["inputs"][0], "origin": {"kind": "file", "path": "graphs/toy.txt"}}]}
    assert prepare_command(inside) == "python bench/perf_ab.py prepare --graph-file graphs/toy.txt --name toy"


@pytest.mark.slow
def test_a_campaign_on_a_graph_file_in_tmp_prints_it_as_typed(tmp_path, capsys, monkeypatch):
    """The README's bring-your-own-graph example: --graph-file and --out under /tmp, typed absolute."""
    monkeypatch.chdir(REPO)
    # the line names the environment's data folder as typed: a relative one (a machine's own
    # SSSPAB_DATA_DIR=../shared/data, correct from the root) is not what this test is about
    monkeypatch.delenv("SSSPAB_DATA_DIR", raising=False)
    toy, out = tmp_path / "toy.txt", tmp_path / "toy-ab"
    rng = __import__("numpy").random.default_rng(1)
    toy.write_text("# my graph\n" + "".join(f"{u} {v}\n" for u, v in rng.integers(0, 200, (600, 2))))
    assert perf_ab.main(["engines", *HOST_CAMPAIGN, "--graph-file", str(toy), "--symmetrize", "--out", str(out),
                         "--cache-dir", str(tmp_path / "cache")]) == 0, capsys.readouterr().err
    section = (out / "M7.md").read_text().split("## 9. Reproduce", 1)[1]
    lines = [shlex.split(line) for line in section.splitlines() if line.startswith("python bench/perf_ab.py")]
    prepare, engines, report = lines
    assert prepare[prepare.index("--graph-file") + 1] == str(toy)
    assert engines[engines.index("--graph-file") + 1] == str(toy)
    assert engines[engines.index("--out") + 1] == str(out) and report[-2:] == ["--out", str(out)]
    assert not any(word.startswith("..") for line in lines for word in line)
