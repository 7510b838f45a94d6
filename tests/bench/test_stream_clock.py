"""bench/stream_clock.py: the GPU's SM clock read after each batch of a stream, through a scripted
NVML (tests/protocol/fake_nvml.py); its record (range, rank correlation, consecutive parts) on set
readings; the reading taken outside the timed call; and the host stream's record without one."""

from __future__ import annotations

import itertools
import json
import types

import numpy as np
import pytest

from bench import stream, stream_clock
from protocol.nvml import Nvml
from tests.bench.test_stream import _run_file, edge_file, no_cuda, two_hosts  # noqa: F401 - fixtures
from tests.protocol.fake_nvml import NVML_ERROR_UNINITIALIZED, FakeNvml


class ScriptedNvml(FakeNvml):
    """A fake NVML whose SM clock steps through ``readings`` (then repeats the last)."""

    def __init__(self, readings, **kwargs):
        super().__init__(**kwargs)
        self._readings = iter(readings)
        self._last = None

    def nvmlDeviceGetClockInfo(self, handle, kind):
        super().nvmlDeviceGetClockInfo(handle, kind)
        self._last = next(self._readings, self._last)
        return self._last


@pytest.fixture
def device_bus(monkeypatch):
    import protocol.environment

    monkeypatch.setattr(protocol.environment, "cuda_device_info", lambda device: {"pci_bus_id": f"0000:0{device}:00.0"})


def test_a_clock_reads_the_sm_clock_of_the_device_by_its_bus_id(device_bus):
    fake = ScriptedNvml([1980, 1410])
    with stream_clock.SmClock.open(3, nvml_module=fake) as clock:
        assert clock.problem is None
        assert (clock.read(), clock.read()) == (1980, 1410)
    assert fake.called("nvmlDeviceGetHandleByPciBusId") == [(b"0000:03:00.0",)]
    assert len(fake.called("nvmlDeviceGetClockInfo")) == 2  # one NVML call per reading
    assert fake.called("nvmlShutdown") == [()]


def test_a_clock_that_cannot_be_opened_reads_none_and_says_why(device_bus, monkeypatch):
    assert stream_clock.SmClock.open(None).read() is None
    assert "host reference" in stream_clock.SmClock.open(None).problem
    broken = FakeNvml()
    broken.fail["nvmlInit"] = NVML_ERROR_UNINITIALIZED
    clock = stream_clock.SmClock.open(0, nvml_module=broken)
    assert clock.read() is None and "NVML could not be initialised" in clock.problem
    import protocol.environment

    def no_device(device):
        raise RuntimeError("no CUDA device 0")

    monkeypatch.setattr(protocol.environment, "cuda_device_info", no_device)
    clock = stream_clock.SmClock.open(0, nvml_module=FakeNvml())
    assert clock.read() is None and clock.problem == "RuntimeError: no CUDA device 0"


def test_a_reading_nvml_refuses_is_none_and_the_record_says_so(device_bus):
    fake = FakeNvml()
    fake.fail["nvmlDeviceGetClockInfo"] = 3  # not supported
    clock = stream_clock.SmClock.open(0, nvml_module=fake)
    assert clock.problem is None and clock.read() is None
    record = stream_clock.clock_record([1.0, 2.0], [None, None], warmup=0, problem=clock.problem)
    assert record["readings"] == 0 and record["problem"] == "NVML gave no SM clock reading for a timed batch"


def test_nvml_opened_for_a_device_it_cannot_find_is_shut_down(device_bus):
    fake = FakeNvml()
    fake.fail["nvmlDeviceGetHandleByPciBusId"] = 2  # invalid argument
    clock = stream_clock.SmClock.open(0, nvml_module=fake)
    assert clock.read() is None and "NVML cannot open the device" in clock.problem
    assert len(fake.called("nvmlInit")) == len(fake.called("nvmlShutdown")) == 1


