"""The planted checks (protocol/planted_check.py, docs/protocol.md §7; issue 32 item 4): side A
against itself with a delay planted on role B, on the campaign's shortest and longest cell.

The campaigns run host sides on the virtual clock of ``helpers`` (seeded engine regions whose
length grows with the graph, the planted busy wait counted on the same clock): every interval is a
pure function of the seed, so detection, the choice of cells and its replay are the rules', never
the machine's. The real clock is never read by what the tests assert.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from protocol import planted_check, planted_delay
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.report import render_report
from protocol.runner import CONTROL_SUFFIX, CampaignRunner

from .helpers import VirtualClock, VirtualSide, host_config, small_graph_input

SUFFIX = planted_check.SUFFIX


class SizedSide(VirtualSide):
    """A virtual side whose engine region lasts ``ns_per_vertex`` x the graph's vertices x a seeded
    lognormal draw: the campaign's cells differ in length by their graphs."""

    def __init__(self, label, clock, rng, *, ns_per_vertex=2_000, sigma=0.01):
        super().__init__(label, clock, rng, sigma=sigma)
        object.__setattr__(self, "ns_per_vertex", ns_per_vertex)

    def update(self, graph, batch, result, probe):
        object.__setattr__(self, "base_ns", self.ns_per_vertex * int(graph.num_vertices))
        return super().update(graph, batch, result, probe)


@pytest.fixture(scope="module")
def graphs():
    # listed neither shortest first nor last: the choice must come from the medians, not the order
    return [small_graph_input(n=600, m=2400, name="mid"), small_graph_input(n=400, m=1600, name="small"),
            small_graph_input(n=900, m=3600, name="large")]


def _campaign(out, graphs, monkeypatch, *, seed=3, resume=False, in_process=None, input_loader=None, **options):
    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing
    monkeypatch.setattr(planted_delay, "time", clock)  # the planted busy wait, on the same clock
    rng = np.random.default_rng(seed)
    sides = (SizedSide("host", clock, rng), SizedSide("host-b", clock, rng))
    config = host_config(sides=sides, rounds=8, **options)
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst, resume=resume, in_process=in_process,
                              input_loader=input_loader).run(graphs)
    return code, store


def test_a_planted_five_percent_is_detected_on_the_shortest_and_longest_cell(tmp_path, monkeypatch, graphs):
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=5.0, control=True)
    assert code == ExitCode.OK
    campaign = store.read_campaign()
    assert campaign["parameters"]["planted_check"] == 5.0
    choice = campaign["planted_check"]
    assert choice["shortest"]["cell"] == "small/mixed/0" and choice["longest"]["cell"] == "large/mixed/0"
    assert choice["candidates"] == 3 and choice["rule"] == planted_check.RULE
    assert choice["shortest"]["median_ms"] < choice["longest"]["median_ms"]
    keys = list(campaign["cells"])
    # after every other cell, shortest first; recorded as checks with their percent
    assert keys[-2:] == ["small/mixed/0" + SUFFIX, "large/mixed/0" + SUFFIX]
    assert all(campaign["cells"][k]["planted_check"] == 5.0 for k in keys[-2:])
    rows = store.read_rounds()
    for key in keys[-2:]:
        mine = rows[rows["cell"] == key]
        assert set(mine["side"]) == {"host"}  # side A in both roles
        timed_b = mine[(mine["role"] == "B") & ~mine["warmup"]]
        warm_b = mine[(mine["role"] == "B") & mine["warmup"]]
        want = planted_delay.calibrated_delay_ns(float(warm_b["engine_host_ms"].median()), 5.0)
        assert want > 0 and (timed_b["planted_delay_ns"] == want).all()
        assert mine.loc[mine["role"] == "A", "planted_delay_ns"].isna().all()
    # the campaign's own cells carry no delay
    assert rows[~rows["cell"].str.endswith(SUFFIX)]["planted_delay_ns"].isna().all()
    summary = store.read_summary()
    assert [c["cell"] for c in summary["cells"]] == ["mid/mixed/0", "small/mixed/0", "large/mixed/0"]
    checks = summary["planted_checks"]
    assert [c["cell"] for c in checks] == keys[-2:]
    assert [c["chosen_as"] for c in checks] == [["shortest"], ["longest"]]
    assert [c["checks_cell"] for c in checks] == ["small/mixed/0", "large/mixed/0"]
    for c in checks:
        assert c["detected"] is True and c["ratio_lo"] > 1 and c["percent"] == 5.0
        assert c["planted_ratio"] == 1.05 and c["covers_planted"] == (c["ratio_lo"] <= 1.05 <= c["ratio_hi"])
        assert 1.03 < c["ratio"] < 1.07
    assert summary["proof"] == {"percent": 5.0, "passed": True, "checks": 2, "detected": 2,
                                "detail": "a planted 5 % detected in 2 of 2 checks"}
    text = render_report(store).read_text()
    assert "**Planted checks** (`--planted-check 5`" in text
    assert "The proof passed: a planted 5 % detected in 2 of 2 checks." in text
    table = [line for line in text.splitlines() if line.startswith("| `") and SUFFIX in line]
    assert [line.split("`")[1] for line in table] == keys[-2:]
    for line, c in zip(table, checks):
        assert f"{c['ratio']:.3f} [{c['ratio_lo']:.3f}, {c['ratio_hi']:.3f}]" in line
        assert "| detected |" in line and c["chosen_as"][0] in line and "| 5 % |" in line
    assert "PROOF FAILED" not in text


