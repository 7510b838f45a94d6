"""The one timed update (issue 30, item 3): protocol/region.py times the whole update() call and
resets the probe; the loop restores outside every timer; the A/B cell, the engine table and the
asv suite all time through it."""

from __future__ import annotations

from pathlib import Path

import pytest

import protocol.region as region
from protocol.region import RegionProbe, timed_update, timed_updates

REPO = Path(__file__).resolve().parents[2]


class _Clock:
    def __init__(self):
        self.now_ns = 0
        self.readings = []

    def perf_counter_ns(self):
        self.readings.append(self.now_ns)
        return self.now_ns


def test_the_whole_call_and_the_engine_region(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(region, "time", clock)
    probe = RegionProbe()
    probe.start_ns = 123  # a previous update's reading: reset before the call

    def update(p):
        clock.now_ns += 1_000_000  # the batch apply
        p.engine_start(None)
        clock.now_ns += 2_000_000
        p.engine_stop(None)
        clock.now_ns += 500_000
        return "stats"

    timed = timed_update(update, probe)
    assert (timed.stats, timed.update_host_ms, timed.error) == ("stats", 3.5, None)
    assert probe.host_ms() == 2.0 and probe.device_ms() is None


def test_a_plain_update_gets_no_probe_and_hooks_replace_the_probe():
    seen = []
    assert timed_update(lambda p: seen.append(p)).stats is None and seen == [None]
    probe, hooks = RegionProbe(), object()
    timed_update(lambda p: seen.append(p), probe, hooks=hooks)
    assert seen[-1] is hooks


def test_an_error_is_raised_or_returned_with_its_time():
    def failing(_p):
        raise ValueError("wrong")

    with pytest.raises(ValueError):
        timed_update(failing)
    timed = timed_update(failing, RegionProbe(), catch=True)
    assert isinstance(timed.error, ValueError) and timed.stats is None and timed.update_host_ms >= 0


def test_the_loop_restores_before_every_update_outside_the_timer():
    events = []
    updates = timed_updates(lambda p: events.append("update") or len(events), lambda: events.append("restore"),
                            3, RegionProbe())
    assert [t.stats for t in updates] == [2, 4, 6]
    assert events == ["restore", "update"] * 3


def test_every_caller_times_through_it():
    for path in ("protocol/cell.py", "bench/engine_table.py", "benchmarks/common.py"):
        text = (REPO / path).read_text()
        assert "timed_update" in text, path
        assert ".reset()" not in text and "perf_counter_ns()" not in text, path
