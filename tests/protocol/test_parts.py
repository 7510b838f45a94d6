"""Small parts of the service: contamination, result digest, side parsing, exit codes."""

from __future__ import annotations

import numpy as np
import pytest

from protocol.digest import result_digest
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode, campaign_exit_code
from protocol.monitor import CpuLoadMonitor, CpuReading, judge_contamination, own_process_tree
from protocol.sides import Side, parse_side, parse_sides


# -- contamination ---------------------------------------------------------------------------------
def test_foreign_cpu_is_system_minus_own_over_wall():
    mon = CpuLoadMonitor(min_window_s=0.0)
    a = CpuReading(0, system_busy_s=10.0, own_s=1.0)
    b = CpuReading(int(2e9), system_busy_s=14.0, own_s=2.0)  # 4 s busy, 1 s ours, over 2 s
    mon._readings[:] = [a, b]
    assert mon.foreign_cores(a, b) == pytest.approx(1.5)


def test_short_windows_are_widened_backwards():
    mon = CpuLoadMonitor(min_window_s=1.0)
    old = CpuReading(0, 0.0, 0.0)
    start = CpuReading(int(1.9e9), 3.0, 0.5)
    end = CpuReading(int(2e9), 3.0, 0.5)  # 0.1 s window with no tick: says nothing alone
    mon._readings[:] = [old, start, end]
    assert mon.foreign_cores(start, end) == pytest.approx((3.0 - 0.5) / 2.0)


def test_foreign_cpu_never_negative_and_real_readings_work():
    mon = CpuLoadMonitor(min_window_s=0.0)
    a = CpuReading(0, 5.0, 1.0)
    b = CpuReading(int(1e9), 5.5, 2.0)  # our time counted after the system's: clamp at 0
    mon._readings[:] = [a, b]
    assert mon.foreign_cores(a, b) == 0.0
    live = CpuLoadMonitor()
    r0 = live.read()
    sum(i * i for i in range(200_000))
    r1 = live.read()
    assert live.foreign_cores(r0, r1) >= 0.0
    assert r1.own_s >= r0.own_s


def test_judge_contamination():
    assert judge_contamination(0.5, [], max_foreign_cpu=1.0) is None
    assert judge_contamination(1.5, None, max_foreign_cpu=1.0) == "foreign CPU load 1.50 cores > 1"
    assert judge_contamination(0.0, [12, 13], max_foreign_cpu=1.0) == "foreign GPU process(es): 12, 13"
    assert judge_contamination(None, None, max_foreign_cpu=1.0) is None


def test_own_process_tree_contains_this_process():
    import os

    assert os.getpid() in own_process_tree()


# -- digest ----------------------------------------------------------------------------------------
def test_digest_depends_on_every_value_and_position():
    rng = np.random.default_rng(1)
    d = rng.integers(0, 2**61 - 1, 500, dtype=np.int64)
    p = rng.integers(-1, 500, 500).astype(np.int32)
    base = result_digest(d, p)
    assert base == result_digest(d.copy(), p.copy())
    d2 = d.copy()
    d2[123] += 1
    p2 = p.copy()
    p2[7] = -1 if p2[7] != -1 else 0
    swapped = d.copy()
    swapped[[3, 4]] = swapped[[4, 3]]
    digests = {base, result_digest(d2, p), result_digest(d, p2), result_digest(swapped, p)}
    assert len(digests) == 4 or d[3] == d[4]


def test_digest_matches_a_scalar_reimplementation():
    # the formula written out per element with Python integers (mod 2**64)
    mask = (1 << 64) - 1
    d = np.array([0, 17, 2**61 - 1], dtype=np.int64)
    p = np.array([-1, 0, -1], dtype=np.int32)
    total = 0
    for i, (dv, pv) in enumerate(zip(d.tolist(), p.tolist())):
        x = (dv * 0x9E3779B97F4A7C15 + (pv & 0xFFFFFFFF) * 0xC2B2AE3D27D4EB4F + i * 0x165667B19E3779F9) & mask
        x ^= x >> 30
        x = (x * 0xBF58476D1CE4E5B9) & mask
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & mask
        x ^= x >> 31
        total = (total + x) & mask
    assert result_digest(d, p) == total


def test_digest_shape_mismatch():
    with pytest.raises(ValueError, match="differ in shape"):
        result_digest(np.zeros(3, np.int64), np.zeros(2, np.int32))