def test_a_zero_percent_check_detects_nothing(tmp_path, monkeypatch, graphs):
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=0.0)
    assert code == ExitCode.OK
    summary = store.read_summary()
    checks = summary["planted_checks"]
    assert len(checks) == 2
    for c in checks:
        assert c["detected"] is False and c["ratio_lo"] <= 1 <= c["ratio_hi"]
        assert c["covers_planted"] is True  # 1 + 0 / 100
    rows = store.read_rounds()
    timed_b = rows[rows["cell"].str.endswith(SUFFIX) & (rows["role"] == "B") & ~rows["warmup"]]
    assert (timed_b["planted_delay_ns"] == 0).all()  # calibrated to nothing
    assert summary["proof"]["passed"] is True
    assert summary["proof"]["detail"] == "no difference detected without a plant (0 %)"


def test_a_missed_detection_fails_the_proof_not_the_exit_status(tmp_path, monkeypatch, graphs):
    # a 0.2 % plant on regions of 1 % noise: never resolved by 8 pairs
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=0.2)
    assert code == ExitCode.OK  # the A/B cells are as trustworthy as without the check
    summary = store.read_summary()
    assert [c["detected"] for c in summary["planted_checks"]] == [False, False]
    proof = summary["proof"]
    assert proof["passed"] is False and "missed in 2 of 2 checks" in proof["detail"]
    text = render_report(store).read_text()
    assert "**PROOF FAILED: a planted 0.2 % missed in 2 of 2 checks" in text
    assert "> **Planted checks: PROOF FAILED** — a planted 0.2 % missed" in text  # in the first lines too
    assert text.index("PROOF FAILED") < text.index("## 1. Environment")
    assert text.count("| missed |") == 2


def test_the_choice_is_recorded_before_the_checks_and_replayed_on_resume(tmp_path, monkeypatch, graphs):
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=5.0)
    campaign = store.read_campaign()
    first = campaign["planted_check"]
    assert first["shortest"]["cell"] == "small/mixed/0"
    # cut the campaign after the choice, before its checks ran; the recorded choice is edited to
    # name another shortest cell, so that a resume that chose again would be seen
    for key in ("small/mixed/0" + SUFFIX, first["longest"]["check"]):
        del campaign["cells"][key]
        store.cell_rounds(key).path.unlink()
    swapped = dict(first, shortest=dict(first["shortest"], cell="mid/mixed/0", check="mid/mixed/0" + SUFFIX,
                                        graph="mid"))
    campaign["planted_check"] = swapped
    store.write_campaign(campaign)
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=5.0, resume=True)
    assert code == ExitCode.OK
    campaign = store.read_campaign()
    assert campaign["planted_check"] == swapped  # replayed, not chosen again
    checks = [k for k, c in campaign["cells"].items() if c.get("planted_check") is not None]
    assert checks == ["mid/mixed/0" + SUFFIX, "large/mixed/0" + SUFFIX]
    assert all(campaign["cells"][k]["status"] == "done" for k in checks)
    assert {r["session"] for r in store.cell_rounds(checks[0]).rows} == {1}
    assert [c["chosen_as"] for c in store.read_summary()["planted_checks"]] == [["shortest"], ["longest"]]
    assert len(campaign["sessions"]) == 2


