"""Does ``make asv-compare`` judge the engine region by statistics? (issue: asv cried wolf.)

The decision is asv's own (``asv.commands.compare._is_result_better``, what ``asv continuous``
and ``asv compare`` call per benchmark, with the samples and statistics asv records); the samples
are seeded draws shaped like ``EngineRegion``'s (its rounds and minimum repeat, a between-process
offset and a within-process spread), so the test is deterministic and fails if the benchmark's
attributes or the Makefile's factor stop giving asv enough to judge by. The real-time check of
the same decision on a machine is ``benchmarks/asv_semantics.py`` (``make asv-semantics``).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("asv")

from asv.commands.compare import _is_result_better  # noqa: E402
from asv_runner.statistics import compute_stats  # noqa: E402

from benchmarks import asv_semantics, common, sssp_engines  # noqa: E402
from protocol import planted_delay  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENGINE_SECONDS = 190e-6  # a host engine region at the tiny scale


def makefile_factor() -> float:
    return float(re.search(r"^ASV_FACTOR \?= (\S+)$", (REPO / "Makefile").read_text(), re.MULTILINE).group(1))


def _samples(rng, *, slowdown=0.0, within=0.03, between=0.015):
    """One commit's samples as EngineRegion records them: ``rounds`` processes of the minimum
    ``repeat`` samples, each process with its own offset (layout, caches, the machine's load)."""
    rounds = sssp_engines.EngineRegion.rounds
    per_round = sssp_engines.EngineRegion.repeat[0]
    out = []
    for _ in range(rounds):
        offset = rng.lognormal(0.0, between)
        out += list(ENGINE_SECONDS * (1 + slowdown) * offset * rng.lognormal(0.0, within, per_round))
    return out


def _verdict(before, after, factor):
    """'worse', 'better' or 'same', as asv continuous marks a benchmark ('+', '-', ' ')."""
    value_1, stats_1 = compute_stats(before, 1)
    value_2, stats_2 = compute_stats(after, 1)
    if _is_result_better(value_2, value_1, (stats_2, after), (stats_1, before), factor):
        return "better"
    if _is_result_better(value_1, value_2, (stats_1, before), (stats_2, after), factor):
        return "worse"
    return "same"


def test_the_factor_is_one_place():
    factor = makefile_factor()
    assert factor == asv_semantics.DEFAULT_FACTOR
    makefile = (REPO / "Makefile").read_text()
    assert "--factor 1.10" not in makefile
    assert makefile.count("--factor $(ASV_FACTOR)") == 3  # continuous, compare (offline), asv-semantics
    assert 1.0 < factor < 1.10  # a planted 10 % must clear it


def test_the_engine_region_is_a_time_benchmark_on_the_probes_clock():
    bench = sssp_engines.EngineRegion
    assert bench.timer is common.ENGINE_CLOCK and bench.number == 1 and bench.warmup_time == 0
    assert not hasattr(sssp_engines.Update, "track_engine_seconds")  # the one-number form is gone
    # enough samples a side that asv's Mann-Whitney test can reject at its p < 0.002 at all
    from math import comb

    n = bench.rounds * bench.repeat[0]
    assert 1 / comb(2 * n, n) < 0.002
    assert bench.rounds >= 4  # the between-process spread is sampled, not one process's


@pytest.mark.parametrize("seed", range(8))
def test_an_unchanged_engine_is_not_significantly_changed(seed):
    rng = np.random.default_rng([11, seed])
    assert _verdict(_samples(rng), _samples(rng), makefile_factor()) == "same"


@pytest.mark.parametrize("seed", range(8))
def test_a_planted_ten_percent_slowdown_is_flagged(seed):
    rng = np.random.default_rng([12, seed])
    assert _verdict(_samples(rng), _samples(rng, slowdown=0.10), makefile_factor()) == "worse"


def test_a_one_number_track_has_no_statistics_to_spare_it():
    # the numbers: track_engine_seconds('host', 'local') 364 us -> 467 us on an unchanged
    # engine; a track value carries no samples, so only the factor decides and it cried wolf
    assert _is_result_better(364e-6, 467e-6, None, None, makefile_factor())
    # the same noise as samples: a median of each side's draws is judged "same"
    rng = np.random.default_rng(5)
    noisy = [_samples(rng, within=0.15) for _ in range(2)]
    assert _verdict(*noisy, makefile_factor()) == "same"


# -- the clock's wiring ------------------------------------------------------------------------------
class _ScriptedProbe:
    """A RegionProbe stand-in whose regions last the scripted host times (ms)."""

    def __init__(self, host_ms):
        self.script = list(host_ms)
        self.current = None
        self.hooks_seen = []

    def reset(self):
        self.current = None

    def engine_start(self, stream):
        self.current = self.script.pop(0)

    def engine_stop(self, stream):
        pass

    def host_ms(self):
        return self.current

    def device_ms(self):
        return None


class _ScriptedState:
    def __init__(self):
        self.log = []

    def restore(self):
        self.log.append("restore")

    def update(self, probe=None):
        self.log.append(type(probe).__name__)
        probe.engine_start(None)
        probe.engine_stop(None)


def test_a_sample_is_the_median_region_of_restored_updates(monkeypatch):
    monkeypatch.setattr(planted_delay, "host_wait", lambda ns: None)
    clock = common.EngineClock()
    state = _ScriptedState()
    probe = _ScriptedProbe([2.0, 9.0, 1.0, 3.0])
    common.timed_engine_updates(state, common.EngineTiming(4, 0, probe), clock)
    assert clock() == pytest.approx(statistics.median([2.0, 9.0, 1.0, 3.0]) / 1e3)
    assert state.log == ["restore", "_ScriptedProbe"] * 4  # every update from the restored state
    state.log.clear()
    common.timed_engine_updates(state, common.EngineTiming(2, 500, _ScriptedProbe([1.0, 1.0])), clock)
    assert state.log == ["restore", "DelayedProbe"] * 2  # the planted delay, inside the region


def test_the_sample_size_reaches_the_target_in_powers_of_two():
    assert common.updates_per_sample(0.05) == 1
    assert common.updates_per_sample(0.02) == 1
    assert common.updates_per_sample(0.015) == 2
    assert common.updates_per_sample(190e-6) == 64  # the cap: 12 ms of engine time
    assert common.updates_per_sample(1e-3) == 32


def test_the_planted_percentage_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(common.PLANT_ENV, raising=False)
    assert common.planted_percent() == 0.0
    monkeypatch.setenv(common.PLANT_ENV, "10")
    assert common.planted_percent() == 10.0
    for bad in ("ten", "-1", "101"):
        monkeypatch.setenv(common.PLANT_ENV, bad)
        with pytest.raises(ValueError, match=common.PLANT_ENV):
            common.planted_percent()


def test_the_host_engine_advances_the_clock_by_its_engine_alone(monkeypatch, tmp_path):
    import time

    monkeypatch.setenv("SSSPAB_ASV_SCALE", "tiny")
    monkeypatch.setenv("SSSPAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(common.PLANT_ENV, raising=False)
    sssp_engines._STATES.clear()
    sssp_engines._TIMINGS.clear()
    bench = sssp_engines.EngineRegion()
    bench.setup("host", "local")
    before, wall = common.ENGINE_CLOCK(), time.perf_counter()
    bench.time_engine("host", "local")
    advanced, elapsed = common.ENGINE_CLOCK() - before, time.perf_counter() - wall
    assert 0 < advanced < elapsed / bench.timing.updates * 2  # one update's engine, not the restores
    monkeypatch.setenv(common.PLANT_ENV, "10")
    bench.setup("host", "local")  # a planted process calibrates its own delay
    assert bench.timing.delay_ns > 0


# -- the controlled clock of make asv-semantics (benchmarks/synthetic.py) -------------------------------
def _synthetic_engine_seconds(monkeypatch, tmp_path, seed, plant):
    """One tiny host state's calibration and samples on the synthetic clock, in a fresh module state."""
    from benchmarks import synthetic
    from protocol import region

    monkeypatch.setenv("SSSPAB_ASV_SCALE", "tiny")
    monkeypatch.setenv("SSSPAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(synthetic.ENV, seed)
    monkeypatch.setenv(common.PLANT_ENV, str(plant))
    monkeypatch.setattr(synthetic, "_clock", None)
    monkeypatch.setattr(region, "time", region.time)                   # restored after the test
    monkeypatch.setattr(planted_delay, "host_wait", planted_delay.host_wait)
    sssp_engines._STATES.clear()
    state = sssp_engines._state("host", "local")
    timing = common.calibrate_engine_timing(state, "host/local")
    clock = common.EngineClock()
    samples = []
    for _ in range(6):
        before = clock()
        common.timed_engine_updates(state, timing, clock)
        samples.append(clock() - before)
    return timing, samples


def test_the_synthetic_clock_is_a_function_of_the_seed(monkeypatch, tmp_path):
    from benchmarks import synthetic

    timing, first = _synthetic_engine_seconds(monkeypatch, tmp_path, "7/base/0", 0)
    assert isinstance(timing.probe, synthetic.SyntheticProbe) and timing.delay_ns == 0
    _, again = _synthetic_engine_seconds(monkeypatch, tmp_path, "7/base/0", 0)
    _, other = _synthetic_engine_seconds(monkeypatch, tmp_path, "7/again/0", 0)
    assert first == again  # the engines ran, but the regions are the seed's draws
    assert first != other
    for value in first + other:
        assert value == pytest.approx(synthetic.BASE_NS / 1e9, rel=0.1)


def test_the_planted_delay_is_calibrated_and_added_on_the_synthetic_clock(monkeypatch, tmp_path):
    _, base = _synthetic_engine_seconds(monkeypatch, tmp_path, "7/base/0", 0)
    timing, planted = _synthetic_engine_seconds(monkeypatch, tmp_path, "7/base/0", 10)
    assert timing.delay_ns > 0
    # the same draws, each region longer by 10 % of the calibration median: added, not waited for
    ratio = statistics.median(planted) / statistics.median(base)
    assert 1.07 < ratio < 1.13
    assert min(planted) > max(base)  # every sample: a 10 % shift against a spread of a few per cent


def test_without_the_hook_the_probe_is_the_protocols(monkeypatch):
    from benchmarks import synthetic
    from protocol.region import RegionProbe

    monkeypatch.delenv(synthetic.ENV, raising=False)
    assert type(synthetic.region_probe("host/local")) is RegionProbe
