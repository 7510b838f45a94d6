"""Clock observation, judgement and the opt-in lock, with a scripted fake NVML (protocol.md §4)."""

from __future__ import annotations

import signal
import time

import pytest

from protocol.clocks import (
    ClockLock,
    ClockSampler,
    LockRequest,
    RoundClocks,
    judge_round_clocks,
    summarize_window,
)
from protocol.errors import EnvironmentProblem, UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.nvml import Nvml, Sample, reason_names

from .fake_nvml import NVML_ERROR_NO_PERMISSION, NVML_ERROR_NOT_SUPPORTED, FakeNvml


def sample(t, sm=1980, mem=2619, reasons=0, pstate=0, temp=40, power=200.0):
    return Sample(t, sm, mem, reasons, pstate, temp, power, 50)


def judge(clocks, **kw):
    kw = {"max_sm_mhz": 1980, "reference_mem_mhz": 2619, "min_clock_fraction": 0.9, **kw}
    return judge_round_clocks(clocks, **kw)


# -- summarizing and judging a window -------------------------------------------------------------
def test_summarize_window_folds_readings():
    inside = [sample(2, sm=1900, temp=50, power=300.0), sample(3, sm=1700, reasons=0x4)]
    c = summarize_window(sample(1), inside, sample(4, reasons=0x1))
    assert c.sm_min_mhz == 1700
    assert c.sm_median_mhz == pytest.approx((1900 + 1980) / 2)
    assert c.reasons == 0x4 | 0x1
    assert c.samples_in_window == 2
    assert (c.temperature_peak_c, c.power_peak_w) == (50, 300.0)


def test_short_round_is_decided_by_before_and_after():
    c = summarize_window(sample(1), [], sample(2, reasons=0x8))
    assert c.samples_in_window == 0
    assert judge(c) == "clock event: hw_slowdown"


@pytest.mark.parametrize("reason", [0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100])
def test_every_throttle_reason_rejects(reason):
    c = summarize_window(sample(1), [sample(2, reasons=reason)], sample(3))
    assert judge(c).startswith("clock event: ")


def test_idle_and_application_clocks_are_benign():
    c = summarize_window(sample(1, reasons=0x1), [sample(2, reasons=0x2)], sample(3, reasons=0x3))
    assert judge(c) is None


def test_sm_clock_below_fraction_rejects():
    c = summarize_window(sample(1), [sample(2, sm=1781)], sample(3))  # 0.9 x 1980 = 1782
    assert "below 0.9 x max 1980" in judge(c)
    ok = summarize_window(sample(1), [sample(2, sm=1782)], sample(3))
    assert judge(ok) is None


def test_memory_clock_change_rejects():
    c = summarize_window(sample(1), [sample(2, mem=1593)], sample(3))
    assert "memory clock 1593" in judge(c)


def test_off_lock_rejects():
    c = summarize_window(sample(1, sm=1500), [sample(2, sm=1400)], sample(3, sm=1500))
    assert "off the locked 1500" in judge(c, min_clock_fraction=0.5, locked_sm_mhz=1500)


def test_unknown_clocks_never_reject():
    unknown = RoundClocks(None, None, None, None, None, 0, None, None)
    assert judge(unknown) is None


def test_reason_names():
    assert reason_names(0x4 | 0x8) == "sw_power_cap|hw_slowdown"
    assert reason_names(0) == "none"
    assert reason_names(None) is None
    assert reason_names(0x1000) == "0x1000"


# -- the sampler ------------------------------------------------------------------------------------
def test_sampler_collects_samples_in_a_window():
    fake = FakeNvml(sm=1755)
    nvml = Nvml.load(fake)
    with ClockSampler(nvml, nvml.handle(), interval_s=0.001) as sampler:
        t0 = time.perf_counter_ns()
        time.sleep(0.05)
        t1 = time.perf_counter_ns()
    window = sampler.between(t0, t1)
    assert len(window) >= 5
    assert all(t0 < s.t_ns < t1 and s.sm_mhz == 1755 for s in window)


# -- the lock -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [("base", LockRequest("base")), ("MAX", LockRequest("max")), ("1500", LockRequest(1500)),
     ("1500,2619", LockRequest(1500, 2619))],
)
def test_lock_request_parse(text, expected):
    assert LockRequest.parse(text) == expected


