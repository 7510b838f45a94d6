"""The adaptive stop judged on the cell's interval (protocol/adaptive.py, docs/protocol.md §3).

The rule on hand-made intervals; then whole campaigns whose engine regions are seeded draws on a
virtual clock (helpers.VirtualSide), with their workers in this process, so that every number is a
pure function of the seed: a test fails only when the rule does, never by the machine's noise.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from protocol import adaptive
from protocol.adaptive import BUDGET_SPENT, MEASURING, PRECISE, judge, next_unit_target
from protocol.analysis import primary_interval
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.report import report_text
from protocol.runner import CampaignRunner
from protocol.stats import PairedRatio

from .helpers import VirtualClock, VirtualSide, host_config, small_graph_input

KEY = "toy/mixed/0"


# -- the rule -------------------------------------------------------------------------------------
def _ratio(lo, hi, median=1.0):
    return PairedRatio(median, lo, hi, pairs=10, resamples=2000, seed=0, processes=3)


BUDGET = dict(per_process=7, max_processes=12, max_pairs=84)


def test_precise_exactly_at_the_target():
    # (1.25 - 0.75) / 2 / 1.0 = 0.25 exactly in binary floating point
    at = judge(_ratio(0.75, 1.25), processes=3, pairs=21, precision=0.25, **BUDGET)
    assert at.state == PRECISE and at.half_width == 0.25 and at.next_target == 0 and not at.wants_more
    above = judge(_ratio(0.75, 1.25), processes=3, pairs=21, precision=0.2499, **BUDGET)
    assert above.state == MEASURING and above.wants_more and above.next_target == 7
    # the half-width is relative to the ratio: [1.5, 2.5] around 2 is +-25 %
    assert judge(_ratio(1.5, 2.5, 2.0), processes=3, pairs=21, precision=0.25, **BUDGET).state == PRECISE


def test_budget_spent_flags_the_width_reached():
    spent = judge(_ratio(0.9, 1.1), processes=12, pairs=84, precision=0.01, **BUDGET)
    assert spent.state == BUDGET_SPENT and spent.half_width == pytest.approx(0.1) and spent.next_target == 0
    record = spent.as_record()
    assert record["scope"] == "cell" and record["state"] == "budget_spent"
    assert record["half_width"] == pytest.approx(0.1) and record["precision"] == 0.01
    assert adaptive.imprecise(record) and not adaptive.imprecise(None)
    # precise at the last process allowed: not flagged
    assert not adaptive.imprecise(judge(_ratio(0.995, 1.005), processes=12, pairs=84, precision=0.01,
                                        **BUDGET).as_record())


def test_the_budget_of_processes_and_pairs():
    assert next_unit_target(processes=3, pairs=21, per_process=7, max_processes=4, max_pairs=84) == 7
    assert next_unit_target(processes=4, pairs=28, per_process=7, max_processes=4, max_pairs=84) == 0
    # --max-rounds leaves fewer pairs than a worker's share: the last worker measures what is left
    assert next_unit_target(processes=3, pairs=21, per_process=7, max_processes=12, max_pairs=24) == 3
    # ... but never fewer than 2
    assert next_unit_target(processes=3, pairs=21, per_process=7, max_processes=12, max_pairs=22) == 0


def test_no_interval_is_not_precise():
    nan = PairedRatio(math.nan, math.nan, math.nan, 0, 2000, 0)
    j = judge(nan, processes=3, pairs=0, precision=0.5, **BUDGET)
    assert j.state == MEASURING and j.half_width is None


def test_options_are_checked_and_recorded_only_with_the_cell_scope():
    with pytest.raises(UsageError, match="--adaptive-scope cell needs --adaptive"):
        host_config(adaptive_scope="cell")
    with pytest.raises(UsageError, match="--max-processes 4 needs --adaptive --adaptive-scope cell"):
        host_config(adaptive=True, max_processes=4)
    with pytest.raises(UsageError, match="below --processes"):
        host_config(rounds=9, processes=3, adaptive=True, adaptive_scope="cell", max_processes=2)
    with pytest.raises(UsageError, match="--min-processes 3 needs --adaptive --adaptive-scope cell"):
        host_config(adaptive=True, min_processes=3)
    with pytest.raises(UsageError, match="--min-processes 5 is above --max-processes 4"):
        host_config(rounds=9, processes=2, adaptive=True, adaptive_scope="cell", max_processes=4, min_processes=5)
    # the default never exceeds the budget of processes
    assert host_config(rounds=9, processes=1, adaptive=True, adaptive_scope="cell", max_processes=2).min_processes == 2
    assert "min_processes" not in host_config(adaptive=True).parameters()
    with pytest.raises(UsageError, match="--adaptive-scope 'both'"):
        host_config(adaptive=True, adaptive_scope="both")
    plain = host_config(adaptive=True).parameters()
    assert "adaptive_scope" not in plain and "max_processes" not in plain  # today's records unchanged
    cell = host_config(rounds=9, processes=3, adaptive=True, adaptive_scope="cell")
    assert cell.max_processes == 12 and cell.passes == 12
    assert cell.parameters()["adaptive_scope"] == "cell" and cell.parameters()["max_processes"] == 12
    assert host_config(rounds=9, processes=3, adaptive=True).passes == 3


# -- campaigns on a virtual clock -----------------------------------------------------------------
@pytest.fixture(scope="module")
def toy():
    return small_graph_input()


class CutSide(VirtualSide):
    """A VirtualSide that raises KeyboardInterrupt (Ctrl-C) at its ``cut_at``-th update, once."""

    def __init__(self, label, clock, rng, *, cut_at, **options):
        super().__init__(label, clock, rng, **options)
        object.__setattr__(self, "cut_at", cut_at)
        object.__setattr__(self, "calls", [0])

    def update(self, graph, batch, result, probe):
        self.calls[0] += 1
        if self.calls[0] == self.cut_at:
            raise KeyboardInterrupt
        return super().update(graph, batch, result, probe)


def _sides(clock, seed, sigma, cut_at=None):
    rng = np.random.default_rng(seed)
    a = (VirtualSide("host", clock, rng, sigma=sigma) if cut_at is None
         else CutSide("host", clock, rng, sigma=sigma, cut_at=cut_at))
    return a, VirtualSide("host-b", clock, rng, sigma=sigma)


def _cell_config(sides, **options):
    values = dict(sides=sides, rounds=6, processes=2, adaptive=True, adaptive_scope="cell", precision=0.015,
                  max_processes=12, max_rounds=200)
    values.update(options)
    return host_config(**values)


def _run(config, toy, out, *, resume=False):
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst, resume=resume, in_process=True).run([toy])
    return code, store


@pytest.fixture
def virtual(monkeypatch):
    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing reads the virtual clock
    return clock


def _half_width(rows, config, workers=None) -> float:
    """The cell's interval over the rows of its first ``workers`` workers, as the runner judges it."""
    if workers is not None:
        rows = rows[rows["process"] < workers]
    return primary_interval(rows, resamples=config.bootstrap_resamples, seed=config.seed).relative_half_width


