"""The update command's ``.npz`` batch and input paths (issue 28, item 1): a missing key is named
with its file, and a path that is not a regular file is said to be one."""

from __future__ import annotations

import os

import numpy as np
import pytest

from engines import cli
from engines.errors import FileFormatError

from tests.engines.test_cli import _random_case, _run, _write_mosp


def test_an_npz_batch_without_insert_weights_names_the_file_and_key(tmp_path, capsys):
    graph, batch = _random_case(5, K=2)
    gdir, _ = _write_mosp(tmp_path, graph, batch)
    npz = tmp_path / "batch.npz"
    np.savez(npz, insert_src=batch["insert_src"], insert_dst=batch["insert_dst"])
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", npz, "--source", 0, "--out", tmp_path / "o")
    assert code == 2
    assert (f"{npz}: lacks the key insert_weights: its 12 insertion(s) (insert_src, insert_dst) need K = 2 "
            "weights each") in err
    assert "outside the weight range" not in err


def test_an_npz_batch_of_deletions_only_needs_no_weights(tmp_path, capsys):
    graph, batch = _random_case(6, K=2)
    gdir, _ = _write_mosp(tmp_path, graph, batch)
    npz = tmp_path / "batch.npz"
    np.savez(npz, delete_src=batch["delete_src"], delete_dst=batch["delete_dst"])
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", npz, "--source", 0, "--out", tmp_path / "o")
    assert code == 0, err


def test_a_symbolic_link_loop_as_the_graph_is_named_as_one(tmp_path):
    loop = tmp_path / "loop.npz"
    os.symlink(loop.name, loop)
    with pytest.raises(FileFormatError, match="loop.npz: a symbolic link loop"):
        cli.read_graph(loop)


def test_an_npz_batch_with_an_unknown_key_is_refused_naming_it(tmp_path, capsys):
    # misspelt keys (delete_source, delete_target) dropped the file's deletions without a word: the
    # update ran on a batch of insertions only and exited 0
    graph, batch = _random_case(7, K=2)
    gdir, _ = _write_mosp(tmp_path, graph, batch)
    npz = tmp_path / "batch.npz"
    np.savez(npz, insert_src=batch["insert_src"], insert_dst=batch["insert_dst"],
             insert_weights=batch["insert_weights"], delete_source=batch["delete_src"],
             delete_target=batch["delete_dst"])
    out = tmp_path / "o"
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", npz, "--source", 0, "--out", out)
    assert code == 2
    assert (f"{npz}: unknown array(s) delete_source, delete_target; a batch .npz holds delete_dst, delete_src, insert_dst, "
            "insert_src, insert_weights") in err
    assert not out.exists()


def test_a_state_npz_with_an_unknown_key_is_refused_naming_it(tmp_path, capsys):
    # a misspelt "objective" left the state's objective 1 unread: the update ran objective 0, exit 0
    graph, batch = _random_case(8, K=2)
    _, bdir = _write_mosp(tmp_path, graph, batch)
    state = tmp_path / "state.npz"
    np.savez(state, row_ptr=graph.row_ptr, col_ind=graph.col_ind, weights=graph.weights, source=0, objectiv=1)
    out = tmp_path / "o"
    code, _, err = _run(capsys, "update", "--graph", state, "--batch", bdir, "--out", out)
    assert code == 2
    assert (f"{state}: unknown array(s) objectiv; a state .npz holds col_ind, distances, objective, parents, "
            "row_ptr, source, statistics, weights") in err
    assert not out.exists()


def test_another_objective_than_the_stored_trees_is_refused(tmp_path, capsys):
    # the tree stored for objective 0 was imported as objective 1's and updated: its distances were
    # written as objective 1's (the same mistake with --source was already refused)
    graph, batch = _random_case(9, K=2)
    _, bdir = _write_mosp(tmp_path, graph, batch)
    np.savez(tmp_path / "g.npz", row_ptr=graph.row_ptr, col_ind=graph.col_ind, weights=graph.weights)
    state = tmp_path / "s0.npz"
    code, _, err = _run(capsys, "compute", "--graph", tmp_path / "g.npz", "--source", 0, "--out", state)
    assert code == 0, err
    out = tmp_path / "s1.npz"
    code, _, err = _run(capsys, "update", "--graph", state, "--batch", bdir, "--objective", 1, "--out", out)
    assert code == 2
    assert f"--objective 1 differs from the objective 0 of the tree stored in {state}" in err
    assert not out.exists()
    code, _, err = _run(capsys, "update", "--graph", state, "--batch", bdir, "--objective", 0, "--out", out)
    assert code == 0, err  # the stored one, named again


def test_a_source_in_a_graph_without_vertices_is_said_so(tmp_path, capsys):
    # the message gave the id range as "ids 0 .. -1"
    graph = tmp_path / "empty.npz"
    np.savez(graph, row_ptr=[0], col_ind=np.zeros(0, np.int64), weights=np.zeros((0, 1), np.int64))
    code, _, err = _run(capsys, "compute", "--graph", graph, "--source", 0, "--out", tmp_path / "o")
    assert code == 2
    assert "--source 0 is not a vertex of the graph: it has none (n = 0)" in err and ".. -1" not in err
