"""protocol.environment.host_probe with a controlled clock: the arithmetic (median over the runs,
per-call division), the order of the clock readings and the workload between them. No assertion
reads the real clock's speed."""

from __future__ import annotations

import itertools

import pytest

from protocol import environment


class FakeClock:
    """Integer nanoseconds: each reading returns the next value of ``readings``, and notes how many
    calls of each probe part had run by then."""

    def __init__(self, readings, counts):
        self.readings = iter(readings)
        self.counts = counts
        self.seen = []

    def __call__(self):
        self.seen.append(dict(self.counts))
        return next(self.readings)


def _readings(python_ns, numpy_ns, start=1_000):
    """Clock values that make run k's Python part take python_ns[k] and its NumPy part numpy_ns[k]."""
    out, now = [], start
    for p, n in zip(python_ns, numpy_ns):
        out += [now, now + p]
        now += p + 17  # time between the parts is not counted
        out += [now, now + n]
        now += n + 5
    return out


@pytest.fixture
def counted(monkeypatch):
    counts = {"python": 0, "numpy": 0}
    real_python, real_numpy = environment._probe_python, environment._probe_numpy

    def python_part(*args, **kwargs):
        counts["python"] += 1
        return real_python(*args, **kwargs)

    def numpy_part(*args, **kwargs):
        counts["numpy"] += 1
        return real_numpy(*args, **kwargs)

    monkeypatch.setattr(environment, "_probe_python", python_part)
    monkeypatch.setattr(environment, "_probe_numpy", numpy_part)
    return counts


def test_the_probe_reports_the_median_run_per_call(counted):
    python_ns, numpy_ns = [5_000, 3_000, 4_000], [70_000, 90_000, 80_000]
    clock = FakeClock(_readings(python_ns, numpy_ns), counted)
    probe = environment.host_probe(calls=10, repeats=3, clock=clock)
    assert probe["python_call_us"] == 0.4  # median 4,000 ns / 10 calls = 400 ns
    assert probe["numpy_call_us"] == 8.0  # median 80,000 ns / 10 calls
    assert probe["python_runs_ns"] == python_ns and probe["numpy_runs_ns"] == numpy_ns
    assert (probe["calls"], probe["repeats"], probe["array_size"]) == (10, 3, 100)
    assert probe["timer"] == "FakeClock"
    # four readings a run; between them exactly `calls` calls of the part timed, after one untimed
    # call of each part
    assert len(clock.seen) == 12
    for k in range(3):
        before_p, after_p, before_n, after_n = clock.seen[4 * k: 4 * k + 4]
        assert before_p == {"python": 1 + 10 * k, "numpy": 1 + 10 * k}
        assert after_p == {"python": 11 + 10 * k, "numpy": 1 + 10 * k}
        assert before_n == after_p
        assert after_n == {"python": 11 + 10 * k, "numpy": 11 + 10 * k}


def test_an_even_number_of_runs_takes_the_mean_of_the_middle_two(counted):
    clock = FakeClock(_readings([1_000, 9_000, 2_000, 3_000], [10, 20, 40, 30]), counted)
    probe = environment.host_probe(calls=4, repeats=4, clock=clock)
    assert probe["python_call_us"] == 0.625  # (2,000 + 3,000) / 2 / 4 calls = 625 ns
    assert probe["numpy_call_us"] == 0.00625  # (20 + 30) / 2 / 4 = 6.25 ns


def test_the_probe_checks_its_parameters():
    for calls, repeats in ((0, 3), (5, 0)):
        with pytest.raises(ValueError, match="calls >= 1 and repeats >= 1"):
            environment.host_probe(calls=calls, repeats=repeats, clock=itertools.count().__next__)


def test_the_workload_is_deterministic():
    src, dst = environment._probe_arrays()
    assert src.size == dst.size == 100 and str(src.dtype) == "int64"
    assert sorted(src.tolist()) == list(range(100))  # 37 and 11 are prime to 100: permutations
    first = environment._probe_numpy(src, dst)
    assert first == environment._probe_numpy(*environment._probe_arrays())
    state = environment._ProbeState()
    assert [environment._probe_python(state, key=i, value=i) for i in range(3)] == [5, 6, 7]
    assert state.count == 3 and state.last == {"key": 2, "value": 2, "weight": 1, "mode": "auto"}


def test_the_real_clock_is_the_default():
    probe = environment.host_probe(calls=2, repeats=1)
    assert probe["timer"] == "time.perf_counter_ns"
    assert probe["python_call_us"] > 0 and probe["numpy_call_us"] > 0
    assert all(isinstance(ns, int) for ns in probe["python_runs_ns"] + probe["numpy_runs_ns"])


def test_host_info_carries_the_host_probe():
    """Every campaign and sweep record's host (host_info) says how fast the host runs an update's
    host side, not only its CPU's name."""
    info = environment.host_info()
    probe = info["host_probe"]
    assert info["cpu_model"] == environment.cpu_model()
    assert probe["timer"] == "time.perf_counter_ns" and probe["python_call_us"] > 0
    assert probe["numpy_call_us"] > 0 and probe["calls"] == environment.HOST_PROBE_CALLS
