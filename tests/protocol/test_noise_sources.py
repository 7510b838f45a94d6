"""Issue 32 item 2: the options that remove or randomize a source of noise (docs/protocol.md §2.5).

The allocation order per worker process (``--alloc-order``): recorded per worker and round,
replayed on resume. The L2 flush (``--l2-flush``): before every round of a device side, never
inside its timers, a no-op recorded on a host side. The rounds discarded after an SM clock change
(``--discard-after-clock-change``), on scripted clock readings. Campaigns of host sides, their workers in this
process, so that every order is a pure function of the seed and the records; the sides log what
they allocate, and timed sides run on a virtual clock (helpers.VirtualSide), so no test reads the
machine's time.
"""

from __future__ import annotations

import json

import pytest

import numpy as np

from protocol import l2flush, placement
from protocol.cell import CLOCK_SETTLING
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner
from protocol.sides import Side

from .helpers import VirtualClock, VirtualSide, host_config, small_graph_input

KEY = "toy/mixed/0"


@pytest.fixture(scope="module")
def toy():
    return small_graph_input()


class LoggingSide(Side):
    """The host reference, logging (label, what) to a shared list when it makes a result and when
    it updates; raises KeyboardInterrupt (Ctrl-C) at its ``cut_at``-th update."""

    def __init__(self, label, log, cut_at=None):
        super().__init__(label, "host")
        object.__setattr__(self, "log", log)
        object.__setattr__(self, "cut_at", cut_at)
        object.__setattr__(self, "calls", [0])

    def make_result(self, graph, source, objective, distances, parents):
        self.log.append((self.label, "make"))
        return super().make_result(graph, source, objective, distances, parents)

    def update(self, graph, batch, result, probe):
        self.calls[0] += 1
        if self.calls[0] == self.cut_at:
            raise KeyboardInterrupt
        self.log.append((self.label, "update"))
        return super().update(graph, batch, result, probe)


def _run(config, toy, out, *, resume=False):
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst, resume=resume, in_process=True).run([toy])
    return code, store


def _first_allocations(log):
    """Per unit (in the order they ran), the labels in the order they made their results."""
    makes = [label for label, what in log if what == "make"]
    return [tuple(makes[i:i + 2]) for i in range(0, len(makes), 2)]


# -- the allocation order --------------------------------------------------------------------------
def test_process_order_rules():
    assert placement.process_order("fixed", 0, 5) is None
    assert [placement.process_order("alternate", 9, w) for w in range(4)] == ["AB", "BA", "AB", "BA"]
    drawn = [placement.process_order("random", 0, w) for w in range(64)]
    assert set(drawn) == {"AB", "BA"}  # both orders occur
    assert drawn == [placement.process_order("random", 0, w) for w in range(64)]  # seeded
    assert drawn != [placement.process_order("random", 1, w) for w in range(64)]  # the seed matters
    assert placement.roles(None) == ("A", "B") and placement.roles("BA") == ("B", "A")
    with pytest.raises(UsageError, match="--alloc-order 'reversed'"):
        host_config(alloc_order="reversed")


def test_fixed_is_the_default_and_records_nothing(toy, tmp_path):
    log = []
    config = host_config(sides=(LoggingSide("host", log), LoggingSide("host-b", log)), rounds=6, processes=2)
    assert "alloc_order" not in config.parameters()  # the records of campaigns before the option
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK
    assert _first_allocations(log) == [("host", "host-b")] * 2
    assert store.read_rounds()["alloc_order"].isna().all()
    assert all("alloc_order" not in u for u in store.read_campaign()["cells"][KEY]["workers"].values())


