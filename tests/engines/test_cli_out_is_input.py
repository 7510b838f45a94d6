"""``python -m engines.cli``: an ``--out`` that is one of the command's inputs is refused (issue 28,
item 3): ``--out G --write-graph`` replaced its own input graph without a word."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import engines
from engines import cli
from engines.io import mosp


def _inputs(tmp_path):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 30, 90), rng.integers(0, 30, 90)
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 5, size=(90, 1)), num_vertices=30)
    gdir, bdir = tmp_path / "graph", tmp_path / "batch"
    mosp.write_csr(gdir, graph.row_ptr, graph.col_ind, graph.weights)
    mosp.write_batch(bdir, [1], [2], [[3]], [src[0]], [dst[0]])
    return graph, gdir, bdir


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_out_equal_to_the_input_graph_folder_is_refused(tmp_path, capsys):
    _, gdir, bdir = _inputs(tmp_path)
    before = _files(gdir)
    code = cli.main(["update", "--graph", str(gdir), "--batch", str(bdir), "--source", "0", "--out", str(gdir),
                     "--write-graph"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--out {gdir} is the same as --graph {gdir}: the output would replace the command's own input" in err
    assert _files(gdir) == before and "Traceback" not in err


def test_out_naming_the_input_graph_by_another_path_is_refused(tmp_path, capsys):
    _, gdir, bdir = _inputs(tmp_path)
    (tmp_path / "link").symlink_to(gdir)
    code = cli.main(["update", "--graph", str(gdir), "--batch", str(bdir), "--source", "0",
                     "--out", str(tmp_path / "sub" / ".." / "link")])
    assert code == 2 and "is the same as --graph" in capsys.readouterr().err


def test_a_state_file_is_not_overwritten_by_its_own_update(tmp_path, capsys):
    _, gdir, bdir = _inputs(tmp_path)
    state = tmp_path / "state.npz"
    assert cli.main(["compute", "--graph", str(gdir), "--source", "0", "--out", str(state)]) == 0
    before = state.read_bytes()
    code = cli.main(["update", "--graph", str(state), "--batch", str(bdir), "--out", str(state)])
    assert code == 2
    assert f"--out {state} is the same as --graph {state}" in capsys.readouterr().err
    assert state.read_bytes() == before


def test_an_out_folder_holding_the_input_tree_files_is_refused(tmp_path, capsys):
    graph, gdir, bdir = _inputs(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["compute", "--graph", str(gdir), "--source", "0", "--out", str(out)]) == 0
    code = cli.main(["update", "--graph", str(gdir), "--batch", str(bdir), "--source", "0",
                     "--distances", str(out / cli.DISTANCES_FILE), "--parents", str(out / cli.TREE_FILE),
                     "--out", str(out)])
    assert code == 2
    assert f"--out {out} would overwrite (distances.txt) --distances {out / cli.DISTANCES_FILE}" in capsys.readouterr().err


def test_another_out_still_works(tmp_path):
    _, gdir, bdir = _inputs(tmp_path)
    assert cli.main(["update", "--graph", str(gdir), "--batch", str(bdir), "--source", "0",
                     "--out", str(tmp_path / "next"), "--write-graph"]) == 0


def test_a_symbolic_link_loop_as_the_graph_is_a_clean_error(tmp_path, capsys):
    """The same-file check must not crash on a link loop (Python 3.11's resolve() raises
    RuntimeError there): the reader names the loop, exit 2, no traceback."""
    _, _, bdir = _inputs(tmp_path)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code = cli.main(["update", "--graph", str(loop), "--batch", str(bdir), "--source", "0",
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "symbolic link loop" in err and "Traceback" not in err and "internal error" not in err