def test_nothing_is_chosen_until_every_cell_has_finished(tmp_path, monkeypatch, graphs):
    code, store = _campaign(tmp_path, graphs[:2], monkeypatch, planted_check=5.0)
    campaign = store.read_campaign()
    # the campaign as a cut one leaves it: a cell still running, no check chosen or run
    for key in list(campaign["cells"]):
        if key.endswith(SUFFIX):
            del campaign["cells"][key]
    del campaign["planted_check"]
    campaign["cells"]["small/mixed/0"]["status"] = "running"
    store.write_campaign(campaign)
    from protocol.runner import _CellPlan, _GraphPlan

    with Instruments.open(gpu=False) as inst:
        runner = CampaignRunner(host_config(planted_check=5.0), store, inst)
        runner.campaign = campaign
        plans = [_GraphPlan(None, [_CellPlan("mid/mixed/0", "mid", "mixed", 0),
                                   _CellPlan("small/mixed/0", "small", "mixed", 0)])]
        assert runner._choose_planted(plans) is None
        campaign["cells"]["small/mixed/0"]["status"] = "too_noisy"  # terminal, not done: not a candidate
        choice = runner._choose_planted(plans)
    assert choice["candidates"] == 1 and choice["shortest"]["cell"] == choice["longest"]["cell"] == "mid/mixed/0"
    assert planted_check.check_cells(choice) == [{"cell": "mid/mixed/0" + SUFFIX, "checks": "mid/mixed/0",
                                                  "graph": "mid", "batch": "mixed", "objective": 0,
                                                  "chosen_as": ["shortest", "longest"]}]


def test_the_option_off_changes_nothing_in_the_records(tmp_path, monkeypatch, graphs):
    code, store = _campaign(tmp_path, graphs, monkeypatch, control=True)
    campaign = store.read_campaign()
    assert "planted_check" not in campaign["parameters"] and "planted_check" not in campaign
    assert not [k for k in campaign["cells"] if k.endswith(SUFFIX)]
    assert list(campaign["cells"]) == ["mid/mixed/0" + CONTROL_SUFFIX, "mid/mixed/0", "small/mixed/0",
                                       "large/mixed/0"]
    assert all("planted_check" not in c for c in campaign["cells"].values())
    summary = store.read_summary()
    assert set(summary) == {"schema_version", "campaign_id", "sides", "bootstrap", "cells", "control", "trust",
                            "records_sha256"}
    assert host_config(control=True).parameters() == host_config(control=True, planted_check=None).parameters()
    assert "Planted checks" not in render_report(store).read_text()


def test_every_worker_measures_its_share_of_a_check(tmp_path, monkeypatch, graphs):
    # two workers (in this process, so that the virtual clock holds): one pass over the checks each
    code, store = _campaign(tmp_path, graphs[:2], monkeypatch, planted_check=5.0, processes=2, in_process=True)
    assert code == ExitCode.OK
    campaign = store.read_campaign()
    rows = store.read_rounds()
    for key in ("small/mixed/0" + SUFFIX, "mid/mixed/0" + SUFFIX):
        cell = campaign["cells"][key]
        assert cell["status"] == "done" and sorted(cell["workers"]) == ["0", "1"]
        assert cell["accepted_pairs"] == 8
        mine = rows[(rows["cell"] == key) & ~rows["warmup"]]
        assert sorted(set(mine["process"])) == [0, 1]
        assert (mine.loc[mine["role"] == "B", "planted_delay_ns"] > 0).all()  # calibrated in each worker
    assert [c["processes"] for c in store.read_summary()["planted_checks"]] == [2, 2]


def _counting_loader(graphs):
    """An input loader over ``graphs`` by name, and the list of the names it was asked for."""
    loaded = []
    by_name = {g.name: g for g in graphs}

    def loader(name):
        loaded.append(name)
        return by_name[name]

    return loaded, loader


def test_after_the_last_pass_a_check_reads_its_graph_through_the_loader(tmp_path, monkeypatch, graphs):
    # the passes drop their inputs (one graph in memory at a time); the checks read theirs again
    loaded, loader = _counting_loader(graphs)
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=5.0, input_loader=loader)
    assert code == ExitCode.OK
    assert loaded == ["small", "large"]  # the in-process passes held their inputs; the checks loaded
    assert [c["detected"] for c in store.read_summary()["planted_checks"]] == [True, True]


