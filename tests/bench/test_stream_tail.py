"""bench/stream_tail.py: the slowest batches of a stream against all, by the work each update
reported and the garbage collections inside the call (issue 27's p99), on set timings and a
controlled clock; and in the host stream's record and report."""

from __future__ import annotations

import gc
import json
from types import SimpleNamespace

import numpy as np
import pytest

from bench import stream, stream_tail
from tests.bench.test_stream import _run_file, edge_file, no_cuda, two_hosts  # noqa: F401 - fixtures


def _work(iterations, invalidated):
    return (iterations, 1, invalidated, 2 * invalidated)


def test_the_tail_is_the_batches_at_or_above_the_p99():
    # 5 warm-up batches (the slowest of all, left out), then 200 timed: 198 of 1 ms and two of 9 ms,
    # which did ten times the work and ran a collection each (one of them a full one)
    times = [50.0] * 5 + [1.0] * 198 + [9.0, 9.0]
    work = [_work(99, 999)] * 5 + [_work(4, 10)] * 198 + [_work(40, 100), _work(41, 101)]
    gcs = [(0, 0, 0.0)] * 5 + [(0, 0, 0.0)] * 197 + [(1, 0, 0.0002)] + [(1, 1, 0.0005), (2, 0, 0.0010)]
    anatomy = stream_tail.tail_anatomy(times, work, gcs, warmup=5)
    assert anatomy["percentile"] == 99
    # the 99th percentile of 198 ones and two nines, by linear interpolation: 1 + 0.01 * 8
    assert anatomy["threshold_ms"] == pytest.approx(1.08)
    tail, every = anatomy["tail"], anatomy["all"]
    assert tail["batches"] == 2 and every["batches"] == 200
    assert tail["median_ms"] == 9.0 and every["median_ms"] == 1.0
    assert (tail["median_iterations"], tail["median_invalidated"], tail["median_affected"]) == (40.5, 100.5, 201)
    assert (every["median_iterations"], every["median_invalidated"]) == (4, 10)
    assert (tail["with_gc"], tail["with_full_gc"]) == (2, 1) and (every["with_gc"], every["with_full_gc"]) == (3, 1)
    assert tail["gc_ms"] == pytest.approx(1.5) and every["gc_ms"] == pytest.approx(1.7)
    assert tail["gc_ms_per_batch"] == pytest.approx(0.75) and every["gc_ms_per_batch"] == pytest.approx(0.0085)


def test_no_timed_batch_and_mismatched_lists():
    assert stream_tail.tail_anatomy([1.0, 2.0], [_work(1, 1)] * 2, [(0, 0, 0.0)] * 2, warmup=2) is None
    with pytest.raises(ValueError, match="one time, one work tuple"):
        stream_tail.tail_anatomy([1.0, 2.0], [_work(1, 1)], [(0, 0, 0.0)] * 2, warmup=0)
    for extra in ({"clocks": [1980]}, {"off_cpu": [0.0, 0.0, 0.0]}):
        with pytest.raises(ValueError, match="one time, one work tuple"):
            stream_tail.tail_anatomy([1.0, 2.0], [_work(1, 1)] * 2, [(0, 0, 0.0)] * 2, warmup=0, **extra)


def test_a_tail_of_ordinary_batches_off_the_cpu_is_the_hosts():
    """Two slow batches of ordinary work whose thread was off the CPU for most of the call: the
    tail's off-CPU time says so, the whole stream's stays near zero."""
    times = [1.0] * 198 + [8.0, 9.0]
    work = [_work(4, 10)] * 200
    gcs = [(0, 0, 0.0)] * 200
    off = [0.0] * 198 + [6.5, 7.5]
    anatomy = stream_tail.tail_anatomy(times, work, gcs, warmup=0, off_cpu=off)
    tail, every = anatomy["tail"], anatomy["all"]
    assert tail["median_iterations"] == every["median_iterations"] == 4
    assert tail["median_off_cpu_ms"] == 7.0 and tail["off_cpu_ms_per_batch"] == 7.0
    assert every["median_off_cpu_ms"] == 0.0 and every["off_cpu_ms_per_batch"] == pytest.approx(0.07)
    assert "median_sm_mhz" not in tail  # no clock readings given
    text = "\n".join(stream_tail.markdown_lines({"fused": {"tail": anatomy}}))
    assert "off-CPU ms per batch |" in text and "SM MHz" not in text
    assert "| fused, p99 tail | 2 | 8.500 | 4.0 | 1.0 | 10.0 | 20.0 | 0 (0) | 0.0000 | 7.0000 |" in text


def test_off_cpu_time_is_the_wall_time_less_the_cpu_time():
    assert stream_tail.off_cpu_ms(0.004, 0.001) == pytest.approx(3.0)
    assert stream_tail.off_cpu_ms(0.001, 0.0010004) == 0.0  # the CPU reads bracket the wall reads


def test_work_of_reads_the_stats_fields():
    stats = SimpleNamespace(iterations=7, epochs=2, invalidated=30, affected=41, batch=None)
    assert stream_tail.work_of(stats) == (7, 2, 30, 41)
    assert stream_tail.work_of(SimpleNamespace(iterations=3)) == (3, None, None, None)