@pytest.mark.parametrize("text", ["", "fast", "1500,", "-3", "1,2,3", "0"])
def test_lock_request_rejects_nonsense(text):
    with pytest.raises(UsageError):
        LockRequest.parse(text)


def test_lock_max_sets_then_resets_and_restores_handlers():
    fake = FakeNvml(sm=1400, max_sm=1980, max_mem=2619)
    nvml = Nvml.load(fake)
    previous = signal.getsignal(signal.SIGTERM)
    with ClockLock(nvml, nvml.handle(), LockRequest("max")) as lock:
        assert fake.locked_sm == (1980, 1980) and fake.locked_mem == (2619, 2619)
        assert signal.getsignal(signal.SIGTERM) == lock._on_signal
        assert lock.verify(nvml.sample(nvml.handle()))
    assert fake.locked_sm is None and fake.locked_mem is None
    assert len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1
    assert len(fake.called("nvmlDeviceResetMemoryLockedClocks")) == 1
    assert signal.getsignal(signal.SIGTERM) == previous
    lock.release()  # idempotent: no second reset
    assert len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1


def test_lock_base_uses_default_application_clocks():
    fake = FakeNvml(base_sm=1590, base_mem=2619)
    nvml = Nvml.load(fake)
    with ClockLock(nvml, nvml.handle(), LockRequest("base")) as lock:
        assert fake.locked_sm == (1590, 1590)
        assert lock.record()["sm_mhz"] == 1590


def test_lock_not_held_under_load_is_recorded():
    fake = FakeNvml()
    nvml = Nvml.load(fake)
    with ClockLock(nvml, nvml.handle(), LockRequest(1500)) as lock:
        fake.sm = 1300  # the driver did not hold the lock under load
        assert not lock.verify(nvml.sample(nvml.handle()))
        assert lock.record()["held_under_load"] is False


def test_lock_without_permission_is_exit_3_and_changes_nothing():
    fake = FakeNvml()
    fake.fail["nvmlDeviceSetGpuLockedClocks"] = NVML_ERROR_NO_PERMISSION
    nvml = Nvml.load(fake)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(EnvironmentProblem, match="administrative rights") as info:
        ClockLock(nvml, nvml.handle(), LockRequest("max")).acquire()
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert fake.called("nvmlDeviceResetGpuLockedClocks") == []
    assert signal.getsignal(signal.SIGTERM) == previous


def test_memory_lock_not_supported_keeps_gpu_lock():
    fake = FakeNvml()
    fake.fail["nvmlDeviceSetMemoryLockedClocks"] = NVML_ERROR_NOT_SUPPORTED
    nvml = Nvml.load(fake)
    with ClockLock(nvml, nvml.handle(), LockRequest(1500, 2619)) as lock:
        assert fake.locked_sm == (1500, 1500)
        assert lock.record()["memory_note"] == "memory clock lock not supported by this GPU"
    assert fake.called("nvmlDeviceResetMemoryLockedClocks") == []
    assert fake.locked_sm is None


def test_memory_lock_refused_resets_gpu_lock():
    fake = FakeNvml()
    fake.fail["nvmlDeviceSetMemoryLockedClocks"] = NVML_ERROR_NO_PERMISSION
    nvml = Nvml.load(fake)
    with pytest.raises(EnvironmentProblem, match="nvmlDeviceSetMemoryLockedClocks"):
        ClockLock(nvml, nvml.handle(), LockRequest(1500, 2619)).acquire()
    assert fake.locked_sm is None
    assert len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1


def test_signal_handler_resets_then_hands_on_to_previous_handler():
    fake = FakeNvml()
    nvml = Nvml.load(fake)
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(fake.locked_sm))
    try:
        lock = ClockLock(nvml, nvml.handle(), LockRequest("max")).acquire()
        signal.raise_signal(signal.SIGTERM)
        assert seen == [None]  # the clocks were reset before the previous handler ran
        assert not lock._active
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- instruments ----------------------------------------------------------------------------------
def test_instruments_lock_without_permission_fails_before_measuring():
    fake = FakeNvml()
    fake.fail["nvmlDeviceSetGpuLockedClocks"] = NVML_ERROR_NO_PERMISSION
    with pytest.raises(EnvironmentProblem) as info:
        Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest("max"))
    assert info.value.exit_code == 3
    assert fake.called("nvmlShutdown")
    assert fake.called("nvmlDeviceGetClockInfo") == []  # nothing was sampled