def test_with_the_cells_adaptive_stop_the_checks_are_chosen_recorded_and_detected_as_without_it(
        tmp_path, monkeypatch, graphs):
    # --adaptive --adaptive-scope cell adds workers to the campaign's cells (3 at least by default:
    # every cell here gets more than --processes); the checks run after them, on --processes workers
    # of their own with no worker added (docs/protocol.md §7), chosen from every worker's rounds
    options = dict(planted_check=5.0, control=True, processes=2, in_process=True)
    _, plain = _campaign(tmp_path / "plain", graphs, monkeypatch, **options)
    code, store = _campaign(tmp_path / "cell", graphs, monkeypatch, adaptive=True, adaptive_scope="cell",
                            precision=0.005, max_processes=4, **options)
    assert code == ExitCode.OK
    campaign, before = store.read_campaign(), plain.read_campaign()
    assert campaign["parameters"]["adaptive_scope"] == "cell" and campaign["parameters"]["planted_check"] == 5.0
    own = ["mid/mixed/0", "small/mixed/0", "large/mixed/0"]
    assert all(sorted(campaign["cells"][k]["workers"], key=int) == ["0", "1", "2", "3"] for k in own)
    assert all(campaign["cells"][k]["adaptive"]["processes"] == 4 for k in own)
    # the same cells chosen, by the same rule, over the rounds of all four workers of each cell
    choice = campaign["planted_check"]
    assert {r: choice[r]["cell"] for r in planted_check.ROLES} == {r: before["planted_check"][r]["cell"]
                                                                   for r in planted_check.ROLES}
    assert (choice["shortest"]["cell"], choice["longest"]["cell"]) == ("small/mixed/0", "large/mixed/0")
    assert choice["candidates"] == 3 and choice["rule"] == planted_check.RULE
    rows = store.read_rounds()
    for role in planted_check.ROLES:
        mine = rows[(rows["cell"] == choice[role]["cell"]) & (rows["role"] == "A") & rows["accepted"]
                    & ~rows["warmup"]]
        assert sorted(set(mine["process"])) == [0, 1, 2, 3]
        assert choice[role]["median_ms"] == pytest.approx(float(mine["engine_host_ms"].median()))
    # recorded as without the adaptive stop: last, shortest first, two workers each, no judgement
    keys = list(campaign["cells"])
    checks = ["small/mixed/0" + SUFFIX, "large/mixed/0" + SUFFIX]
    assert keys[-2:] == checks and list(before["cells"])[-2:] == checks
    for key in checks:
        cell = campaign["cells"][key]
        assert set(cell) == set(before["cells"][key])  # no "adaptive" entry: no worker is added to a check
        assert cell["status"] == "done" and cell["planted_check"] == 5.0
        assert sorted(cell["workers"]) == ["0", "1"] and cell["accepted_pairs"] == 8
        mine = rows[rows["cell"] == key]
        assert set(mine["side"]) == {"host"} and sorted(set(mine["process"])) == [0, 1]
        assert (mine.loc[(mine["role"] == "B") & ~mine["warmup"], "planted_delay_ns"] > 0).all()
        assert mine.loc[mine["role"] == "A", "planted_delay_ns"].isna().all()
    assert rows[~rows["cell"].str.endswith(SUFFIX)]["planted_delay_ns"].isna().all()
    # detected, in the summary and the report
    summary = store.read_summary()
    assert [c["cell"] for c in summary["cells"]] == own
    found = summary["planted_checks"]
    assert [c["cell"] for c in found] == checks and [c["chosen_as"] for c in found] == [["shortest"], ["longest"]]
    for c in found:
        assert c["detected"] is True and c["ratio_lo"] > 1 and c["processes"] == 2
        assert "adaptive" not in c and "imprecise" not in c
    assert summary["proof"] == {"percent": 5.0, "passed": True, "checks": 2, "detected": 2,
                                "detail": "a planted 5 % detected in 2 of 2 checks"}
    text = render_report(store).read_text()
    assert "The proof passed: a planted 5 % detected in 2 of 2 checks." in text and "PROOF FAILED" not in text
    table = [line for line in text.splitlines() if line.startswith("| `") and SUFFIX in line]
    assert [line.split("`")[1] for line in table] == checks
    assert all("| detected |" in line for line in table)
    assert not [line for line in text.splitlines() if "adaptive stop's budget" in line and SUFFIX in line]