def test_alternate_allocates_b_first_in_odd_workers_and_records_it(toy, tmp_path):
    log = []
    config = host_config(sides=(LoggingSide("host", log), LoggingSide("host-b", log)), rounds=6, processes=3,
                         alloc_order="alternate")
    assert config.parameters()["alloc_order"] == "alternate"
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK
    assert _first_allocations(log) == [("host", "host-b"), ("host-b", "host"), ("host", "host-b")]
    # the guard (each side's first update, which allocates its workspace) follows the same order
    first_updates, makes = [], 0
    for label, what in log:
        if what == "make":
            makes += 1
            if makes % 2:
                first_updates.append([])
        elif len(first_updates[-1]) < 2:
            first_updates[-1].append(label)
    assert first_updates == [["host", "host-b"], ["host-b", "host"], ["host", "host-b"]]
    rows = store.read_rounds()
    assert {w: set(rows[rows["process"] == w]["alloc_order"]) for w in range(3)} == {0: {"AB"}, 1: {"BA"}, 2: {"AB"}}
    workers = store.read_campaign()["cells"][KEY]["workers"]
    assert [workers[w]["alloc_order"] for w in ("0", "1", "2")] == ["AB", "BA", "AB"]
    # the roles keep their meaning: side A's rows are host's whatever allocated first
    assert set(rows[rows["role"] == "A"]["side"]) == {"host"}


def test_random_orders_are_recorded_and_replayed_on_resume(toy, tmp_path):
    seed = next(s for s in range(100) if [placement.process_order("random", s, w) for w in range(2)] == ["AB", "AB"])
    log = []
    # side A updates 1 (guard) + 2 (warm-up) + 3 (pairs) times per worker: call 9 is in worker 1's pairs
    sides = (LoggingSide("host", log, cut_at=9), LoggingSide("host-b", log))
    config = host_config(sides=sides, rounds=6, processes=2, alloc_order="random", seed=seed)
    with pytest.raises(KeyboardInterrupt):
        _run(config, toy, tmp_path)
    store = RecordStore(tmp_path)
    campaign = store.read_campaign()
    unit = campaign["cells"][KEY]["workers"]["1"]
    assert unit["status"] == "running" and unit["alloc_order"] == "AB"
    # the record, not the seed, decides a resumed worker's order: edit it, and the resume follows
    unit["alloc_order"] = "BA"
    (tmp_path / "campaign.json").write_text(json.dumps(campaign))
    log.clear()
    resumed = host_config(sides=(LoggingSide("host", log), LoggingSide("host-b", log)), rounds=6, processes=2,
                          alloc_order="random", seed=seed)
    code, store = _run(resumed, toy, tmp_path, resume=True)
    assert code == ExitCode.OK
    assert _first_allocations(log) == [("host-b", "host")]  # only worker 1 ran again, B first
    rows = store.read_rounds()
    assert set(rows[(rows["process"] == 1) & (rows["session"] == 1)]["alloc_order"]) == {"BA"}
    assert set(rows[(rows["process"] == 1) & (rows["session"] == 0)]["alloc_order"]) == {"AB"}
    assert set(rows[rows["process"] == 0]["alloc_order"]) == {"AB"}
    assert store.read_campaign()["cells"][KEY]["workers"]["1"]["alloc_order"] == "BA"


# -- the L2 flush ---------------------------------------------------------------------------------
@pytest.fixture
def virtual(monkeypatch):
    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing reads the virtual clock
    return clock


FLUSH_NS = 50_000_000  # a flush "takes" 50 virtual ms: 50 times a round, unmissable inside a timer


@pytest.fixture
def fake_device(monkeypatch, virtual):
    """Side "host-b" counts as a device side; its flush advances the virtual clock by FLUSH_NS."""
    flushes = []

    def device_flush():
        virtual.now_ns += FLUSH_NS
        flushes.append(virtual.now_ns)
        return 123

    monkeypatch.setattr(l2flush, "is_device_side", lambda side: side.label == "host-b")
    monkeypatch.setattr(l2flush, "device_flush", device_flush)
    return flushes


def _virtual_sides(clock):
    rng = np.random.default_rng(0)
    return VirtualSide("host", clock, rng, sigma=0.01), VirtualSide("host-b", clock, rng, sigma=0.01)


