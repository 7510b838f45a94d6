"""``perf_ab.py sweep`` (issue 33 step 1): the size series and its caps, the crossover on synthetic
timings, the sides, the records and resume, and one host sweep end to end on a tiny graph."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bench import sweep, sweep_cmd
from protocol.errors import UsageError
from bench.sweep_sides import RecomputeSide, UpdateSide, sweep_sides
from protocol.crossover import (BELOW_RANGE, CROSSOVER, NO_DATA, NONE_IN_RANGE, SizePoint, find_crossover,
                                log_interpolate, size_point)

from .graph_files import connected_edge_list


# -- sizes ----------------------------------------------------------------------------------------
def test_default_series_is_geometric_from_10_to_1M():
    assert sweep.DEFAULT_SIZES == (10, 100, 1_000, 10_000, 100_000, 1_000_000)
    assert [sweep.size_label(s) for s in sweep.DEFAULT_SIZES] == ["10", "100", "1k", "10k", "100k", "1M"]


def test_sizes_above_the_edge_count_are_dropped_with_the_reason():
    kept, dropped = sweep.size_series(13_188)
    assert kept == [10, 100, 1_000, 10_000]
    assert [d["size"] for d in dropped] == [100_000, 1_000_000]
    assert all("13,188 edges" in d["reason"] for d in dropped)


def test_a_graph_with_more_edges_than_the_largest_size_keeps_every_size():
    kept, dropped = sweep.size_series(58_000_000)
    assert kept == list(sweep.DEFAULT_SIZES) and dropped == []


def test_a_size_equal_to_the_edge_count_is_kept():
    kept, dropped = sweep.size_series(1_000, [10, 1_000, 1_001])
    assert kept == [10, 1_000] and [d["size"] for d in dropped] == [1_001]


@pytest.mark.parametrize("text, value", [("10", 10), ("1k", 1_000), ("10K", 10_000), ("1M", 1_000_000),
                                         ("1e5", 100_000), ("250000", 250_000)])
def test_parse_size(text, value):
    assert sweep.parse_size(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "ten", "1.5"])
def test_parse_size_refuses(text):
    from protocol.exitcodes import ExitCode

    with pytest.raises(Exception) as info:
        sweep.parse_size(text)
    assert getattr(info.value, "exit_code", None) == ExitCode.USAGE


def test_parse_sizes_sorts_and_dedupes():
    assert sweep.parse_sizes(["1k,10", "100", "10"]) == [10, 100, 1_000]


def test_batch_names_round_trip():
    for size in (10, 1_000, 250_000, 1_000_000, 1_234):
        for locality in sweep.LOCALITIES:
            assert sweep.parse_batch_name(sweep.batch_name(locality, size)) == (locality, size)


def test_engines_are_parsed_and_checked():
    assert sweep.parse_engines("cuda:fused,cuda:operators") == ["cuda:fused", "cuda:operators"]
    assert sweep.parse_engines("host") == ["host"]
    with pytest.raises(Exception):
        sweep.parse_engines("host,host")
    with pytest.raises(Exception):
        sweep.parse_engines("cuda:nope")


def test_sweep_sides_share_the_engine():
    upd, rec = sweep_sides("cuda:operators-host")
    assert isinstance(upd, UpdateSide) and isinstance(rec, RecomputeSide)
    assert upd.engine_options == rec.engine_options == {"cuda_engine": "operators", "operators_loop": "host"}
    assert upd.label == "cuda:operators-host update()" and rec.label == "cuda:operators-host compute()"


# -- the crossover on synthetic timings -----------------------------------------------------------
def pt(size, ratio, half=0.05):
    return SizePoint(size, ratio, ratio - half, ratio + half)


def test_crossover_interpolates_on_the_log_scale():
    points = [pt(10, 0.1), pt(100, 0.5), pt(1_000, 2.0), pt(10_000, 8.0)]
    found = find_crossover(points)
    assert found.status == CROSSOVER
    assert (found.below.size, found.above.size) == (100, 1_000)
    # log ratio goes from log 0.5 to log 2 over one decade: it meets 0 half way, at sqrt(100 * 1000)
    assert found.size == pytest.approx(math.sqrt(100 * 1_000))
    assert found.first_confident_size == 1_000


def test_crossover_is_the_smallest_confident_size_not_a_later_one():
    points = [pt(10, 0.5), pt(100, 1.5), pt(1_000, 0.9), pt(10_000, 3.0)]
    found = find_crossover(points)
    assert found.first_confident_size == 100
    assert (found.below.size, found.above.size) == (10, 100)


def test_crossover_waits_for_the_interval_to_leave_1():
    # the median passes 1 between 100 and 1k, but the interval is above 1 only from 10k
    points = [pt(100, 0.8), pt(1_000, 1.02, half=0.1), pt(10_000, 1.5)]
    found = find_crossover(points)
    assert found.status == CROSSOVER
    assert (found.below.size, found.above.size) == (100, 1_000)
    assert found.first_confident_size == 10_000
    assert 100 < found.size < 1_000


def test_no_crossover_in_range():
    found = find_crossover([pt(10, 0.01), pt(1_000, 0.2), pt(100_000, 0.98)])
    assert found.status == NONE_IN_RANGE and found.size is None
    assert found.below.size == 100_000
    assert "no crossover" in found.describe()


def test_an_interval_touching_1_is_no_crossover():
    found = find_crossover([pt(10, 0.5), pt(100, 1.04, half=0.04)])
    assert found.status == NONE_IN_RANGE


def test_crossover_below_the_smallest_size():
    found = find_crossover([pt(10, 3.0), pt(100, 9.0)])
    assert found.status == BELOW_RANGE and found.size is None
    assert found.above.size == 10 and found.first_confident_size == 10
    assert "smallest size" in found.describe()


def test_median_above_1_everywhere_is_below_the_range():
    found = find_crossover([pt(10, 1.02, half=0.1), pt(100, 1.3)])
    assert found.status == BELOW_RANGE and found.first_confident_size == 100
    # every sentence that reports a crossover names what side B is (the sweep also describes the
    # comparison against apply + compute() with the same function)
    assert found.describe("apply + compute()").startswith("apply + compute() faster below the range")
    assert found.describe().startswith("compute() faster below the range")


def test_no_data():
    assert find_crossover([]).status == NO_DATA
    assert find_crossover([SizePoint(10, math.nan, math.nan, math.nan)]).status == NO_DATA


def test_points_in_any_order():
    points = [pt(1_000, 2.0), pt(10, 0.1), pt(100, 0.5)]
    assert find_crossover(points).size == pytest.approx(math.sqrt(100 * 1_000))


def test_log_interpolate_at_the_ends():
    assert log_interpolate(SizePoint(10, 1.0, 0.9, 1.1), SizePoint(100, 2.0, 1.9, 2.1)) == pytest.approx(10)
    assert log_interpolate(SizePoint(10, 0.5, 0.4, 0.6), SizePoint(100, 2.0, 1.9, 2.1)) == pytest.approx(
        10 ** 1.5)


def test_size_point_ratio_is_update_over_compute():
    rng = np.random.default_rng(3)
    update = 3.0 + rng.normal(0, 0.01, 40)
    compute = 1.5 + rng.normal(0, 0.01, 40)
    p = size_point(1_000, update, compute, np.repeat([0, 1], 20))
    assert p.ratio == pytest.approx(2.0, rel=0.02)
    assert p.lo < p.ratio < p.hi and p.lo > 1.9
    assert p.compute_faster and p.pairs == 40 and p.processes == 2
    assert p.update_ms == pytest.approx(3.0, rel=0.01) and p.compute_ms == pytest.approx(1.5, rel=0.01)


def test_crossover_from_synthetic_timings_with_noise():
    """update() grows with the batch (a + b * size), compute() does not: the crossover is where
    they meet, found between the measured sizes either side."""
    rng = np.random.default_rng(0)
    points = []
    for size in (10, 100, 1_000, 10_000, 100_000):
        update = (0.2 + 0.001 * size) * (1 + rng.normal(0, 0.01, 30))
        compute = 5.0 * (1 + rng.normal(0, 0.01, 30))
        points.append(size_point(size, update, compute, resamples=2000, seed=1))
    found = find_crossover(points)
    assert found.status == CROSSOVER
    assert (found.below.size, found.above.size) == (1_000, 10_000)
    assert 1_000 < found.size < 10_000  # the true crossing is at 4,800


# -- records --------------------------------------------------------------------------------------
def _whole_sweep_record() -> dict:
    params = {"engines": ["host"], "sizes": [10, 100], "localities": ["uniform"], "objectives": [0], "seed": 0,
              "bootstrap_resamples": 2000}
    graph = {"n": 120, "m": 600, "sizes": [10, 100], "dropped": [{"size": 1000, "reason": "too big"}],
             "campaigns": {"host": "campaigns/tiny/host"}, "verify": {"host": "compute"}}
    return {"schema": sweep.SWEEP_SCHEMA, "schema_version": sweep.SWEEP_VERSION, "started_utc": "t0",
            "parameters": params, "graphs": {"tiny": graph}, "reproduce": "python bench/perf_ab.py sweep"}


def test_sweep_store_round_trip(tmp_path):
    store = sweep.SweepStore(tmp_path / "s")
    record = _whole_sweep_record()
    store.write_sweep(record)
    assert store.read_sweep() == record


@pytest.mark.parametrize("damage, message", [
    (lambda r: r.pop("parameters"), "lacks the field 'parameters'"),
    (lambda r: r.pop("reproduce"), "lacks the field 'reproduce'"),
    (lambda r: r.update(graphs=[]), "field 'graphs' is a list, expected an object"),
    (lambda r: r["parameters"].update(engines="host"), "parameters: field 'engines' is a string"),
    (lambda r: r["parameters"].update(sizes=["10"]), "parameters.sizes[0] is '10', expected an integer"),
    (lambda r: r["graphs"]["tiny"].pop("campaigns"), "graphs['tiny'] lacks the field 'campaigns'"),
    (lambda r: r["graphs"]["tiny"]["campaigns"].clear(), "no folder for the engine 'host'"),
    (lambda r: r["graphs"]["tiny"]["campaigns"].update(host="/elsewhere"), "not a folder inside the sweep's"),
    (lambda r: r["graphs"]["tiny"]["campaigns"].update(host="../other/host"), "not a folder inside the sweep's"),
    (lambda r: r["graphs"]["tiny"].update(dropped=[5]), "graphs['tiny'].dropped[0] is an integer, not an object"),
    (lambda r: r.update(schema_version=True), "schema version true"),
])
def test_a_damaged_sweep_record_is_named_not_a_key_error(tmp_path, damage, message):
    """sweep.json with a field missing or of the wrong type: a UsageError naming the file and the
    field (exit 2), not a KeyError in the crossover or the report reported as a bug."""
    store = sweep.SweepStore(tmp_path)
    record = _whole_sweep_record()
    damage(record)
    store.write_sweep(record)
    with pytest.raises(UsageError) as caught:
        store.read_sweep()
    assert str(store.sweep_path) in str(caught.value) and message in str(caught.value)


@pytest.mark.parametrize("mode", ["--resume", "--report-only"])
def test_resume_and_report_of_a_damaged_sweep_record_exit_2_and_change_nothing(tmp_path, capsys, mode):
    store = sweep.SweepStore(tmp_path / "out")
    record = _whole_sweep_record()
    del record["graphs"]["tiny"]["campaigns"]
    store.write_sweep(record)
    before = store.sweep_path.read_bytes()
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    argv = _argv(graph, store.root, tmp_path / "cache", mode) if mode == "--resume" else [mode, "--out", str(store.root)]
    assert sweep_cmd.cli(argv) == 2
    err = capsys.readouterr().err
    assert "damaged record" in err and "'campaigns'" in err and "internal error" not in err
    assert store.sweep_path.read_bytes() == before
    assert sorted(p.name for p in store.root.iterdir() if p.name != ".campaign.lock") == ["sweep.json"]


def test_sweep_store_refuses_other_versions_and_damage(tmp_path):
    store = sweep.SweepStore(tmp_path)
    store.write_sweep({"schema": sweep.SWEEP_SCHEMA, "schema_version": 99})
    with pytest.raises(Exception, match="schema version 99"):
        store.read_sweep()
    store.sweep_path.write_text("{not json")
    with pytest.raises(Exception, match="damaged"):
        store.read_sweep()
    store.sweep_path.unlink()
    with pytest.raises(Exception, match="missing"):
        store.read_sweep()


def test_report_only_on_an_out_that_is_a_file_names_it_not_a_damaged_record(tmp_path, capsys):
    """sweep --report-only --out FILE said 'FILE/sweep.json: damaged ([Errno 20] Not a directory ...)'."""
    out = tmp_path / "sweep.md"
    out.write_text("x")
    assert sweep_cmd.cli(["--report-only", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"no sweep records in {out}: it is not a folder" in err and "damaged" not in err
    assert out.read_text() == "x"


@pytest.mark.parametrize("extra, named", [(["--force"], "drop --force"), (["--resume"], "drop --resume"),
                                          (["--force", "--resume"], "drop --force and --resume")])
def test_report_only_with_a_measuring_option_is_refused_and_changes_nothing(tmp_path, capsys, extra, named):
    """--report-only --force rendered the old sweep and ignored --force without a word."""
    store = sweep.SweepStore(tmp_path / "out")
    store.write_sweep(_whole_sweep_record())
    before = store.sweep_path.read_bytes()
    assert sweep_cmd.cli(["--report-only", *extra, "--out", str(store.root), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--report-only renders the sweep in --out and measures nothing" in err and named in err
    assert store.sweep_path.read_bytes() == before
    assert sorted(p.name for p in store.root.iterdir()) == ["sweep.json"]


def test_a_negative_host_reference_cap_is_refused_before_anything_is_written(tmp_path, capsys):
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out = tmp_path / "out"
    assert sweep_cmd.cli(_argv(graph, out, tmp_path / "cache", "--host-reference-cap", "-1")) == 2
    assert "--host-reference-cap -1: expected a vertex count >= 0" in capsys.readouterr().err
    assert not out.exists()


# -- end to end on a tiny graph (host engine) -----------------------------------------------------
def _tiny_graph_file(folder, n=300, m=900, seed=1):
    return connected_edge_list(folder, "tiny.edges", n, m, seed)


def _argv(graph, out, cache, *extra):
    return ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "100", "1k", "10k",
            "--rounds", "6", "--processes", "1", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
            "--no-control", "--out", str(out), "--cache-dir", str(cache), *extra]
# (--no-control: with 6 rounds the A/A control's interval excludes 1 by chance now and then, exit 4;
# the control itself is the runner's, tested in tests/protocol)


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    graph = _tiny_graph_file(folder)
    out = folder / "out"
    code = sweep_cmd.cli(_argv(graph, out, folder / "cache"))
    return code, out, graph, folder


@pytest.mark.slow
def test_host_sweep_end_to_end(tiny_sweep, capsys):
    code, out, _, _ = tiny_sweep
    assert code == 0
    record = json.loads((out / "sweep.json").read_text())
    assert record["schema"] == sweep.SWEEP_SCHEMA and record["schema_version"] == sweep.SWEEP_VERSION
    info = record["graphs"]["tiny"]
    assert info["m"] == 1_800 and info["sizes"] == [10, 100, 1_000]
    assert [d["size"] for d in info["dropped"]] == [10_000] and "1,800 edges" in info["dropped"][0]["reason"]
    assert info["verify"] == {"host": "compute"}
    assert "perf_ab.py sweep" in record["reproduce"] and "--engines host" in record["reproduce"]
    campaign = json.loads((out / info["campaigns"]["host"] / "campaign.json").read_text())
    assert campaign["parameters"]["sides"] == {"A": "host update()", "B": "host compute()"}
    statuses = {key: cell["status"] for key, cell in campaign["cells"].items()}
    assert set(statuses.values()) == {"done"}
    assert sorted(k for k in statuses if not k.endswith("/control")) == sorted(
        f"tiny/{loc}-{s}/0" for loc in ("uniform", "local") for s in ("10", "100", "1k"))
    crossover = json.loads((out / "crossover.json").read_text())
    entries = {(e["locality"], e["engine"]): e for e in crossover["entries"]}
    assert set(entries) == {("uniform", "host"), ("local", "host")}
    for e in entries.values():
        assert [p["size"] for p in e["points"]] == [10, 100, 1_000]
        for p in e["points"]:
            assert p["pairs"] >= 6 and p["lo"] <= p["ratio"] <= p["hi"]
            assert p["update_ms"] > 0 and p["compute_ms"] > 0 and p["apply_compute_ms"] >= p["compute_ms"]
        assert e["crossover"]["status"] in (CROSSOVER, BELOW_RANGE, NONE_IN_RANGE)
        # against side B's whole round too (the batch applied, then compute()): the same sizes, and
        # apply + compute() is never faster than compute() alone, so its ratio is never the larger
        whole = e["with_apply"]["points"]
        assert [p["size"] for p in whole] == [10, 100, 1_000]
        for p, w in zip(e["points"], whole):
            assert w["ratio"] <= p["ratio"] and w["compute_ms"] == p["compute_ms"]
        assert e["with_apply"]["summary"].startswith(("apply + compute()", "no crossover"))


@pytest.mark.slow
def test_the_rounds_are_checked_against_compute_from_scratch(tiny_sweep):
    """Every timed round of either side carries the guard's digest (the update's tree equal to
    compute()'s from scratch), and the local batches lie in one region."""
    from protocol.records import RecordStore

    _, out, _, _ = tiny_sweep
    store = RecordStore(out / "campaigns" / "tiny" / "host")
    rows = store.read_rounds()
    assert not rows["reject_reason"].fillna("").str.startswith("check failed").any()
    campaign = store.read_campaign()
    [entry] = campaign["inputs"]
    local = [b for b in entry["batches"] if b["name"].startswith("local-")]
    assert {b["facts"]["centre"] for b in local} == {local[0]["facts"]["centre"]}  # the same seed: one centre
    assert all(b["facts"]["seed"] == 777 for b in entry["batches"])