def test_the_rule_of_detection():
    def judged(lo, hi, status="done", percent=1.0):
        return planted_check.judge({"status": status, "ratio_lo": lo, "ratio_hi": hi}, percent)

    assert judged(1.001, 1.02) == {"percent": 1.0, "planted_ratio": 1.01, "detected": True, "covers_planted": True}
    assert judged(1.0, 1.02)["detected"] is False  # a bound of exactly 1 does not exclude it
    assert judged(0.99, 1.02)["detected"] is False
    assert judged(1.02, 1.04) == {"percent": 1.0, "planted_ratio": 1.01, "detected": True, "covers_planted": False}
    assert judged(1.0, 1.02, status="too_noisy")["detected"] is None
    one = {"cell": "g/b/0" + SUFFIX}
    assert planted_check.proof([dict(one, detected=True)], 1.0, {})["passed"] is True
    assert planted_check.proof([dict(one, detected=True), dict(one, detected=False)], 1.0, {})["passed"] is False
    assert planted_check.proof([dict(one, detected=None)], 1.0, {})["detail"] == "g/b/0/planted-check did not measure"
    assert planted_check.proof([dict(one, detected=True)], 0.0, {})["passed"] is False
    assert "--resume" in planted_check.proof([], 1.0, None)["detail"]
    assert planted_check.choose([], 1.0) is None
    # ties by key; the order given does not matter
    tied = [{"cell": k, "graph": "g", "batch": "b", "objective": 0, "median_ms": 2.0} for k in ("z", "a", "m")]
    choice = planted_check.choose(tied, 1.0)
    assert (choice["shortest"]["cell"], choice["longest"]["cell"]) == ("a", "z")
    assert planted_check.choose(list(reversed(tied)), 1.0) == choice


def test_the_option_is_checked_and_wired(tmp_path):
    from bench import perf_ab
    from bench.engines_cmd import _rebuild_argv, build_config

    with pytest.raises(UsageError, match=r"--planted-check 101: the percentage must be in \[0, 100\]"):
        host_config(planted_check=101.0)
    with pytest.raises(UsageError, match="--planted-check and --plant-delay"):
        host_config(planted_check=1.0, planted_delay={"side": "B", "label": "host", "percent": 3.0})
    parse = perf_ab.build_parser().parse_args
    args = parse(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--planted-check", "1"])
    config = build_config(args)
    assert config.planted_check == 1.0 and config.parameters()["planted_check"] == 1.0
    argv = _rebuild_argv(args, out=tmp_path)
    assert argv[argv.index("--planted-check") + 1] == "1"
    plain = parse(["engines", "--sides", "host,host", "--graphs", "uspowergrid"])
    assert build_config(plain).planted_check is None and "--planted-check" not in _rebuild_argv(plain)
    assert "planted_check" not in build_config(plain).parameters()
    json.dumps(config.parameters())


def test_the_command_records_reports_and_prints_the_checks(tmp_path, monkeypatch, capsys):
    """perf_ab.py engines --planted-check end to end (one process, on the virtual clock: the host
    sides' regions last a few virtual nanoseconds, so only what the command says is asserted, not
    whether it detected)."""
    import protocol.region
    from bench import perf_ab

    from .helpers import write_small_edge_list

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)
    monkeypatch.setattr(planted_delay, "time", clock)
    graph = write_small_edge_list(tmp_path / "small.edges", 8)
    out = tmp_path / "records"
    code = perf_ab.main(["engines", "--sides", "host,host", "--batches", "local10k", "unsafe50k", "--objectives", "0",
                         "--rounds", "5", "--processes", "1", "--max-foreign-cpu", "1000", "--allow-dirty",
                         "--no-progress", "--no-control", "--planted-check", "5", "--graph-file", str(graph),
                         "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "planted checks (5 %): " in err
    store = RecordStore(out)
    campaign = store.read_campaign()
    assert campaign["parameters"]["planted_check"] == 5.0 and "--planted-check 5" in campaign["reproduce"]
    checks = [k for k in campaign["cells"] if k.endswith(SUFFIX)]
    assert 1 <= len(checks) <= 2 and all(campaign["cells"][k]["status"] == "done" for k in checks)
    report = (out / "M7.md").read_text()
    assert "**Planted checks** (`--planted-check 5`" in report
    assert f"| `{checks[0]}` |" in report


def test_an_adaptive_stop_before_the_last_pass_also_drops_the_inputs(tmp_path, monkeypatch, graphs):
    # --adaptive-scope cell: every cell is precise after --min-processes workers, so the loop of
    # passes ends long before --max-processes; the inputs are dropped then as after a last pass, and
    # the checks read theirs again through the loader (before: every graph stayed in memory)
    loaded, loader = _counting_loader(graphs)
    code, store = _campaign(tmp_path, graphs, monkeypatch, planted_check=5.0, input_loader=loader,
                            adaptive=True, adaptive_scope="cell", precision=0.5, max_processes=8, in_process=True)
    assert code == ExitCode.OK
    campaign = store.read_campaign()
    own = ["mid/mixed/0", "small/mixed/0", "large/mixed/0"]
    assert all(campaign["cells"][k]["adaptive"]["state"] == "precise" for k in own)
    assert all(len(campaign["cells"][k]["workers"]) < 8 for k in own)  # stopped early
    assert loaded == ["small", "large"]
    assert [c["detected"] for c in store.read_summary()["planted_checks"]] == [True, True]