@pytest.fixture
def collector_off():
    """Only the explicit collections of a test run."""
    enabled = gc.isenabled()
    gc.disable()
    yield
    if enabled:
        gc.enable()


def test_the_gc_watch_counts_collections_and_their_time_on_a_controlled_clock(collector_off):
    readings = iter([10.0, 10.25, 20.0, 20.5])
    with stream_tail.GcWatch(clock=lambda: next(readings)) as watch:
        assert watch.reading() == (0, 0, 0.0)
        gc.collect()  # a full collection
        first = watch.reading()
        assert first == (1, 1, pytest.approx(0.25))
        gc.collect(0)
        assert watch.reading() == (2, 1, pytest.approx(0.75))
        assert stream_tail.GcWatch.since(first, watch.reading()) == (1, 0, pytest.approx(0.5))
    assert watch._callback not in gc.callbacks
    gc.collect()  # after the watch: not counted
    assert watch.reading() == (2, 1, pytest.approx(0.75))


def test_the_gc_watch_is_removed_when_the_call_raises(collector_off):
    before = list(gc.callbacks)
    with pytest.raises(RuntimeError, match="update failed"):
        with stream_tail.GcWatch():
            raise RuntimeError("update failed")
    assert gc.callbacks == before


def test_collections_go_to_the_engine_whose_call_ran_them(two_hosts, monkeypatch, edge_file, tmp_path,  # noqa: F811
                                                         collector_off):
    """Interleaved, one watch serves both engines: a collection inside one engine's calls only is
    counted for that engine only."""
    from engines import sssp

    real_update, real_open = sssp.update, stream.open_engine
    engine_of_graph = {}

    def open_engine(engine, data, objective):
        graph, result = real_open(engine, data, objective)
        engine_of_graph[id(graph)] = engine
        return graph, result

    def update(graph, batch, result, *args, **kwargs):
        if engine_of_graph[id(graph)] == "second":
            gc.collect(0)
        return real_update(graph, batch, result, *args, **kwargs)

    monkeypatch.setattr(stream, "open_engine", open_engine)
    monkeypatch.setattr(sssp, "update", update)
    code, out = _run_file(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 0
    engines = json.loads((out / "stream.json").read_text())["engines"]
    assert engines["second"]["tail"]["all"]["with_gc"] == 25 and engines["second"]["tail"]["all"]["with_full_gc"] == 0
    assert engines["first"]["tail"]["all"]["with_gc"] == 0


def test_the_report_lines_name_each_engine_with_a_tail():
    anatomy = stream_tail.tail_anatomy([1.0] * 99 + [5.0], [_work(3, 8)] * 99 + [_work(30, 80)],
                                       [(0, 0, 0.0)] * 99 + [(1, 1, 0.001)], warmup=0)
    lines = stream_tail.markdown_lines({"fused": {"tail": anatomy}, "old": {"summary": {}}})
    text = "\n".join(lines)
    assert "| engine | batches | median ms | iterations | epochs | invalidated | affected |" in text
    assert "| fused, p99 tail | 1 | 5.000 | 30.0 | 1.0 | 80.0 | 160.0 | 1 (1) | 1.0000 |" in text
    assert "| fused, all | 100 | 1.000 | 3.0 | 1.0 | 8.0 | 16.0 | 1 (1) | 0.0100 |" in text
    assert "old" not in text
    assert stream_tail.markdown_lines({"old": {"summary": {}}}) == []


def test_the_report_lines_of_a_partial_engine_say_it_is_partial():
    anatomy = stream_tail.tail_anatomy([1.0] * 9 + [5.0], [_work(3, 8)] * 10, [(0, 0, 0.0)] * 10, warmup=0)
    text = "\n".join(stream_tail.markdown_lines({
        "fused": {"tail": anatomy, "partial": {"completed": 10, "planned": 10_000}},
        "host": {"tail": anatomy}}))
    assert "| fused (partial: 10 of 10,000 batches), p99 tail | 1 | 5.000 |" in text
    assert "| fused (partial: 10 of 10,000 batches), all | 10 |" in text
    assert "| host, all | 10 |" in text  # an entry without the mark reads as before
    assert stream_tail.engine_label("host", {}) == "host"


def test_the_host_stream_records_its_tail(no_cuda, edge_file, tmp_path):  # noqa: F811
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    host = record["engines"]["host"]
    tail = host["tail"]
    assert tail["all"]["batches"] == 25
    assert tail["threshold_ms"] == pytest.approx(host["summary"]["p99_ms"])  # the summary's own p99
    times = np.load(out / stream.TIMES_NAME)["host"][5:]
    assert tail["tail"]["batches"] == int((times >= tail["threshold_ms"]).sum())
    assert tail["all"]["median_invalidated"] is not None and tail["all"]["median_iterations"] is not None
    # the host reference waits for its own helper threads: its off-CPU time would not say preempted
    assert "median_off_cpu_ms" not in tail["all"] and "off_cpu_ms_per_batch" not in tail["tail"]
    assert "p99 tail" in (out / "stream.md").read_text() and "off-CPU" not in (out / "stream.md").read_text()
