"""--objectives against a graph file's own weight columns (--weights file), refused before
campaign.json exists (issue 28): a corrected command then runs instead of meeting an unfinished
campaign."""

from __future__ import annotations

from bench import perf_ab
from bench.graph_file import make_spec, weight_columns
from bench.weights import NUM_OBJECTIVES

from .graph_files import write_format


def test_weight_columns_of_a_file_and_of_drawn_weights(tmp_path):
    for name, k in (("dimacs", 1), ("mosp", 2)):
        path, _, _ = write_format(name, tmp_path / name)
        assert weight_columns(make_spec(path, weights="file"), cache_dir=tmp_path / "c") == k
        assert weight_columns(make_spec(path), cache_dir=tmp_path / "c") == NUM_OBJECTIVES


def test_an_objective_beyond_the_files_columns_is_refused_before_the_campaign(tmp_path, capsys):
    path, _, _ = write_format("dimacs", tmp_path / "dimacs")
    out = tmp_path / "out"
    code = perf_ab.main(["engines", "--graph-file", str(path), "--weights", "file",
                         "--sides", "host,host", "--objectives", "1", "--rounds", "5", "--out", str(out),
                         "--cache-dir", str(tmp_path / "c"), "--no-progress", "--allow-dirty"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--objectives: objective 1 is outside [0, 1)" in err and "1 weight column(s)" in err
    assert "Traceback" not in err
    assert not (out / "campaign.json").exists()