def _measured(store):
    campaign = store.read_campaign()
    return campaign["cells"][KEY], store.read_summary()["cells"][0], store.read_rounds()


@pytest.mark.parametrize("seed", [0, 3])
def test_workers_are_added_until_the_cell_interval_reaches_the_precision(toy, tmp_path, virtual, seed):
    config = _cell_config(_sides(virtual, seed, sigma=0.02))
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK
    record, cell, rows = _measured(store)
    workers = len(record["workers"])
    assert 2 < workers < 12, "the precision should need added workers, and be reached before the budget"
    assert sorted(record["workers"], key=int) == [str(w) for w in range(workers)]
    assert all(u["status"] == "done" and u["target"] == 3 for u in record["workers"].values())
    assert cell["accepted"] == {"A": 3 * workers, "B": 3 * workers}
    judged = record["adaptive"]
    assert judged["state"] == PRECISE and judged["processes"] == workers and judged["pairs"] == 3 * workers
    # the judged interval is the cell's reported interval
    reported = (cell["ratio_hi"] - cell["ratio_lo"]) / 2 / cell["ratio"]
    assert judged["half_width"] == pytest.approx(reported, rel=1e-12) and reported <= config.precision
    # the stop is the first worker count whose interval reaches the precision
    for fewer in range(config.processes, workers):
        assert _half_width(rows, config, fewer) > config.precision, fewer
    assert cell["adaptive"] == judged and not cell["imprecise"] and not cell["noisy"]
    assert cell["processes"] == workers and cell["verdict"] == "no difference detected"


def test_the_budget_of_processes_is_spent_and_the_cell_flagged(toy, tmp_path, virtual):
    config = _cell_config(_sides(virtual, 0, sigma=0.02), precision=0.001, max_processes=4)
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK  # flagged, not failed
    record, cell, rows = _measured(store)
    assert len(record["workers"]) == 4 and cell["accepted"] == {"A": 12, "B": 12}
    judged = record["adaptive"]
    assert judged["state"] == BUDGET_SPENT and judged["processes"] == 4
    assert judged["half_width"] == pytest.approx(_half_width(rows, config)) and judged["half_width"] > 0.001
    assert cell["imprecise"] and cell["noisy"]
    assert not cell["regions"][cell["primary_region"]]["noisy"]  # noisy by the width, not the spread
    text = report_text(store)
    width = f"±{100 * judged['half_width']:.2f} %"
    assert f"noisy ({width} at the budget)" in text
    assert f"{KEY} ({width} against ±0.10 % after 4 processes and 12 pairs)" in text
    assert "at most 4 processes and 200 pairs" in text
    assert "No measured cell is noisy (every interquartile spread is at most 5 %)." in text


