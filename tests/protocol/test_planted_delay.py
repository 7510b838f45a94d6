"""The planted slowdown (protocol/planted_delay.py, protocol.md §7): parsing, calibration, where
the delay goes (at the end of the engine region, on the host, for every side), detection by a
campaign and the command line. No CuPy or GPU is needed.

The detection tests run on the virtual clock of ``helpers`` (seeded engine regions, the busy wait
counted on the same clock), so they are deterministic and fail if the statistics or the plumbing
are wrong; the command-line test runs on the real clock and asserts only what a 50 % delay makes
certain.
"""

from __future__ import annotations

import pickle
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from protocol import planted_delay
from protocol.errors import UsageError
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CONTROL_SUFFIX, CampaignRunner
from protocol.sides import Side, parse_sides

from .helpers import VirtualClock, VirtualSide, host_config, small_graph_input

REPO = Path(__file__).resolve().parents[2]
FUSED_OPERATORS = parse_sides("cuda:fused,cuda:operators")
HOST_HOST = parse_sides("host,host")


# -- parsing ----------------------------------------------------------------------------------------
def test_the_side_is_named_by_role_or_by_label():
    assert planted_delay.parse("B:3", FUSED_OPERATORS) == planted_delay.PlantSpec("B", "cuda:operators", 3.0)
    assert planted_delay.parse("cuda:fused:3", FUSED_OPERATORS) == planted_delay.PlantSpec("A", "cuda:fused", 3.0)
    assert planted_delay.parse("CUDA:Fused:2.5", FUSED_OPERATORS).percent == 2.5
    assert planted_delay.parse("A:1", HOST_HOST).role == "A"
    assert planted_delay.parse("B:3", FUSED_OPERATORS).argv() == ["--plant-delay", "B:3"]


@pytest.mark.parametrize("text, message", [
    ("host:3", "both sides are host"),  # host,host: the label does not say which
    ("C:3", "neither A, B nor a side"),
    ("B:x", "not a number"),
    ("B:0", "must be in (0, 100]"),
    ("B:150", "must be in (0, 100]"),
    ("B", "expected SIDE:PERCENT"),
    (":3", "expected SIDE:PERCENT"),
])
def test_bad_specs_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        planted_delay.parse(text, HOST_HOST)


# -- calibration ------------------------------------------------------------------------------------
def test_the_delay_is_the_percentage_of_the_median_in_nanoseconds():
    assert planted_delay.calibrated_delay_ns(2.0, 3) == 60_000
    assert planted_delay.calibrated_delay_ns(1.8125, 3) == 54_375
    assert planted_delay.calibrated_delay_ns(0.0101, 10) == 1_010
    assert planted_delay.calibrated_delay_ns(None, 3) == 0  # nothing measured: no delay
    assert planted_delay.calibrated_delay_ns(0.0, 3) == 0


def _row(role, *, warmup=True, verification=False, host=None, device=None):
    return {"role": role, "warmup": warmup, "verification": verification, "engine_host_ms": host,
            "engine_device_ms": device}


def test_the_median_is_taken_over_the_sides_warmup_rounds_only():
    rows = [_row("B", host=1.0), _row("B", host=3.0), _row("B", host=2.5),
            _row("A", host=50.0),  # the other side
            _row("B", verification=True, host=90.0),  # a CUPTI round costs extra: never calibrated on
            _row("B", warmup=False, host=70.0)]  # a timed round
    assert planted_delay.warmup_median_ms(rows, "B") == 2.5
    assert planted_delay.warmup_median_ms(rows, "A") == 50.0
    # device time where every warm-up round has it (CUDA events), else host time
    assert planted_delay.warmup_median_ms([_row("B", host=9.0, device=2.0), _row("B", host=9.0, device=4.0)], "B") == 3.0
    assert planted_delay.warmup_median_ms([_row("B", host=9.0, device=2.0), _row("B", host=5.0)], "B") == 7.0
    assert planted_delay.warmup_median_ms([], "B") is None


class _State:
    def __init__(self, side):
        self.side = side


