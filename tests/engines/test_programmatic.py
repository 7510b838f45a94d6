"""The programmatic-launch switch of the operators device loop (engines/sssp/cuda/programmatic.py)
without a GPU: the environment rule, the device rule and the kernel-parameter block handed to
cuLaunchKernelEx (the GPU tests run the launches themselves)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.sssp.cuda import programmatic


def test_off_unless_asked(monkeypatch):
    monkeypatch.delenv(programmatic.ENV, raising=False)
    assert programmatic.requested() is programmatic.DEFAULT is False
    monkeypatch.setenv(programmatic.ENV, "1")
    assert programmatic.requested()
    monkeypatch.setenv(programmatic.ENV, "0")
    assert not programmatic.requested()
    for bad in ("yes", "2", "true"):
        monkeypatch.setenv(programmatic.ENV, bad)
        with pytest.raises(errors.InvalidArgumentError, match="ENGINES_OPERATORS_PDL must be 0 or 1"):
            programmatic.requested()


def test_only_from_hopper_on(monkeypatch):
    monkeypatch.setenv(programmatic.ENV, "1")
    assert programmatic.usable(9) and programmatic.usable(10)
    assert not programmatic.usable(8) and not programmatic.usable(0)
    monkeypatch.setenv(programmatic.ENV, "0")
    assert not programmatic.usable(9)


def test_argument_block_points_at_each_pointer_value():
    args = [SimpleNamespace(data=SimpleNamespace(ptr=p)) for p in (0x7F0000001000, 16, 2**63 + 5)]
    values, addresses = programmatic.argument_block(args)
    assert values.tolist() == [0x7F0000001000, 16, 2**63 + 5]
    assert addresses.tolist() == [values.ctypes.data + 8 * i for i in range(3)]
    # reading back through each address gives the argument (what the driver does)
    import ctypes

    got = [ctypes.c_uint64.from_address(int(a)).value for a in addresses]
    assert got == values.tolist()
    assert np.dtype(values.dtype) == np.uint64