def test_the_budget_of_pairs_limits_the_last_worker(toy, tmp_path, virtual):
    # 6 pairs after the two workers; --max-rounds 8 leaves 2 for one more, then nothing
    config = _cell_config(_sides(virtual, 0, sigma=0.02), precision=0.001, max_rounds=8)
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK
    record, cell, _ = _measured(store)
    assert [record["workers"][w]["target"] for w in ("0", "1", "2")] == [3, 3, 2] and len(record["workers"]) == 3
    assert cell["accepted"] == {"A": 8, "B": 8} and record["adaptive"]["state"] == BUDGET_SPENT


def test_precise_after_the_first_workers_adds_none(toy, tmp_path, virtual):
    config = _cell_config(_sides(virtual, 0, sigma=0.02), precision=0.5, min_processes=2)
    code, store = _run(config, toy, tmp_path)
    record, cell, _ = _measured(store)
    assert code == ExitCode.OK and len(record["workers"]) == 2 and record["adaptive"]["state"] == PRECISE
    assert cell["accepted"] == {"A": 6, "B": 6}


def test_two_processes_are_not_enough_by_default(toy, tmp_path, virtual):
    # the same cell, precise after its two workers: the default --min-processes 3 adds a third
    config = _cell_config(_sides(virtual, 0, sigma=0.02), precision=0.5)
    assert config.min_processes == 3 and config.parameters()["min_processes"] == 3
    code, store = _run(config, toy, tmp_path)
    record, cell, rows = _measured(store)
    assert _half_width(rows, config, 2) <= config.precision  # precise already after two
    assert code == ExitCode.OK and len(record["workers"]) == 3
    judged = record["adaptive"]
    assert judged["state"] == PRECISE and judged["processes"] == 3 and judged["min_processes"] == 3
    assert cell["accepted"] == {"A": 9, "B": 9}
    text = report_text(store)
    assert "at least 3 processes" in text
    # the protocol row names the scope
    assert ("adaptive to ±50.00 % judged per cell (scope cell: the cell's interval over its processes, at least "
            "3 processes, at most 12 processes and 200 pairs)") in text


def test_the_minimum_of_processes_in_the_rule():
    narrow = _ratio(0.999, 1.001)
    early = judge(narrow, processes=2, pairs=14, precision=0.01, min_processes=3, **BUDGET)
    assert early.state == MEASURING and early.next_target == 7 and early.half_width == pytest.approx(0.001)
    assert judge(narrow, processes=3, pairs=21, precision=0.01, min_processes=3, **BUDGET).state == PRECISE
    # the pairs' budget spent before the minimum: flagged, with the (narrow) width reached
    spent = judge(narrow, processes=2, pairs=84, precision=0.01, min_processes=3, **BUDGET)
    assert spent.state == BUDGET_SPENT and adaptive.imprecise(spent.as_record())
    # a judgement recorded before the option reads back (judged from one process)
    old = {k: v for k, v in early.as_record().items() if k not in ("scope", "min_processes")}
    assert adaptive.Judgement(**old).min_processes == 1