def test_l2_flush_runs_before_every_device_round_outside_the_timers(toy, tmp_path, virtual, fake_device):
    config = host_config(sides=_virtual_sides(virtual), rounds=6, processes=2, l2_flush=True)
    assert config.parameters()["l2_flush"] is True
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK
    rows = store.read_rounds()
    b, a = rows[rows["role"] == "B"], rows[rows["role"] == "A"]
    assert len(fake_device) == len(b)  # every round of the device side, warm-up included; none else
    assert set(b["l2_flush"]) == {"flushed 123 bytes"} and set(a["l2_flush"]) == {l2flush.HOST_NOOP}
    # the flush's 50 ms are in no timer: every region is the side's own ~1 ms draw
    for column in ("engine_host_ms", "update_host_ms"):
        assert rows[column].max() < 1.2, column
    cell = store.read_summary()["cells"][0]
    assert 0.95 < cell["ratio"] < 1.05


def test_without_the_option_nothing_is_flushed_or_recorded(toy, tmp_path, virtual, fake_device):
    config = host_config(sides=_virtual_sides(virtual), rounds=6, processes=2)
    assert "l2_flush" not in config.parameters()
    code, store = _run(config, toy, tmp_path)
    assert code == ExitCode.OK and fake_device == []
    assert store.read_rounds()["l2_flush"].isna().all()


def test_host_sides_are_a_recorded_no_op(toy, tmp_path, monkeypatch):
    monkeypatch.setattr(l2flush, "device_flush", lambda: pytest.fail("a host side must not touch the device"))
    code, store = _run(host_config(rounds=5, l2_flush=True), toy, tmp_path)
    assert code == ExitCode.OK and set(store.read_rounds()["l2_flush"]) == {l2flush.HOST_NOOP}


def test_the_flush_writes_twice_the_l2():
    assert l2flush.flush_bytes(50 * 2**20) == 100 * 2**20
    assert l2flush.flush_bytes(0) == 2**20  # an unknown size still writes something


# -- rounds discarded after a clock change ---------------------------------------------------------
def _run_with_clocks(config, toy, out, clocks):
    """A campaign whose rounds' median SM clocks are ``clocks(n)`` for the n-th round (from 1)."""
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        real_end = inst.end_round
        calls = [0]

        def end_round(window):
            fields, reason = real_end(window)
            calls[0] += 1
            fields["sm_clock_median_mhz"] = clocks(calls[0])
            fields["sm_clock_min_mhz"] = clocks(calls[0])
            return fields, reason

        inst.end_round = end_round
        code = CampaignRunner(config, store, inst, in_process=True).run([toy])
    return code, store


def _step_at(n_change, before=1980.0, after=1755.0):
    return lambda n: before if n < n_change else after


@pytest.mark.parametrize("discard,discarded_rounds,discarded_pairs", [(2, 2, 1), (3, 3, 2)])
def test_rounds_after_a_clock_change_are_discarded_and_counted(toy, tmp_path, discard, discarded_rounds,
                                                               discarded_pairs):
    # rounds 1-4 warm up (2 per side), 5-6 the first pair; the clock drops at round 7, the first of
    # the second pair: rounds 7 .. 6 + discard are discarded, their pairs repeated
    config = host_config(rounds=5, discard_after_clock_change=discard)
    code, store = _run_with_clocks(config, toy, tmp_path, _step_at(7))
    assert code == ExitCode.OK
    rows = store.read_rounds()
    timed = rows[~rows["warmup"]].sort_values("sequence")
    reasons = timed["reject_reason"].fillna("")
    settled = timed[reasons.str.startswith(CLOCK_SETTLING)]
    assert len(settled) == discarded_rounds
    assert list(settled["sequence"]) == list(range(6, 6 + discarded_rounds))  # sequence counts from 0
    assert settled["reject_reason"].iloc[0] == f"{CLOCK_SETTLING} (SM 1980 -> 1755 MHz): round 1 of {discard} discarded"
    record = store.read_campaign()["cells"][KEY]
    assert record["clock_discarded_pairs"] == discarded_pairs == record["workers"]["0"]["clock_discarded_pairs"]
    assert record["rejected_pairs"] == discarded_pairs and record["accepted_pairs"] == 5
    # after the discarded rounds every round is accepted again (the clock stays at its new value)
    assert timed[timed["sequence"] >= 6 + 2 * discarded_pairs]["accepted"].all()