def test_the_parts_are_consecutive_slices_of_the_timed_batches():
    times = [9.0] * 2 + [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    clocks = [100, 100, 1980, None, 1400, 1500, None, None, 1000]
    parts = stream_clock.parts(times, clocks, warmup=2, count=3)
    assert [p["first"] for p in parts] == [2, 5, 7]
    assert [p["batches"] for p in parts] == [3, 2, 2]
    assert [p["median_ms"] for p in parts] == [2.0, 4.5, 6.5]
    assert [(p["sm_mhz_median"], p["sm_mhz_min"]) for p in parts] == [(1690.0, 1400), (1500.0, 1500), (1000.0, 1000)]
    assert "median_iterations" not in parts[0]  # no work given
    work = [(99, 1, 5, 10)] * 2 + [(17, 1, 5, 10), (15, 0, 5, 10), (None, 0, 0, 0), (12, 0, 1, 2), (11, 0, 1, 2),
                                    (9, 0, 1, 2), (8, 0, 1, 2)]
    worked = stream_clock.parts(times, clocks, warmup=2, count=3, work=work)
    assert [p["median_iterations"] for p in worked] == [16.0, 11.5, 8.5]  # a missing count is left out
    assert len(stream_clock.parts([1.0, 2.0], [None, None], warmup=0, count=10)) == 2  # fewer batches than parts
    assert stream_clock.parts([1.0], [None], warmup=1) == []


def test_the_record_correlates_time_with_the_clock():
    times = [5.0, 1.0, 2.0, 3.0, 4.0]
    record = stream_clock.clock_record(times, [0, 1980, 1700, 1500, 1200], warmup=1)
    assert record["readings"] == 4 and record["problem"] is None
    assert (record["sm_mhz_min"], record["sm_mhz_median"], record["sm_mhz_max"]) == (1200, 1600.0, 1980)
    assert record["time_clock_spearman"] == -1.0  # slower batches exactly at lower clocks
    assert stream_clock.clock_record(times, [1980] * 5, warmup=0)["time_clock_spearman"] is None  # constant clock
    empty = stream_clock.clock_record(times, [None] * 5, warmup=0, problem="NVML could not be initialised")
    assert empty["readings"] == 0 and empty["problem"] == "NVML could not be initialised"
    assert empty["time_clock_spearman"] is None and empty["sm_mhz_median"] is None
    with pytest.raises(ValueError):
        stream_clock.clock_record(times, [1] * 4, warmup=0)


def test_the_report_shows_engines_with_readings_only():
    clocked = stream_clock.clock_record([2.0, 1.0, 1.0, 3.0], [1400, 1980, 1980, 1100], warmup=0)
    lines = stream_clock.markdown_lines({"fused": {"clock": clocked}, "host": {"clock": stream_clock.clock_record(
        [1.0], [None], warmup=0, problem="no GPU")}, "old": {"summary": {}}})
    text = "\n".join(lines)
    assert "| fused | 4 | 1,100 | 1,690 | 1,980 | -1.000 |" in text
    assert "| fused | 2.000 / 1,400 | 1.000 / 1,980 | 1.000 / 1,980 | 3.000 / 1,100 |" in text
    assert "host" not in text and "old" not in text and "iterations" not in text
    worked = stream_clock.clock_record([2.0, 1.0], [1400, 1980], warmup=0, work=[(30, 1, 9, 9), (4, 0, 1, 1)])
    text = "\n".join(stream_clock.markdown_lines({"fused": {"clock": worked}}))
    assert "median SM MHz / median push iterations per part" in text
    assert "| fused | 2.000 / 1,400 / 30.0 | 1.000 / 1,980 / 4.0 |" in text
    assert stream_clock.markdown_lines({"host": {"clock": None}, "old": {}}) == []


def test_the_report_of_a_partial_engine_says_it_is_partial():
    clocked = stream_clock.clock_record([2.0, 1.0], [1400, 1980], warmup=0)
    text = "\n".join(stream_clock.markdown_lines({"fused": {"clock": clocked,
                                                             "partial": {"completed": 2, "planned": 500}}}))
    assert "| fused (partial: 2 of 500 batches) | 2 | 1,400 |" in text
    assert "| fused (partial: 2 of 500 batches) | 2.000 / 1,400 | 1.000 / 1,980 |" in text


def test_the_clock_is_read_after_the_timed_call(monkeypatch):
    """timed_update reads the clock once, after the second timer reading: the call's time holds
    none of it. The thread's CPU time is read just outside the wall timer, and the call's off-CPU
    time is the wall time less it."""
    from engines import sssp

    ticks = itertools.count(1)
    order = []

    def perf_counter():
        order.append("wall")
        return float(next(ticks))

    cpu = iter([10.0, 10.25, 20.0, 21.5])  # 0.25 s of CPU in the first call, 1.5 s in the second

    def thread_time():
        order.append("cpu")
        return next(cpu)

    monkeypatch.setattr(stream, "time", types.SimpleNamespace(perf_counter=perf_counter, thread_time=thread_time))
    monkeypatch.setattr(sssp, "update", lambda graph, batch, result: types.SimpleNamespace())
    read_at = []

    class Clock:
        def read(self):
            read_at.append(next(ticks))
            return 1755

    watch = stream.GcWatch()
    ms, _, _, mhz, off = stream.timed_update(None, None, types.SimpleNamespace(batch=None), watch, Clock())
    assert (ms, mhz) == (1000.0, 1755)  # start at tick 1, end at tick 2
    assert read_at == [3]
    assert order == ["cpu", "wall", "wall", "cpu"]
    assert off == 750.0  # 1 s of wall time, 0.25 s of it on the CPU
    again = stream.timed_update(None, None, types.SimpleNamespace(batch=None), watch)
    assert again[3] is None and again[4] == 0.0  # more CPU than wall time (the reads around it): none off


def test_an_interleaved_stream_records_the_clock_of_its_gpu_engine(two_hosts, monkeypatch, edge_file,  # noqa: F811
                                                                  tmp_path, device_bus):
    """Interleaved, the one clock serves the GPU engine's calls only: its record has a reading per
    timed batch (in the order they were read), the other engine none, and the report shows both
    tables with the clock column in the tail's."""
    monkeypatch.setattr(stream, "CUDA_ENGINES", ("second",))  # still the host reference underneath
    monkeypatch.setattr(stream, "cuda_available", lambda: True)
    fake = ScriptedNvml(range(1000, 1030))
    monkeypatch.setattr(stream, "open_clock", lambda engines: stream_clock.SmClock(Nvml(fake), ("gpu", 0)))
    code, out = _run_file(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 0
    engines = json.loads((out / "stream.json").read_text())["engines"]
    second, first = engines["second"]["clock"], engines["first"]["clock"]
    assert second["readings"] == 25 and (second["sm_mhz_min"], second["sm_mhz_max"]) == (1005, 1029)
    assert [p["first"] for p in second["parts"]] == [5, 8, 11, 14, 17, 20, 22, 24, 26, 28]
    assert all(p["median_iterations"] is not None for p in second["parts"])  # the host reference's Stats
    assert first["readings"] == 0 and "host reference" in first["problem"]
    assert engines["second"]["tail"]["all"]["median_sm_mhz"] == 1017.0
    assert engines["first"]["tail"]["all"]["median_sm_mhz"] is None
    # off-CPU time for the GPU engine's calls only (the host reference waits for its own threads)
    assert engines["second"]["tail"]["all"]["off_cpu_ms_per_batch"] is not None
    assert "off_cpu_ms_per_batch" not in engines["first"]["tail"]["all"]
    per_batch = np.load(out / stream.TIMES_NAME)
    assert sorted(per_batch.files) == ["first", "second", "second_off_cpu_ms", "second_sm_mhz"]
    assert list(per_batch["second_sm_mhz"]) == list(range(1000, 1030))  # warm-up included, as read
    assert per_batch["second_off_cpu_ms"].shape == (30,) and not np.isnan(per_batch["second_off_cpu_ms"]).any()
    report = (out / "stream.md").read_text()
    assert "The GPU's SM clock" in report and "| second | 25 | 1,005 | 1,017 | 1,029 |" in report
    assert "SM MHz |" in report


def test_the_host_stream_records_no_clock(no_cuda, edge_file, tmp_path):  # noqa: F811
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    host = json.loads((out / "stream.json").read_text())["engines"]["host"]
    assert host["clock"]["readings"] == 0 and "host reference" in host["clock"]["problem"]
    assert "median_sm_mhz" in host["tail"]["all"] and host["tail"]["all"]["median_sm_mhz"] is None
    report = (out / "stream.md").read_text()
    assert "The GPU's SM clock" not in report and "SM MHz" not in report
    assert np.load(out / stream.TIMES_NAME).files == ["host"]  # no reading to keep


def test_the_engines_seconds_leave_out_opening_and_closing_the_clock(monkeypatch):
    """A sequential run's seconds (the engine's own wall time) start after the clock opened and end
    before it closed, as an interleaved run's do: NVML's start-up is the instrument's."""
    ticks = itertools.count(0)
    monkeypatch.setattr(stream, "time", types.SimpleNamespace(perf_counter=lambda: float(next(ticks)),
                                                             thread_time=lambda: 0.0))
    events = []

    class Clock:
        problem = None

        def __enter__(self):
            events.append(("open", next(ticks)))
            return self

        def __exit__(self, *exc):
            events.append(("close", next(ticks)))
            return False

        def read(self):
            return 1980

    monkeypatch.setattr(stream, "open_clock", lambda engines: Clock())
    monkeypatch.setattr(stream, "open_engine", lambda engine, data, objective: (None, None))
    monkeypatch.setattr(stream, "timed_stream", lambda graph, result, batches, bar, watch, clock, **kw: [])
    monkeypatch.setattr(stream, "final_tree", lambda result: None)
    run = stream.run_engine("host", None, [], 0, progress=False)
    # ticks: 0 open, 1 start, 2 end, 3 close
    assert events == [("open", 0), ("close", 3)] and run.seconds == 1.0