def test_calibration_replaces_only_planted_sides():
    a, b = planted_delay.plant(HOST_HOST, planted_delay.PlantSpec("B", "host", 4.0))
    assert a is HOST_HOST[0] and isinstance(b, planted_delay.PlantedSide) and b.delay_ns is None
    states = {"A": _State(a), "B": _State(b)}
    planted_delay.calibrate_cell(states, [_row("A", host=1.0), _row("B", host=2.0), _row("B", host=4.0)])
    assert states["A"].side is a
    assert states["B"].side.delay_ns == 120_000 and states["B"].side.percent == 4.0
    assert states["B"].side.label == "host" and states["B"].side.base == HOST_HOST[1]
    # a worker process receives the sides pickled
    assert pickle.loads(pickle.dumps(states["B"].side)) == states["B"].side


# -- where the delay goes ---------------------------------------------------------------------------
class _Probe:
    def __init__(self, log):
        self.log = log

    def engine_start(self, stream):
        self.log.append(("start", stream))

    def engine_stop(self, stream):
        self.log.append(("stop", stream))


def _engine(probe, stream, log):
    """What engines.sssp.api does around an engine: start, the engine's work, stop."""
    probe.engine_start(stream)
    log.append(("engine work", stream))
    probe.engine_stop(stream)


@pytest.mark.parametrize("stream", [None, "stream"])
def test_the_delay_is_inside_the_region_after_the_engine_before_the_stop(monkeypatch, stream):
    log = []
    monkeypatch.setattr(planted_delay, "host_wait", lambda ns: log.append(("host wait", ns)))
    _engine(planted_delay.DelayedProbe(_Probe(log), 5_000), stream, log)
    # the same host wait for a CUDA side (a stream) as for a host side: nothing enqueued on the stream
    assert log == [("start", stream), ("engine work", stream), ("host wait", 5_000), ("stop", stream)]


class _FakeStream:
    """A CUDA stream on the virtual clock: work enqueued on it ends at ``busy_until``; an event is
    recorded when the stream reaches it (at once when idle); ``syncs`` counts host synchronizations."""

    def __init__(self, clock):
        self.clock = clock
        self.busy_until = 0
        self.syncs = 0

    def enqueue(self, ns):
        self.busy_until = max(self.busy_until, self.clock.now_ns) + ns

    def synchronize(self):
        self.syncs += 1
        self.clock.now_ns = max(self.clock.now_ns, self.busy_until)

    def event_time(self):
        return max(self.clock.now_ns, self.busy_until)


class _TimingProbe:
    """A fake RegionProbe: host times on the virtual clock and, with a stream, its event times."""

    def __init__(self, clock):
        self.clock = clock

    def engine_start(self, stream):
        self.device_start = stream.event_time() if stream is not None else None
        self.start_ns = self.clock.perf_counter_ns()

    def engine_stop(self, stream):
        self.stop_ns = self.clock.perf_counter_ns()
        self.device_stop = stream.event_time() if stream is not None else None

    def host_ns(self):
        return self.stop_ns - self.start_ns

    def device_ns(self):
        return self.device_stop - self.device_start


def _timed_update(clock, probe, stream, *, host_work_ns=90_000, device_work_ns=2_340_000):
    """An engine region as the H200 measured it: the host prepares the launch while the GPU is idle,
    the device works, the engine synchronizes once, then the region stops."""
    probe.engine_start(stream)
    clock.now_ns += host_work_ns  # preparing the launch
    if stream is None:
        clock.now_ns += device_work_ns
    else:
        stream.enqueue(device_work_ns)
        stream.synchronize()  # the engine's own final synchronization
    probe.engine_stop(stream)


@pytest.mark.parametrize("cuda", [False, True])
def test_host_and_device_times_grow_by_the_delay_without_a_synchronization(monkeypatch, cuda):
    from .helpers import VirtualClock

    clock = VirtualClock()
    monkeypatch.setattr(planted_delay, "time", clock)  # the busy wait runs on the same clock
    monkeypatch.setitem(sys.modules, "cupy", None)  # the delay never needs CuPy
    delay = 70_000
    measured = {}
    for name, wrap in (("plain", lambda p: p), ("delayed", lambda p: planted_delay.DelayedProbe(p, delay))):
        stream = _FakeStream(clock) if cuda else None
        probe = _TimingProbe(clock)
        _timed_update(clock, wrap(probe), stream)
        measured[name] = (probe.host_ns(), probe.device_ns() if cuda else None, stream.syncs if cuda else 0)
    (host, device, syncs), (host_d, device_d, syncs_d) = measured["plain"], measured["delayed"]
    assert delay <= host_d - host <= delay + 2  # exactly the delay (+ the virtual clock's readings)
    assert syncs_d == syncs  # no synchronization added (the CUPTI verification rounds count them)
    if cuda:
        # the stream is idle after the engine's synchronization: the stop event moves by the delay
        assert delay <= device_d - device <= delay + 2