@pytest.mark.gpu
def test_device_digest_equals_host_digest():
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(2)
    d = rng.integers(0, 2**61 - 1, 100_003, dtype=np.int64)
    p = rng.integers(-1, 100_003, 100_003).astype(np.int32)
    assert result_digest(cupy.asarray(d), cupy.asarray(p)) == result_digest(d, p)


# -- sides and exit codes ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, backend, engine",
    [("host", "host", "automatic"), ("cuda", "cuda", "automatic"), ("cuda:fused", "cuda", "fused"),
     ("CUDA:Operators", "cuda", "operators"), (" cuda:automatic ", "cuda", "automatic")],
)
def test_parse_side(text, backend, engine):
    side = parse_side(text)
    assert (side.backend, side.cuda_engine, side.label) == (backend, engine, text.strip())


def test_parse_side_pins_the_operators_loop():
    host_loop, device_loop, default = (parse_side(t) for t in
                                       ("cuda:operators-host", "CUDA:Operators-Device", "cuda:operators"))
    assert (host_loop.cuda_engine, host_loop.operators_loop, host_loop.short_name) == \
        ("operators", "host", "operators-host")
    assert device_loop.engine_options == {"cuda_engine": "operators", "operators_loop": "device"}
    assert default.engine_options == {"cuda_engine": "operators"} and default.short_name == "operators"
    with pytest.raises(UsageError, match="cuda:operators-host"):
        parse_side("cuda:operators-graph")


def test_parse_side_pins_the_push_expansion():
    group, host_loop, plain = (parse_side(t) for t in
                               ("cuda:fused+group", "cuda:operators-host+VERTEX", "cuda:fused"))
    assert group.engine_options == {"cuda_engine": "fused", "push_expansion": "group"}
    assert group.short_name == "fused+group" and group.label == "cuda:fused+group"
    assert host_loop.engine_options == {"cuda_engine": "operators", "operators_loop": "host",
                                        "push_expansion": "vertex"}
    assert host_loop.short_name == "operators-host+vertex"
    assert "push_expansion" not in plain.engine_options
    assert parse_side("cuda+group").engine_options == {"cuda_engine": "automatic", "push_expansion": "group"}
    for bad in ("cuda:fused+warp", "cuda:fused+", "host+group", "cuda:fused+group+vertex"):
        with pytest.raises(UsageError):
            parse_side(bad)
    a, b = parse_sides("cuda:fused,cuda:fused+group")
    assert (a.short_name, b.short_name) == ("fused", "fused+group")


def test_parse_sides_and_errors():
    a, b = parse_sides("cuda:fused,cuda:operators")
    assert (a.short_name, b.short_name) == ("fused", "operators")
    assert a.needs_cuda and not Side("host", "host").needs_cuda
    for bad in ("host", "host,host,host", "host,", "gpu,host"):
        with pytest.raises(UsageError):
            parse_sides(bad)


def test_campaign_exit_code_precedence():
    assert campaign_exit_code(["done", "done"]) == ExitCode.OK
    assert campaign_exit_code(["done", "too_noisy"]) == ExitCode.TOO_NOISY
    assert campaign_exit_code(["too_noisy", "guard_failed"]) == ExitCode.CORRECTNESS
    assert campaign_exit_code(["check_failed"]) == ExitCode.CORRECTNESS


def test_foreign_gpu_processes_in_and_out_of_a_container():
    import os

    from protocol.monitor import foreign_gpu_processes
    from protocol.nvml import Nvml

    from .fake_nvml import FakeNvml

    invisible = 2**22 + 12345  # above Linux's pid_max: a PID of another namespace
    fake = FakeNvml(processes=[os.getpid(), invisible])
    nvml = Nvml.load(fake)
    h = nvml.handle()
    # NVML sees our PID: every other entry is foreign, even an invisible one
    assert foreign_gpu_processes(nvml, h, own_context=True) == [invisible]
    # a container: NVML lists host PIDs only; one invisible entry is this process
    fake.processes = [invisible]
    assert foreign_gpu_processes(nvml, h, own_context=True) == []
    assert foreign_gpu_processes(nvml, h, own_context=False) == [invisible]
    fake.processes = [invisible, invisible + 1]
    assert foreign_gpu_processes(nvml, h, own_context=True) == [invisible + 1]
    assert foreign_gpu_processes(None, None) is None