@pytest.mark.slow
def test_resume_continues_and_refuses_other_parameters(tiny_sweep, capsys):
    code, out, graph, folder = tiny_sweep
    cache = folder / "cache"
    before = (out / "campaigns" / "tiny" / "host" / "campaign.json").read_text()
    assert sweep_cmd.cli(_argv(graph, out, cache)) == 2  # a sweep is there: refused without --resume/--force
    assert "--resume" in capsys.readouterr().err
    assert sweep_cmd.cli(_argv(graph, out, cache, "--resume")) == 0  # finished: nothing re-measured
    assert (out / "campaigns" / "tiny" / "host" / "campaign.json").read_text() == before
    assert sweep_cmd.cli(_argv(graph, out, cache, "--resume", "--seed", "5")) == 2
    assert "seed" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_finishes_an_interrupted_campaign(tmp_path):
    """A campaign cut short (cells left running) is continued by --resume and its finished cells
    are kept."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "100", "--localities", "uniform",
            "--rounds", "6", "--processes", "1", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
            "--no-control", "--out", str(out), "--cache-dir", str(cache)]
    assert sweep_cmd.cli(argv) == 0
    path = out / "campaigns" / "tiny" / "host" / "campaign.json"
    campaign = json.loads(path.read_text())
    key = "tiny/uniform-100/0"
    kept = campaign["cells"]["tiny/uniform-10/0"]
    campaign["cells"].pop(key)  # as if the sweep stopped before this cell
    campaign["finished_utc"] = None
    path.write_text(json.dumps(campaign))
    rounds = out / "campaigns" / "tiny" / "host" / "rounds"
    for f in rounds.glob("*uniform-100*"):
        f.unlink()
    assert sweep_cmd.cli([*argv, "--resume"]) == 0
    campaign = json.loads(path.read_text())
    assert campaign["cells"][key]["status"] == "done"
    assert campaign["cells"]["tiny/uniform-10/0"]["workers"] == kept["workers"]
    assert len(campaign["sessions"]) == 2
    crossover = json.loads((out / "crossover.json").read_text())
    assert [p["size"] for p in crossover["entries"][0]["points"]] == [10, 100]


@pytest.mark.slow
def test_resume_after_the_batches_were_drawn_reads_them_back_in_the_same_order(tmp_path, capsys):
    """The first session draws the sweep's batches (uniform, then local) and caches them; a resume
    reads them back from the cache, whose facts file sorts its keys (local first). The campaign
    compares its inputs in order, so every interrupted sweep of both localities was refused on
    --resume with 'the inputs of tiny changed since the campaign began'."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "--rounds", "5", "--processes", "1",
            "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress", "--no-control", "--out", str(out),
            "--cache-dir", str(cache)]
    assert sweep_cmd.cli(argv) == 0
    path = out / "campaigns" / "tiny" / "host" / "campaign.json"
    campaign = json.loads(path.read_text())
    assert [b["name"] for b in campaign["inputs"][0]["batches"]] == ["uniform-10", "local-10"]
    campaign["cells"].pop("tiny/local-10/0")  # as if the sweep stopped before this cell
    campaign["finished_utc"] = None
    path.write_text(json.dumps(campaign))
    for f in (out / "campaigns" / "tiny" / "host" / "rounds").glob("*local-10*"):
        f.unlink()
    capsys.readouterr()
    assert sweep_cmd.cli([*argv, "--resume"]) == 0, capsys.readouterr().err
    campaign = json.loads(path.read_text())
    assert campaign["cells"]["tiny/local-10/0"]["status"] == "done"
    assert [b["name"] for b in campaign["inputs"][0]["batches"]] == ["uniform-10", "local-10"]


