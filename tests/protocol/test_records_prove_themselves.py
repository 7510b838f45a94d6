"""Records that prove themselves (issue 28, item 2): every case damages a finished campaign's files
itself, and each ends with exit 2 naming the file, never a rendering of a wrong number (and never
a traceback); a tree edited in the cache is never trusted, by host sides too."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bench import perf_ab

from .helpers import record_host_campaign

ARGS = ["--sides", "host,host", "--batches", "local10k", "unsafe50k", "--objectives", "0", "--rounds", "5",
        "--processes", "1", "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]
LOCAL, UNSAFE = "local10k", "unsafe50k"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished two-cell host campaign on a small graph file."""
    root = tmp_path_factory.mktemp("proving")
    graph, out = record_host_campaign(root, 8, ARGS)
    return root, graph, out


@pytest.fixture
def copy(recorded, tmp_path):
    root, graph, out = recorded
    shutil.copytree(out, tmp_path / "records")
    shutil.copytree(root / "cache", tmp_path / "cache")
    return graph, tmp_path / "records", tmp_path / "cache"


def _round_file(out, batch):
    [path] = (out / "rounds").glob(f"*{batch}*.parquet")
    return path


def _report(out, capsys):  # --write: these tests are about what a rendering leaves beside the records
    code = perf_ab.main(["report", "--out", str(out), "--write"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _resume(graph, out, cache, capsys):
    code = perf_ab.main(["engines", *ARGS, "--graph-file", str(graph), "--out", str(out), "--cache-dir", str(cache),
                         "--resume"])
    return code, capsys.readouterr().err


def test_a_finished_cell_whose_round_file_disappeared_is_an_error(copy, capsys):
    graph, out, cache = copy
    path = _round_file(out, UNSAFE)
    path.unlink()
    code, err = _report(out, capsys)
    assert code == 2
    assert f"{path}: damaged record: the round file of cell small/{UNSAFE}/0 is missing, yet campaign.json " \
           "records the cell as done with 5 accepted pairs" in err
    assert not (out / "M7.md").read_text().count("not measured")  # the old report stays; none rendered
    code, err = _resume(graph, out, cache, capsys)
    assert code == 2 and "is missing" in err


def test_a_round_file_copied_over_another_cells_is_an_error(copy, capsys):
    _, out, _ = copy
    target = _round_file(out, UNSAFE)
    shutil.copyfile(_round_file(out, LOCAL), target)
    code, err = _report(out, capsys)
    assert code == 2
    assert (f"{target}: damaged record: its rounds are of cell small/{LOCAL}/0, not of small/{UNSAFE}/0, the cell "
            "its file name says (a round file copied over another cell's?)") in err


def test_rows_of_another_campaign_are_an_error(copy, capsys):
    _, out, _ = copy
    campaign = json.loads((out / "campaign.json").read_text())
    recorded_id = campaign["campaign_id"]
    campaign["campaign_id"] = "0123456789ab"
    (out / "campaign.json").write_text(json.dumps(campaign))
    code, err = _report(out, capsys)
    assert code == 2
    assert f"damaged record: its rounds belong to campaign {recorded_id}, not to 0123456789ab (campaign.json)" in err


def test_fewer_accepted_pairs_than_campaign_json_records_is_an_error(copy, capsys):
    import pyarrow.parquet as pq

    _, out, _ = copy
    path = _round_file(out, LOCAL)
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 2), path)  # the last pair is gone
    code, err = _report(out, capsys)
    assert code == 2
    assert f"{path}: damaged record: it holds 4 accepted pairs of cell small/{LOCAL}/0, but campaign.json " \
           "records 5 for the finished cell" in err


def test_a_cell_status_outside_the_known_set_is_an_error(copy, capsys):
    _, out, _ = copy
    campaign = json.loads((out / "campaign.json").read_text())
    campaign["cells"][f"small/{LOCAL}/0"]["status"] = "excellent"
    (out / "campaign.json").write_text(json.dumps(campaign))
    code, err = _report(out, capsys)
    assert code == 2
    assert (f"{out / 'campaign.json'}: damaged record: cells['small/{LOCAL}/0']: status 'excellent' is not one of "
            "done, too_noisy, guard_failed, check_failed, worker_failed, running") in err