def test_instruments_without_nvml_degrade_to_unknown():
    fake = FakeNvml()
    fake.fail["nvmlInit"] = 1
    with Instruments.open(gpu=True, nvml_module=fake) as inst:
        assert inst.clock_mode == "unknown"
        inst.set_thresholds(min_clock_fraction=0.9, max_foreign_cpu=1e9)  # shared CI box
        window = inst.begin_round()
        fields, reason = inst.end_round(window)
        assert reason is None and fields["sm_clock_min_mhz"] is None
    with pytest.raises(EnvironmentProblem, match="needs NVML"):
        Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest("max"))


def test_instruments_observe_records_the_window_and_foreign_processes():
    fake = FakeNvml(processes=[4242])
    with Instruments.open(gpu=True, nvml_module=fake, sample_interval_s=0.001) as inst:
        assert inst.clock_mode == "observe"
        inst.set_thresholds(min_clock_fraction=0.9, max_foreign_cpu=1e9)
        inst.after_warmup()
        window = inst.begin_round()
        time.sleep(0.02)
        fields, reason = inst.end_round(window)
    assert fields["foreign_gpu_pids"] == "4242"
    assert reason == "foreign GPU process(es): 4242"
    assert fields["nvml_samples"] >= 2
    assert fields["sm_clock_min_mhz"] == 1980


# -- a failure that is no NVML error, once the GPU clocks are locked -------------------------------
class _Interrupted(BaseException):
    """Stands for Ctrl-C (KeyboardInterrupt) arriving inside an NVML call."""


@pytest.mark.parametrize("error", [AttributeError("module 'pynvml' has no attribute 'nvmlDeviceSetMemoryLockedClocks'"),
                                   _Interrupted()])
def test_a_memory_lock_failing_otherwise_than_by_nvml_still_resets_the_gpu_lock(error):
    # only NVMLError reset the GPU lock: anything else (an older binding without the function,
    # Ctrl-C) left the GPU locked until interpreter exit
    fake = FakeNvml()

    def fails(handle, lo, hi):
        raise error

    fake.nvmlDeviceSetMemoryLockedClocks = fails
    nvml = Nvml.load(fake)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(type(error)):
        ClockLock(nvml, nvml.handle(), LockRequest(1500, 2619)).acquire()
    assert fake.locked_sm is None
    assert len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1
    assert signal.getsignal(signal.SIGTERM) == previous


def test_instruments_that_fail_to_open_after_locking_reset_the_lock_before_shutting_nvml():
    # Instruments.open reads the device after the lock: a failure there left the GPU locked with
    # NVML open, to be reset only at interpreter exit (and a failed acquire shut NVML down first,
    # so that the exit hook's reset could no longer reach the device)
    fake = FakeNvml()

    def fails(handle):
        raise RuntimeError("the driver went away")

    fake.nvmlDeviceGetName = fails
    with pytest.raises(RuntimeError, match="the driver went away"):
        Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest("max"))
    assert fake.locked_sm is None
    names = [name for name, _ in fake.calls]
    assert names.index("nvmlDeviceResetGpuLockedClocks") < names.index("nvmlShutdown")


def test_a_signal_handler_installed_outside_python_does_not_stop_the_reset(monkeypatch):
    # signal.getsignal says None for a handler installed outside Python (an embedding program, a
    # C library): the release then called signal.signal(SIGTERM, None), a TypeError after the reset,
    # and a SIGTERM would have been swallowed (neither callable nor SIG_DFL) instead of ending us
    fake = FakeNvml()
    nvml = Nvml.load(fake)
    real = signal.getsignal
    saved = real(signal.SIGTERM)
    monkeypatch.setattr(signal, "getsignal", lambda signum: None if signum == signal.SIGTERM else real(signum))
    try:
        lock = ClockLock(nvml, nvml.handle(), LockRequest("max")).acquire()
        assert lock._previous_handlers[signal.SIGTERM] is signal.SIG_DFL  # what a signal is handed on to
        lock.release()
        assert fake.locked_sm is None
        assert real(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, saved)