@pytest.mark.slow
def test_resume_keeps_round_files_whose_campaign_record_is_gone(tmp_path, capsys):
    """A campaign folder of the sweep with round files but no campaign.json: --resume started a new
    campaign there, which cleared the round files (the sweep runs its campaigns without the
    engines command's folder check). Now exit 2, the round files kept."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "--localities", "uniform",
            "--rounds", "5", "--processes", "1", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
            "--no-control", "--out", str(out), "--cache-dir", str(cache)]
    assert sweep_cmd.cli(argv) == 0
    folder = out / "campaigns" / "tiny" / "host"
    (folder / "campaign.json").unlink()
    rounds = {p.name: p.read_bytes() for p in (folder / "rounds").glob("*.parquet")}
    assert rounds
    capsys.readouterr()
    assert sweep_cmd.cli([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds round files but no campaign.json" in err and "internal error" not in err
    assert {p.name: p.read_bytes() for p in (folder / "rounds").glob("*.parquet")} == rounds


# -- the report (step 2) --------------------------------------------------------------------------
@pytest.mark.slow
def test_report_from_stored_records(tiny_sweep, tmp_path):
    from bench import sweep_report

    _, out, _, _ = tiny_sweep
    report = sweep_report.render_sweep(out, to=tmp_path / "again.md")
    text = report.read_text()
    assert text.startswith("# Update or recompute? Batch-size sweep on tiny")
    assert "| tiny | uniform | host | 0 |" in text and "| tiny | local | host | 0 |" in text
    assert text.count("| tiny | uniform | host | 1k |") == 1  # one row per measured size
    assert "10k (more changes than the graph's 1,800 edges)" in text
    assert "host: compute() (the host engine is the reference)" in text
    assert "update / (apply + compute) [95 %]" in text
    assert "python bench/perf_ab.py sweep --engines host" in text
    assert "![tiny](plots/sweep-tiny.png)" in text
    png = out / "plots" / "sweep-tiny.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the sweep itself rendered sweep.md beside its records, and --report-only renders it again
    assert (out / "sweep.md").read_text() == text
    assert sweep_cmd.cli(["--report-only", "--out", str(out)]) == 0


def test_plot_and_table_from_synthetic_records(tmp_path):
    from bench import sweep_report
    from protocol.crossover import find_crossover

    points = [SizePoint(s, r, r * 0.95, r * 1.05, update_ms=r * 2.0, compute_ms=2.0, pairs=21, processes=3,
                        apply_compute_ms=2.5)
              for s, r in ((10, 0.1), (1_000, 0.6), (100_000, 3.0))]
    found = find_crossover(points)
    entry = {"graph": "g", "locality": "uniform", "engine": "cuda:fused", "objective": 0,
             "points": [p.as_dict() for p in points], "crossover": found.as_dict(), "summary": found.describe()}
    png = sweep_report.draw_graph_plot("g", [entry], tmp_path / "g.png")
    assert png.stat().st_size > 1_000
    sweep_record = {"parameters": {"engines": ["cuda:fused"], "sizes": [10, 1_000, 100_000],
                                   "localities": ["uniform"], "objectives": [0]},
                    "graphs": {"g": {"n": 5, "m": 200_000, "sizes": [10, 1_000, 100_000], "dropped": [],
                                     "verify": {"cuda:fused": "host"}}},
                    "started_utc": "t0", "finished_utc": "t1", "reproduce": "python bench/perf_ab.py sweep"}
    ctx = sweep_report.context(sweep_record, {"entries": [entry]}, [{"graph": "g", "path": "plots/g.png"}])
    [row] = ctx["entries"]
    assert row["between"] == "1k: 0.6 [0.57, 0.63] / 100k: 3 [2.85, 3.15]"
    assert "compute() faster from about" in row["summary"]
    assert ctx["graphs"][0]["verify"] == "cuda:fused: the host reference and compute()"
    assert row["with_apply"] == "–" and row["points"][0]["whole"] == "–"  # records without the second ratio


@pytest.mark.slow
def test_host_sweep_in_worker_processes(tmp_path):
    """The sides travel to spawned worker processes (pickled by class) and the sweep's batches are
    read back from the cache there; the interval resamples the two processes."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out = tmp_path / "out"
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "100", "--localities", "local",
            "--rounds", "6", "--processes", "2", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
            "--no-control", "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert sweep_cmd.cli(argv) == 0
    [entry] = json.loads((out / "crossover.json").read_text())["entries"]
    assert [p["processes"] for p in entry["points"]] == [2, 2]
    assert all(p["pairs"] >= 6 for p in entry["points"])