@pytest.mark.parametrize("edit", ["ratio", "interval excluding its estimate"])
def test_a_summary_edited_with_its_fingerprint_kept_is_refused(copy, capsys, edit):
    _, out, _ = copy
    assert _report(out, capsys)[0] == 0
    summary = json.loads((out / "summary.json").read_text())
    report_before = (out / "M7.md").read_text()
    cell = summary["cells"][0]
    if edit == "ratio":
        cell["ratio"] = 0.5
    else:
        cell["ratio_lo"], cell["ratio_hi"] = cell["ratio"] + 0.1, cell["ratio"] + 0.2
    (out / "summary.json").write_text(json.dumps(summary))  # records_sha256 kept
    code, err = _report(out, capsys)
    assert code == 2
    assert f"{out / 'summary.json'}: the summary does not match the records it claims to come from (cells[0]." in err
    assert "it was changed after it was derived. Delete it and run `perf_ab.py report --out" in err
    assert (out / "M7.md").read_text() == report_before
    (out / "summary.json").unlink()  # the way on that the message gives
    assert _report(out, capsys)[0] == 0


def test_the_ratio_plot_draws_an_interval_that_excludes_its_estimate(tmp_path):
    from protocol.plots import ratio_against_syncs

    summary = {"sides": {"A": "host", "B": "host"},
               "cells": [{"cell": "g/b/0", "ratio": 1.0, "ratio_lo": 1.1, "ratio_hi": 1.2,
                          "syncs": {"host_syncs_B": 0}}]}
    assert ratio_against_syncs(summary, tmp_path / "ratio.png").is_file()


def _trees_file(cache):
    [path] = cache.glob("gates/small-*/trees-v1-s*.npz")
    return path


def _edit_trees(path):
    arrays = dict(np.load(path))
    distances = arrays["distances_0"]
    v = int(np.flatnonzero((distances > 0) & (distances < np.iinfo(np.int64).max // 2))[0])
    distances[v] += 1
    np.savez(path, **arrays)
    return arrays


def test_a_tree_edited_in_the_cache_is_computed_again(copy, capsys, tmp_path):
    graph, _, cache = copy
    path = _trees_file(cache)
    original = {k: v.copy() for k, v in np.load(path).items()}
    _edit_trees(path)
    out = tmp_path / "again"
    code = perf_ab.main(["engines", *ARGS, "--graph-file", str(graph), "--out", str(out), "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert code == 0
    assert f"prepare: {path}: the cached initial trees differ from their recorded SHA-256 (edited or damaged); " \
           "computing them again" in err
    again = np.load(path)
    assert all(np.array_equal(again[k], original[k]) for k in original)


def test_a_tree_edited_with_its_digest_is_caught_on_a_host_only_campaign(copy, capsys, tmp_path):
    from bench.prepare import trees_sha256

    graph, _, cache = copy
    path = _trees_file(cache)
    arrays = _edit_trees(path)
    k = len([n for n in arrays if n.startswith("distances_")])
    forged = trees_sha256([(arrays[f"distances_{i}"], arrays[f"parents_{i}"]) for i in range(k)])
    path.with_suffix(".sha256").write_text(forged + "\n")
    out = tmp_path / "forged"
    code = perf_ab.main(["engines", *ARGS, "--graph-file", str(graph), "--out", str(out), "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "initial distance of vertex" in err or "differs from the prepared tree" in err


def test_a_host_side_rechecks_the_prepared_tree(capsys):
    """The measurer itself, whatever the cache said: a host side's compute() must give the tree."""
    from protocol.cell import CheckFailure
    from protocol.measurer import Measurer
    from protocol.sides import parse_sides

    from .helpers import host_config, small_graph_input

    gi = small_graph_input()
    d, p = gi.trees[0]
    d = d.copy()
    d[int(np.flatnonzero(d > 0)[0])] += 1
    gi.trees[0] = (d, p)
    measurer = Measurer(host_config(), None, campaign_id="x", session=0)
    with pytest.raises(CheckFailure, match="compute\\(\\) on host differs from the prepared tree"):
        measurer.check_initial_tree(gi, parse_sides("host,host")[0], 0)
