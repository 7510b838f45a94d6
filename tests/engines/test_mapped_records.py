"""Mapped records (engines/sssp/cuda/mapped.py, issue 27) without a GPU: the switch, the device
apply's plan ending in the record's kernel instead of a download (read when the event buffers
grow, as the apply's other switches), and the captured fused run's graph without copies: the
control block's initial record read by a kernel, the block stored by the run's last block."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.graph import device_apply
from engines.sssp.cuda import fused, mapped, runtime

from .graph.test_apply_sides import _planned, _reserving, _shape
from .test_fused_capture import _LoggingControl, capturing_into_a_log


@pytest.mark.parametrize("parallel", [False, True])
def test_a_mapped_plan_ends_with_the_records_kernel_instead_of_its_download(monkeypatch, parallel):
    # _planned turns the switch off for the sides' tests: its reading is replaced here instead
    monkeypatch.setattr(mapped, "enabled", lambda: False)
    _, copied = _planned(monkeypatch, parallel=parallel, touched=True)
    monkeypatch.setattr(mapped, "enabled", lambda: True)
    scratch, stored = _planned(monkeypatch, parallel=parallel, touched=True)
    assert scratch.mapped_record
    assert [_shape(s) for s in stored[:-1]] == [_shape(s) for s in copied[:-1]]
    assert copied[-1] == ("download", copied[-1][1])
    kind, fn, grid, args, shared = stored[-1]
    assert (kind, fn, grid, shared) == ("kernel", "apply_record_out", 1, 0)
    # the device record, the pinned mirror's address, every slot of it
    assert args[0] is scratch.record and int(args[1]) == scratch.record_host_ptr == 4242
    assert int(args[2]) == scratch.record.size == device_apply.record_length(scratch.num_weights)


def test_the_apply_reads_the_switch_when_the_event_buffers_grow(monkeypatch):
    scratch = _reserving(monkeypatch)
    monkeypatch.setenv(mapped.MAPPED_RECORDS_ENV, "1")
    scratch.reserve(10, 20, 8, stream=nullcontext())
    assert scratch.mapped_record
    monkeypatch.setenv(mapped.MAPPED_RECORDS_ENV, "0")
    scratch.reserve(500, 900, 8, stream=nullcontext())  # rows and entries grow, events fit
    assert scratch.mapped_record
    monkeypatch.setenv(mapped.MAPPED_RECORDS_ENV, "sometimes")
    layout = scratch.layout
    with pytest.raises(errors.InvalidArgumentError, match=mapped.MAPPED_RECORDS_ENV):
        scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert scratch.layout == layout and scratch.mapped_record
    monkeypatch.setenv(mapped.MAPPED_RECORDS_ENV, "off")
    scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert not scratch.mapped_record
    monkeypatch.delenv(mapped.MAPPED_RECORDS_ENV)  # unset: the default, on
    scratch.reserve(500, 900, 50_000, stream=nullcontext())
    assert scratch.mapped_record


class _Control(_LoggingControl):
    host_init_ptr = 11
    device = "ctl"


def test_a_mapped_captured_run_has_no_copies_and_its_own_graph(monkeypatch):
    """With the control kernel: that kernel over one block reading the pinned initial record into
    the device block, then the staging and the fused kernel, and neither copy; the graph is not
    the copied run's (the key differs), and each replays when asked again."""
    log = capturing_into_a_log(monkeypatch)

    def fn(grid, block, args, stream=None):
        log.append(("fused", grid, stream))

    def sized(grid, block, args, stream=None):
        log.append(("staging", stream))

    def control_in(grid, block, args, stream=None):
        assert (grid, block) == ((1,), (runtime.BLOCK_SIZE,))
        log.append(("control_in", int(args[0]), args[1], stream))

    control = _Control(log)
    for kernel in (control_in, None, control_in, None):
        assert fused._run_captured(fn, 5, ("a",), control, "s", 0, "int32", None, (sized, ("sizes",), ((1,), (1024,))),
                                   control_in=kernel) == "record"
    assert log == [("control_in", 11, "ctl", "capture"), ("staging", "capture"), ("fused", (5,), "capture"),
                   ("replay", "g0"),
                   ("upload", "capture"), ("staging", "capture"), ("fused", (5,), "capture"),
                   ("download", "capture"), ("replay", "g1"),
                   ("replay", "g0"), ("replay", "g1")]


def test_the_fused_module_holds_the_control_kernel_apart_from_the_cooperative_ones():
    """The grid is worked out over the cooperative kernels only; the module compiles the control
    kernel too (make cuda-check finds it as a template kernel of fused.cu)."""
    assert fused.CONTROL_IN not in fused.KERNELS
    from engines.sssp.cuda import compile_check

    source = (runtime.SOURCE_DIR / fused.SOURCE).read_text()
    assert fused.CONTROL_IN in compile_check.template_kernels(source)
    apply_source = open(device_apply.SOURCE).read()
    assert "apply_record_out" in compile_check.template_kernels(apply_source)
    assert "apply_record_out" in device_apply.KERNELS
