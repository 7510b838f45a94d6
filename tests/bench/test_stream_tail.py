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
from tests.bench.test_stream import _run_file, edge_file, no_cuda  # noqa: F401 - fixtures


def _work(iterations, invalidated):
    return (iterations, 1, invalidated, 2 * invalidated)


def test_the_tail_is_the_batches_at_or_above_the_p99():
    # 5 warm-up batches (the slowest of all, left out), then 200 timed: 198 of 1 ms and two of 9 ms,
    # which did ten times the work and ran a collection each
    times = [50.0] * 5 + [1.0] * 198 + [9.0, 9.0]
    work = [_work(99, 999)] * 5 + [_work(4, 10)] * 198 + [_work(40, 100)] * 2
    gcs = [(0, 0.0)] * 5 + [(0, 0.0)] * 197 + [(1, 0.0002)] + [(1, 0.0005), (2, 0.0010)]
    anatomy = stream_tail.tail_anatomy(times, work, gcs, warmup=5)
    assert anatomy["percentile"] == 99
    assert anatomy["threshold_ms"] == pytest.approx(float(np.percentile(times[5:], 99)))
    tail, every = anatomy["tail"], anatomy["all"]
    assert tail["batches"] == 2 and every["batches"] == 200
    assert tail["median_ms"] == 9.0 and every["median_ms"] == 1.0
    assert (tail["median_iterations"], tail["median_invalidated"], tail["median_affected"]) == (40, 100, 200)
    assert (every["median_iterations"], every["median_invalidated"]) == (4, 10)
    assert tail["with_gc"] == 2 and every["with_gc"] == 3
    assert tail["gc_ms"] == pytest.approx(1.5) and every["gc_ms"] == pytest.approx(1.7)


def test_no_timed_batch_and_mismatched_lists():
    assert stream_tail.tail_anatomy([1.0, 2.0], [_work(1, 1)] * 2, [(0, 0.0)] * 2, warmup=2) is None
    with pytest.raises(ValueError, match="one time, one work tuple"):
        stream_tail.tail_anatomy([1.0, 2.0], [_work(1, 1)], [(0, 0.0)] * 2, warmup=0)


def test_work_of_reads_the_stats_fields():
    stats = SimpleNamespace(iterations=7, epochs=2, invalidated=30, affected=41, batch=None)
    assert stream_tail.work_of(stats) == (7, 2, 30, 41)
    assert stream_tail.work_of(SimpleNamespace(iterations=3)) == (3, None, None, None)


def test_the_gc_watch_counts_collections_and_their_time_on_a_controlled_clock():
    readings = iter([10.0, 10.25, 20.0, 20.5])
    enabled = gc.isenabled()
    gc.disable()  # only the explicit collections below run
    try:
        with stream_tail.GcWatch(clock=lambda: next(readings)) as watch:
            assert watch.reading() == (0, 0.0)
            gc.collect()
            assert watch.reading() == (1, pytest.approx(0.25))
            gc.collect(0)
            assert watch.reading() == (2, pytest.approx(0.75))
        assert watch._callback not in gc.callbacks
        gc.collect()  # after the watch: not counted
        assert watch.reading() == (2, pytest.approx(0.75))
    finally:
        if enabled:
            gc.enable()


def test_the_report_lines_name_each_engine_with_a_tail():
    anatomy = stream_tail.tail_anatomy([1.0] * 99 + [5.0], [_work(3, 8)] * 99 + [_work(30, 80)],
                                       [(0, 0.0)] * 99 + [(1, 0.001)], warmup=0)
    lines = stream_tail.markdown_lines({"fused": {"tail": anatomy}, "old": {"summary": {}}})
    text = "\n".join(lines)
    assert "| engine | batches | median ms | iterations | epochs | invalidated | affected |" in text
    assert "| fused, p99 tail | 1 | 5.000 | 30 | 1 | 80 | 160 | 1 | 1.000 |" in text
    assert "| fused, all | 100 | 1.000 | 3 | 1 | 8 | 16 | 1 | 1.000 |" in text
    assert "old" not in text
    assert stream_tail.markdown_lines({"old": {"summary": {}}}) == []


def test_the_host_stream_records_its_tail(no_cuda, edge_file, tmp_path):  # noqa: F811
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    tail = record["engines"]["host"]["tail"]
    times = np.load(out / stream.TIMES_NAME)["host"]
    assert tail["all"]["batches"] == 25 and tail["tail"]["batches"] >= 1
    assert tail["threshold_ms"] == pytest.approx(float(np.percentile(times[5:], 99)))
    assert tail["all"]["median_invalidated"] is not None and tail["all"]["median_iterations"] is not None
    assert "p99 tail" in (out / "stream.md").read_text()