def test_a_cut_adaptive_campaign_resumes_where_it_stopped(toy, tmp_path, virtual):
    whole = _cell_config(_sides(virtual, 3, sigma=0.02))
    _, store = _run(whole, toy, tmp_path / "whole")
    uncut_workers = len(store.read_campaign()["cells"][KEY]["workers"])
    assert uncut_workers >= 5  # uncut, the same seed adds workers 2, 3 and more
    # side A updates 6 times per worker (guard, 2 warm-up rounds, 3 pairs): call 23 is in worker 3's
    # second pair (B A: B's round recorded, A's cut), a worker the adaptive stop added
    cut = _cell_config(_sides(virtual, 3, sigma=0.02, cut_at=23))
    with pytest.raises(KeyboardInterrupt):
        _run(cut, toy, tmp_path / "cut")
    store = RecordStore(tmp_path / "cut")
    record = store.read_campaign()["cells"][KEY]
    assert record["status"] == "running" and record["workers"]["3"]["status"] == "running"
    assert record["adaptive"]["state"] == MEASURING and record["adaptive"]["processes"] == 3
    kept = len(store.read_rounds())

    code, store = _run(_cell_config(_sides(virtual, 5, sigma=0.02)), toy, tmp_path / "cut", resume=True)
    assert code == ExitCode.OK
    record, cell, rows = _measured(store)
    workers = len(record["workers"])
    assert len(rows) > kept
    # worker 3 was finished in the new session (its earlier rounds kept), workers 0-2 not run again
    assert {u: record["workers"][u]["session"] for u in ("0", "1", "2", "3")} == {"0": 0, "1": 0, "2": 0, "3": 1}
    assert set(rows[rows["process"] == 3]["session"]) == {0, 1}
    assert set(rows[rows["process"] < 3]["session"]) == {0}
    assert (rows["reject_reason"] == "pair interrupted").sum() == 1  # the cut pair's B round, not used
    judged = record["adaptive"]
    assert judged["state"] == PRECISE and judged["processes"] == workers
    assert judged["half_width"] == pytest.approx(_half_width(rows, whole)) and judged["half_width"] <= 0.015
    # worker 3's first pair, measured before the cut, is a process of its own for the statistics
    assert cell["processes"] == workers + 1
    for fewer in range(whole.processes, workers):
        assert _half_width(rows, whole, fewer) > whole.precision, fewer


def test_resume_refuses_another_scope(toy, tmp_path, virtual):
    config = _cell_config(_sides(virtual, 0, sigma=0.02), precision=0.5)
    _run(config, toy, tmp_path)
    process_scope = host_config(sides=config.sides, rounds=6, processes=2, adaptive=True, precision=0.5,
                                max_rounds=200)
    with pytest.raises(UsageError, match="adaptive_scope"):
        _run(process_scope, toy, tmp_path, resume=True)


def test_process_scope_keeps_judging_each_worker(toy, tmp_path, virtual):
    # --adaptive without --adaptive-scope: each worker goes on alone (precision unreachable: to its
    # share of --max-rounds), and no worker is added
    config = host_config(sides=_sides(virtual, 0, sigma=0.02), rounds=6, processes=2, adaptive=True,
                         precision=1e-6, max_rounds=10)
    code, store = _run(config, toy, tmp_path)
    record, cell, _ = _measured(store)
    assert code == ExitCode.OK and len(record["workers"]) == 2 and "adaptive" not in record
    assert cell["accepted"] == {"A": 10, "B": 10} and "imprecise" not in cell
    assert "adaptive to ±0.00 % judged per worker process (scope process: each worker's own pairs" in report_text(store)


def test_the_judged_interval_is_the_hierarchical_interval():
    # primary_interval: the hierarchical bootstrap of stats over the primary region's pairs and processes
    from protocol.analysis import REGIONS, paired_groups
    from protocol.stats import hierarchical_ratio

    rng = np.random.default_rng(4)
    rows = [dict(role=role, process=process, session=0, pair_index=pair, warmup=False, accepted=True,
                 engine_device_ms=None, engine_host_ms=float(rng.lognormal(0, 0.05)), update_host_ms=1.0)
            for process in range(3) for pair in range(5) for role in ("A", "B")]
    frame = pd.DataFrame(rows)
    ratio = primary_interval(frame, resamples=2000, seed=0)
    a, b, labels = paired_groups(frame, REGIONS["engine_host"])
    assert ratio == hierarchical_ratio(a, b, labels, resamples=2000, seed=0)
    assert ratio.processes == 3 and ratio.pairs == 15


# -- the command line -----------------------------------------------------------------------------
def _args(*argv):
    from bench import perf_ab

    return perf_ab.build_parser().parse_args(["engines", "--sides", "host,host", "--graphs", "uspowergrid", *argv])


def test_the_options_reach_the_config_and_the_reproduce_line(tmp_path):
    from bench.engines_cmd import _rebuild_argv, build_config

    args = _args("--adaptive", "--adaptive-scope", "cell", "--max-processes", "9", "--precision", "0.005",
                 "--min-processes", "4")
    config = build_config(args)
    assert config.cell_adaptive and config.max_processes == 9 and config.precision == 0.005
    assert config.min_processes == 4
    argv = _rebuild_argv(args, out=tmp_path)
    assert argv[argv.index("--min-processes") + 1] == "4"
    assert argv[argv.index("--adaptive-scope") + 1] == "cell" and argv[argv.index("--max-processes") + 1] == "9"
    plain = _args("--adaptive")
    assert build_config(plain).adaptive_scope == "process" and "--adaptive-scope" not in _rebuild_argv(plain)
    with pytest.raises(UsageError, match="needs --adaptive"):
        build_config(_args("--adaptive-scope", "cell"))