def test_an_uncalibrated_side_runs_undelayed():
    seen = []

    class Recording(Side):
        def update(self, graph, batch, result, probe):
            seen.append(probe)

    side = planted_delay.PlantedSide.around(Recording("host", "host"), 3.0)
    probe = _Probe([])
    side.update(None, None, None, probe)  # the guard and the warm-up rounds
    side.calibrated(None).update(None, None, None, probe)  # nothing measured: delay 0
    side.calibrated(1.0).update(None, None, None, probe)
    assert seen[0] is probe and seen[1] is probe
    assert isinstance(seen[2], planted_delay.DelayedProbe) and seen[2].delay_ns == 30_000


def test_the_host_wait_lasts_at_least_the_delay():
    start = time.perf_counter_ns()
    planted_delay.host_wait(2_000_000)
    assert time.perf_counter_ns() - start >= 2_000_000


# -- detection by a campaign (virtual clock) ---------------------------------------------------------
@pytest.fixture(scope="module")
def toy():
    return small_graph_input()


def _virtual_campaign(toy, out, monkeypatch, *, seed, plant):
    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing: the whole update and its region
    monkeypatch.setattr(planted_delay, "time", clock)  # the busy wait runs on the same clock
    rng = np.random.default_rng(seed)
    sides = (VirtualSide("host", clock, rng), VirtualSide("host-b", clock, rng))
    spec = planted_delay.PlantSpec("B", "host-b", 3.0) if plant else None
    config = host_config(sides=planted_delay.plant(sides, spec), rounds=21, control=True,
                         planted_delay=None if spec is None else spec.record())
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        CampaignRunner(config, store, inst).run([toy])
    return store


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_a_planted_three_percent_is_detected_and_its_absence_is_not(toy, tmp_path, monkeypatch, seed):
    planted = _virtual_campaign(toy, tmp_path / "planted", monkeypatch, seed=seed, plant=True)
    summary = planted.read_summary()
    cell = summary["cells"][0]
    assert cell["verdict"].startswith("B slower by ")
    assert 1.0 < cell["ratio_lo"] <= cell["ratio"] <= cell["ratio_hi"] < 1.06
    assert 1.015 < cell["ratio"] < 1.045
    # the A/A control (side A against itself) is not planted and must not see a difference
    assert summary["control"]["ratio_lo"] <= 1 <= summary["control"]["ratio_hi"]
    rows = planted.read_rounds()
    timed_b = rows[(rows["cell"] == cell["cell"]) & (rows["role"] == "B") & ~rows["warmup"]]
    warm_b = rows[(rows["cell"] == cell["cell"]) & (rows["role"] == "B") & rows["warmup"]]
    want = planted_delay.calibrated_delay_ns(float(warm_b["engine_host_ms"].median()), 3.0)
    assert want > 0 and (timed_b["planted_delay_ns"] == want).all()
    assert warm_b["planted_delay_ns"].isna().all()  # calibrated on them, not delayed
    assert rows[rows["role"] == "A"]["planted_delay_ns"].isna().all()
    assert rows[rows["cell"].str.endswith(CONTROL_SUFFIX)]["planted_delay_ns"].isna().all()

    clean = _virtual_campaign(toy, tmp_path / "clean", monkeypatch, seed=seed, plant=False).read_summary()
    assert clean["cells"][0]["verdict"] == "no difference detected"
    assert clean["cells"][0]["ratio_lo"] <= 1 <= clean["cells"][0]["ratio_hi"]


# -- the command line ---------------------------------------------------------------------------------
def _args(*argv):
    from bench import perf_ab

    return perf_ab.build_parser().parse_args(["engines", *argv])


