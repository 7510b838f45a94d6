"""bench/host_bench.py (issue 35) without timing anything on the real clock's behalf: the update
measurement restores the graph for every run and checks the result against compute(), and the
table says what it measured."""

from __future__ import annotations

import json

import numpy as np
import pytest

import engines
from bench import host_bench as hb
from engines import sssp
from engines.exitcodes import ExitCode

from .. import harness as H


def _small():
    rng = np.random.default_rng(3535)
    n, src, dst, w = H.random_graph(rng, "sparse", 500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    tree = sssp.compute(graph, 0).to_numpy()
    _, parents = tree
    batch = H.make_batch(H.random_batch(rng, "tree_delete", H.ref_of(graph), parents, 0, "mid"))
    return graph, batch, tree


def test_update_runs_from_the_same_state_and_equals_compute():
    graph, batch, tree = _small()
    version = graph.version
    out = hb.host_update(graph, batch, tree, 0, 0, repeats=3, warmup=1)
    assert out["equals_compute"] and out["ms"] > 0 and out["imported_ms"] > 0
    assert out["compute_after_ms"] > 0 and out["scipy_after_ms"] > 0
    assert out["invalidated"] >= 1
    assert graph.version == version  # the prepared graph is back for the next batch
    again = hb.host_update(graph, batch, tree, 0, 0, repeats=1, warmup=0)
    assert (again["invalidated"], again["affected"]) == (out["invalidated"], out["affected"])


def test_table_rows_and_ratios():
    rows = [{"graph": "g", "n": 10, "m": 20, "objective": 0, "scipy_ms": 200.0, "compute_ms": 100.0,
             "updates": {"local10k": {"ms": 50.0, "imported_ms": 60.0, "invalidated": 1234, "affected": 5678,
                                      "equals_compute": True, "compute_after_ms": 125.0,
                                      "scipy_after_ms": 250.0}}}]
    table = hb.markdown(rows)
    assert ("| g | local10k | 1,234 | 5,678 | 50.0 | 60.0 | 125.0 / 250.0 | 0.40 / 0.20 | 100.0 / 200.0 | yes |"
            in table)


def test_usage_errors_exit_2(capsys):
    assert hb.main(["--repeats", "0"]) == 2
    assert capsys.readouterr().err == "host_bench.py: --repeats must be >= 1\n"


def test_an_unknown_gate_is_refused_before_measuring(monkeypatch, capsys):
    monkeypatch.setattr(hb, "scipy_recompute_ms", lambda *args: pytest.fail("measured before the names' check"))
    assert hb.main(["--graphs", "roadNet-PA,nope"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("host_bench.py: unknown gate name(s): nope (known: roadNet-PA, ") and err.count("\n") == 1


def test_a_misspelt_batch_is_refused_before_any_gate_is_read(monkeypatch, capsys):
    # it was found only once the first gate was prepared (minutes for a large one): now
    # bench.batches.check_batch_names, the owner of the batch names, refuses it first
    from bench import prepare

    monkeypatch.setattr(prepare, "prepare_gate", lambda *args, **kwargs: pytest.fail("read before the names' check"))
    assert hb.main(["--graphs", "roadNet-PA", "--batches", "safe50k", "local10", "--no-progress"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("host_bench.py: --batches: no batch named local10 (every graph has ") and err.count("\n") == 1


def test_a_batch_the_gate_lacks_is_refused_before_its_measurement(monkeypatch):
    """run() checks the batch names against the prepared gate before timing anything of it."""
    from types import SimpleNamespace

    from bench import prepare
    from protocol.errors import UsageError

    gate = SimpleNamespace(batches={"safe50k": None}, graph=None, source=0, trees=[None])
    monkeypatch.setattr(prepare, "prepare_gate", lambda *args, **kwargs: gate)
    monkeypatch.setattr(hb, "scipy_recompute_ms", lambda *args: pytest.fail("measured before the batch check"))
    with pytest.raises(UsageError, match=r"gate roadNet-PA has no batch 'local10k' \(it has safe50k\)"):
        hb.run(["roadNet-PA"], ["safe50k", "local10k"])
    with pytest.raises(UsageError, match=r"--objective 1: gate roadNet-PA has 1 weight columns"):
        hb.run(["roadNet-PA"], ["safe50k"], objective=1)  # an IndexError after the timings, before


# -- the files written ---------------------------------------------------------------------------
ROWS = [{"graph": "g", "updates": {"local10k": {"equals_compute": True}}}]


def _measured(monkeypatch):
    monkeypatch.setattr(hb, "run", lambda *args, **kwargs: ROWS)
    monkeypatch.setattr(hb, "markdown", lambda rows: "| g | table |")


def test_the_out_folder_gets_the_record_and_the_table(monkeypatch, tmp_path, capsys):
    _measured(monkeypatch)
    assert hb.main(["--graphs", "g", "--out", str(tmp_path)]) == 0
    command = "python bench/host_bench.py --graphs g --out " + str(tmp_path)
    assert (tmp_path / "host_bench.json").read_text() == json.dumps({"command": command, "rows": ROWS}, indent=1)
    assert (tmp_path / "host_bench.md").read_text() == "| g | table |"


@pytest.mark.parametrize("name", ["host_bench.json", "host_bench.md"])
def test_an_interrupted_write_keeps_the_earlier_file(name, monkeypatch, tmp_path, interrupted_write, capsys):
    _measured(monkeypatch)
    interrupted_write.of(tmp_path / name)
    assert hb.main(["--graphs", "g", "--out", str(tmp_path)]) == ExitCode.ENVIRONMENT
    interrupted_write.check_kept()
    captured = capsys.readouterr()
    assert captured.out == "| g | table |\n"  # the measurement is printed whatever the files
    assert captured.err == f"host_bench.py: cannot write {tmp_path / name}: No space left on device\n"


def test_an_out_folder_that_cannot_be_made_is_refused_before_measuring(monkeypatch, tmp_path, capsys):
    """--out below a file: one line naming it, exit 2, and no graph measured."""
    monkeypatch.setattr(hb, "run", lambda *args, **kwargs: pytest.fail("measured before checking --out"))
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "folder"
    assert hb.main(["--graphs", "g", "--out", str(out)]) == ExitCode.USAGE
    assert capsys.readouterr().err == f"host_bench.py: --out {out}: cannot write there (Not a directory)\n"


def test_a_wrong_update_outranks_a_failed_write(monkeypatch, tmp_path, interrupted_write, capsys):
    """A row whose update differs from compute() and a record that cannot be written: exit 1 (the
    wrong answer), with the write's line."""
    wrong = [{"graph": "g", "updates": {"local10k": {"equals_compute": False}}}]
    monkeypatch.setattr(hb, "run", lambda *args, **kwargs: wrong)
    monkeypatch.setattr(hb, "markdown", lambda rows: "| g | wrong |")
    interrupted_write.of(tmp_path / "host_bench.json")
    assert hb.main(["--graphs", "g", "--out", str(tmp_path)]) == ExitCode.CORRECTNESS
    assert "cannot write" in capsys.readouterr().err