@pytest.mark.parametrize("extra, message", [
    (["--objectives", "3"], "outside [0, 3)"),
    (["--engines", "cuda:nope"], "unknown side"),
    (["--localities", "nearby"], "--localities"),
    (["--sizes", "0"], "--sizes"),
    (["--objectives", "0,x"], "--objectives: 'x' is not an objective (a weight column's number, from 0)"),
    (["--objectives", "0,-1"], "--objectives: objective -1 is negative (objectives are numbered from 0)"),
    (["--graphs", "no-such-gate"], "unknown gate"),
])
def test_bad_arguments_are_refused_before_any_record(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    argv = ["--engines", "host", "--graphs", "uspowergrid", "--out", str(out), "--allow-dirty", "--no-progress", *extra]
    assert sweep_cmd.cli(argv) == 2
    assert message in capsys.readouterr().err
    assert not (out / "sweep.json").exists()


def test_a_cuda_engine_without_a_gpu_is_exit_3_before_any_record(tmp_path, capsys):
    from engines.sssp import cuda

    if cuda.is_available():
        pytest.skip("this machine has a usable GPU")
    out = tmp_path / "out"
    assert sweep_cmd.cli(["--engines", "cuda:fused", "--graphs", "uspowergrid", "--out", str(out), "--allow-dirty",
                      "--no-progress"]) == 3
    assert "--engines host" in capsys.readouterr().err
    assert not (out / "sweep.json").exists()


def test_crossover_table_prints_missing_numbers():
    import io

    buffer = io.StringIO()
    sweep_cmd.print_crossover_table({"entries": [{"graph": "g", "locality": "local", "engine": "host", "objective": 0,
                                              "points": [{"size": 10, "ratio": None, "lo": float("nan"), "hi": 2.0}],
                                              "summary": "no measured size"}]}, file=buffer)
    assert "10: – [–, 2]" in buffer.getvalue()


def test_the_sweep_leaves_its_own_folder_out_of_the_tree_check(tmp_path, monkeypatch):
    """Without --allow-dirty, each campaign of a sweep checks the tree leaving out the whole sweep
    folder (sweep.json beside the campaigns is its record, not code): a sweep into results/sweep
    of a clean checkout must not refuse itself (it did on the device at eb027b6)."""
    import protocol.runner

    seen = []
    monkeypatch.setattr(protocol.runner, "git_state",
                        lambda **kw: seen.append(kw) or {"commit": "abc", "dirty": False})
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out = tmp_path / "out"
    argv = [a for a in _argv(graph, out, tmp_path / "cache") if a != "--allow-dirty"]
    argv[argv.index("--sizes") + 1: argv.index("--rounds")] = ["10"]
    assert sweep_cmd.cli(argv) == 0
    assert seen and all(kw == {"exclude": (out,)} for kw in seen), seen


def test_the_sweep_batches_facts_are_written_whole(monkeypatch, tmp_path, interrupted_write):
    """The facts beside the sweep's cached batches: damaged, they are drawn again, and their write
    replaces the file whole or not at all."""
    from bench import gates
    from bench.prepare import prepare_gate

    from .standin_checks import TINY

    monkeypatch.setitem(gates.GATES, "tiny", TINY)
    prepared = prepare_gate("tiny", data_dir=tmp_path, cache_dir=tmp_path / "c", progress=False)
    first, dropped = sweep.sweep_input(prepared, [10, 100], ["uniform"], cache_dir=tmp_path / "c")
    [facts] = (tmp_path / "c" / "sweep").glob("*.json")
    written = facts.read_text()
    assert json.loads(written) == {"batches": {n: b.facts for n, b in first.batches.items()}, "dropped": dropped}
    interrupted_write.of(facts)
    with pytest.raises(OSError, match="No space left on device"):
        sweep.sweep_input(prepared, [10, 100], ["uniform"], cache_dir=tmp_path / "c")
    interrupted_write.check_kept()


@pytest.mark.parametrize("mode, advice", [(["--report-only"], "run it again with --report-only"),
                                          ([], "continue with --resume")])
def test_a_failed_write_advises_what_can_help(tmp_path, capsys, monkeypatch, mode, advice):
    # --report-only measures nothing, so "continue with --resume" could not help it (a read-only
    # folder while rendering crossover.json)
    def refuse(args):
        raise PermissionError(13, "Permission denied", str(tmp_path / "crossover.json"))

    monkeypatch.setattr(sweep_cmd, "run_sweep", refuse)
    assert sweep_cmd.cli(mode + ["--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.rstrip().endswith(advice), err
    assert "cannot write the records" in err


def test_sizes_that_no_batch_of_the_graph_can_hold_are_exit_2_naming_the_graph(tmp_path, capsys):
    """Every size above the graph's edge count: each is dropped, so no batch is left to measure (it
    raised an IndexError in the runner, exit 1, with a traceback)."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "1M", "--rounds", "6", "--processes", "1",
            "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress", "--no-control",
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert sweep_cmd.cli(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    assert "--sizes: no batch can be drawn on tiny (600 edges)" in err and "1M: more changes than" in err
    assert not (tmp_path / "out" / "sweep.json").exists()  # no sweep the corrected run is refused over
    argv[argv.index("1M")] = "100"
    assert sweep_cmd.cli(argv) == 0  # neither --force nor --resume needed


def test_the_dropped_sizes_recorded_are_the_ones_asked_for_with_a_shared_cache(tmp_path):
    """Two sweeps keeping the same sizes but dropping different ones: the second recorded the first's
    dropped sizes, read back from the batch cache (its key had the kept sizes only)."""
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    for too_large, label in (("1M", 1_000_000), ("2M", 2_000_000)):
        out = tmp_path / too_large
        argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", too_large, "--localities", "local",
                "--rounds", "6", "--processes", "1", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
                "--no-control", "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
        assert sweep_cmd.cli(argv) == 0
        info = json.loads((out / "sweep.json").read_text())["graphs"]["tiny"]
        assert info["sizes"] == [10] and [d["size"] for d in info["dropped"]] == [label]


def test_force_with_sizes_refused_leaves_no_old_sweep_beside_deleted_campaigns(tmp_path, capsys):
    graph = _tiny_graph_file(tmp_path, n=120, m=300)
    out = tmp_path / "out"
    argv = ["--engines", "host", "--graph-file", str(graph), "--sizes", "10", "--localities", "local",
            "--rounds", "6", "--processes", "1", "--max-foreign-cpu", "64", "--allow-dirty", "--no-progress",
            "--no-control", "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert sweep_cmd.cli(argv) == 0
    argv[argv.index("10")] = "1M"
    assert sweep_cmd.cli([*argv, "--force"]) == 2  # --force replaces: the old campaigns go, and their sweep.json
    assert "--sizes: no batch can be drawn on tiny" in capsys.readouterr().err
    assert not (out / "sweep.json").exists() and not (out / "campaigns").exists()