def test_the_option_reaches_the_config_the_record_and_the_reproduce_line(tmp_path):
    from bench.engines_cmd import _rebuild_argv, build_config

    args = _args("--sides", "host,host", "--graphs", "uspowergrid", "--plant-delay", "B:3", "--allow-dirty")
    config = build_config(args)
    assert config.sides[0] == HOST_HOST[0] and isinstance(config.sides[1], planted_delay.PlantedSide)
    assert config.sides[1].percent == 3.0 and config.sides[1].label == "host"
    params = config.parameters()
    assert params["planted_delay"] == {"side": "B", "label": "host", "percent": 3.0}
    assert params["sides"] == {"A": "host", "B": "host"}
    argv = _rebuild_argv(args, out=tmp_path)
    assert argv[argv.index("--plant-delay") + 1] == "B:3"
    assert "planted_delay" not in build_config(_args("--sides", "host,host", "--graphs", "uspowergrid")).parameters()


def test_a_bad_plant_is_exit_2_before_any_work(tmp_path, capsys):
    from bench import perf_ab

    code = perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--plant-delay", "host:3",
                         "--out", str(tmp_path), "--allow-dirty", "--no-progress"])
    assert code == 2 and "name the role to delay, A or B" in capsys.readouterr().err
    assert not (tmp_path / "campaign.json").exists()


@pytest.mark.slow
def test_a_planted_campaign_says_so_everywhere(tmp_path, capsys):
    from bench import perf_ab
    from tests.conftest import shared_data_dir

    if shared_data_dir() is None:
        pytest.skip("shared real graphs not found (../shared/data)")
    out = tmp_path / "planted"
    code = perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--batches", "local10k",
                         "--objectives", "0", "--rounds", "9", "--max-foreign-cpu", "1000", "--plant-delay", "B:50",
                         "--out", str(out), "--allow-dirty", "--no-progress", "--data-dir", str(shared_data_dir())])
    err = capsys.readouterr().err
    assert code in (0, 4), err  # 4: the shared box's noise upset the A/A control, not the plant
    assert "PLANTED delay of 50 %" in err
    store = RecordStore(out)
    campaign = store.read_campaign()
    assert campaign["parameters"]["planted_delay"] == {"side": "B", "label": "host", "percent": 50.0}
    assert "--plant-delay B:50" in campaign["reproduce"]
    report = (out / "M7.md").read_text()
    assert "**PLANTED SLOWDOWN — a test of the statistics, not a measurement of the engines.**" in report
    assert "delayed on purpose by 50 %" in report
    cell = next(c for c in store.read_summary()["cells"] if c["cell"] == "uspowergrid/local10k/0")
    assert cell["ratio"] > 1.15, cell  # a 50 % delay, far beyond the noise of 9 paired rounds
    rows = store.read_rounds()
    timed = rows[~rows["warmup"] & (rows["cell"] == cell["cell"])]
    assert (timed.loc[timed["role"] == "B", "planted_delay_ns"] > 0).all()
    assert timed.loc[timed["role"] == "A", "planted_delay_ns"].isna().all()


# -- nothing on the device --------------------------------------------------------------------------
def test_the_hook_has_no_cuda_source_and_cuda_check_only_the_engines():
    assert not list((REPO / "protocol").glob("*.cu"))
    for name in ("SOURCE", "KERNEL", "device_wait", "warm_device_kernel", "_spin_function"):
        assert not hasattr(planted_delay, name), name
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^cuda-check:.*\n\t(.*)$", makefile, re.MULTILINE).group(1)
    assert recipe == "$(PYTHON) -m engines.cuda_check"  # the compile check behind its Ctrl-C guard (e70901f)


def test_calibrating_a_cuda_side_needs_no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # an import of cupy would raise
    side = planted_delay.PlantedSide.around(FUSED_OPERATORS[1], 3.0).calibrated(2.0)
    assert side.delay_ns == 60_000 and side.needs_cuda


def test_a_planted_side_keeps_every_pin_of_its_base():
    """The planted side runs its base's engine configuration: every pinned option, the update
    launch included (it was dropped once, when sides learned +graph / +python)."""
    from protocol.sides import parse_side

    for label in ("cuda:fused+vertex+python", "cuda:operators-host+group+graph", "host"):
        base = parse_side(label)
        planted = planted_delay.PlantedSide.around(base, 10.0)
        assert planted.config == base.config, label
        assert planted.engine_options == base.engine_options, label