def test_a_change_during_the_warm_up_is_settled_there(toy, tmp_path):
    # the change at round 2 (warm-up): rounds 2 and 3 are the discarded ones, both untimed anyway
    config = host_config(rounds=5, discard_after_clock_change=2)
    code, store = _run_with_clocks(config, toy, tmp_path, _step_at(2))
    rows = store.read_rounds()
    assert code == ExitCode.OK and rows[~rows["warmup"]]["accepted"].all()
    assert store.read_campaign()["cells"][KEY]["clock_discarded_pairs"] == 0


def test_without_the_option_a_clock_change_rejects_nothing(toy, tmp_path):
    config = host_config(rounds=5)
    assert "discard_after_clock_change" not in config.parameters()
    assert host_config(discard_after_clock_change=2).parameters()["discard_after_clock_change"] == 2
    code, store = _run_with_clocks(config, toy, tmp_path, _step_at(7))
    rows = store.read_rounds()
    assert code == ExitCode.OK and rows[~rows["warmup"]]["accepted"].all()
    assert "clock_discarded_pairs" not in store.read_campaign()["cells"][KEY]
    with pytest.raises(UsageError, match="--discard-after-clock-change -1"):
        host_config(discard_after_clock_change=-1)


def test_unknown_clocks_discard_nothing(toy, tmp_path):
    code, store = _run_with_clocks(host_config(rounds=5, discard_after_clock_change=3), toy, tmp_path,
                                   lambda n: None)
    rows = store.read_rounds()
    assert code == ExitCode.OK and rows[~rows["warmup"]]["accepted"].all()


# -- the report ------------------------------------------------------------------------------------
def test_the_protocol_row_names_the_options_used(toy, tmp_path):
    from protocol.report import report_text

    config = host_config(rounds=6, processes=2, alloc_order="alternate", l2_flush=True, discard_after_clock_change=2)
    code, store = _run(config, toy, tmp_path / "on")
    row = next(line for line in report_text(store).splitlines() if line.startswith("| protocol |"))
    assert code == ExitCode.OK
    assert ("allocation order alternate per worker, L2 flushed before every CUDA round, 2 rounds discarded "
            "from each SM clock change") in row
    _, store = _run(host_config(rounds=6, processes=2), toy, tmp_path / "off")
    row = next(line for line in report_text(store).splitlines() if line.startswith("| protocol |"))
    assert "allocation order" not in row and "L2" not in row and "discarded" not in row


# -- the command line ------------------------------------------------------------------------------
def _args(*argv):
    from bench import perf_ab

    return perf_ab.build_parser().parse_args(["engines", "--sides", "host,host", "--graphs", "uspowergrid", *argv])


def test_the_options_reach_the_config_and_the_reproduce_line(tmp_path):
    from bench.engines_cmd import _rebuild_argv, build_config

    args = _args("--alloc-order", "random", "--l2-flush", "--discard-after-clock-change", "2")
    config = build_config(args)
    assert config.alloc_order == "random" and config.l2_flush and config.discard_after_clock_change == 2
    argv = _rebuild_argv(args, out=tmp_path)
    assert argv[argv.index("--alloc-order") + 1] == "random" and "--l2-flush" in argv
    assert argv[argv.index("--discard-after-clock-change") + 1] == "2"
    plain = _args()
    config = build_config(plain)
    assert config.alloc_order == "fixed" and not config.l2_flush
    assert config.discard_after_clock_change == 0
    assert not {"--alloc-order", "--l2-flush", "--discard-after-clock-change"} & set(_rebuild_argv(plain))
