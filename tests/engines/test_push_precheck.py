"""The racy pre-check's switch without a GPU (kernels.cuh push_list's ``filter``, issue 34;
``ENGINES_PUSH_PRECHECK``): its reading (off unless 1 / on, a bad value named), the bit it puts in
the push argument both engines' kernels take (above every other field, taken off by push_list
before the fields are read) and the run choice that carries it. The GPU side (the host's bytes
with the pre-check off) is tests/gpu/test_push_precheck.py."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.sssp.cuda import chains, fused, operators, push
from tests.switch_env import set_switch

KERNELS = Path(push.__file__).with_name("kernels.cuh")


@pytest.mark.parametrize("text, on", [(None, False), ("", False), ("1", True), ("on", True), ("0", False),
                                      ("off", False), (" OFF ", False)])
def test_the_switch(monkeypatch, text, on):
    set_switch(monkeypatch, push.PRECHECK_ENV, text)
    assert push.precheck() is on


@pytest.mark.parametrize("engine", [fused, operators])
def test_a_bad_value_is_refused_by_the_run_choice(monkeypatch, engine):
    monkeypatch.setenv(push.PRECHECK_ENV, "sometimes")
    with pytest.raises(errors.InvalidArgumentError, match=push.PRECHECK_ENV):
        engine.run_choice(SimpleNamespace(push_expansion="group", batch_changes=0))


@pytest.mark.parametrize("engine", [fused, operators])
@pytest.mark.parametrize("update", [True, False])
def test_the_run_choice_carries_it(monkeypatch, engine, update):
    """Both engines, update() and compute() alike; the module variant does not change."""
    plan = SimpleNamespace(push_expansion="group", batch_changes=0)
    monkeypatch.setenv(push.PRECHECK_ENV, "1")
    kept = engine.run_choice(plan, update)
    monkeypatch.delenv(push.PRECHECK_ENV, raising=False)
    dropped = engine.run_choice(plan, update)
    assert kept.precheck is True and dropped.precheck is False
    assert dropped.defines == kept.defines


@pytest.mark.parametrize("far", [False, True])
@pytest.mark.parametrize("hops, degree", [(0, chains.DEFAULT_DEGREE), (2, 4), (255, 255)])
@pytest.mark.parametrize("expansion", ["group", "vertex", "batched"])
def test_the_bit_sits_above_every_field(expansion, hops, degree, far):
    """NO_PRECHECK_BIT (bit 30) only when the pre-check is dropped; the other fields and the far
    queue's bit stay as they were; still a u32."""
    kept = chains.push_argument(expansion, hops, degree, far)
    dropped = chains.push_argument(expansion, hops, degree, far, precheck=False)
    assert chains.NO_PRECHECK_BIT == 1 << 30 and dropped == kept | chains.NO_PRECHECK_BIT
    assert not kept & chains.NO_PRECHECK_BIT
    assert chains.NO_PRECHECK_BIT > 1 << (3 * chains.FIELD_BITS)  # above the chains' fields
    assert 0 <= dropped < 2 ** 32


@pytest.mark.parametrize("precheck", [True, False])
def test_the_fused_kernels_get_it_in_their_push_argument(precheck):
    plan = SimpleNamespace(num_vertices=5, source=0, device_delta=10, push_expansion="group", batch_changes=0,
                           packing=SimpleNamespace(bits=3, no_parent=7, bound=100))
    argument = int(fused._scalars(plan, np.int32, (0, chains.DEFAULT_DEGREE), False, precheck)[6])
    assert bool(argument & chains.NO_PRECHECK_BIT) is not precheck
    assert argument & ~chains.NO_PRECHECK_BIT == push.max_shift("group")


def test_the_kernels_take_the_bit_off_before_the_fields_and_gate_the_filter():
    """kernels.cuh's bit is the host's, push_list clears it with the far queue's before the group
    shift (and the chains' limits) are read, and the filter needs it clear in both spellings."""
    source = KERNELS.read_text()
    bit = re.search(r"#define SSSP_NO_PRECHECK_BIT (0x[0-9a-f]+)u", source)
    assert bit and int(bit.group(1), 16) == chains.NO_PRECHECK_BIT
    body = source[source.index("__device__ __forceinline__ void push_list("):]
    clear = body.index("max_shift &= ~(SSSP_FAR_QUEUE_BIT | SSSP_NO_PRECHECK_BIT);")
    assert clear < body.index("push_group_shift(")
    filters = re.findall(r"const bool filter = (.*);", body[:body.index("#if SSSP_BLOCK_APPEND")])
    assert len(filters) == 2 and all(f.startswith("precheck && ") for f in filters)


@pytest.mark.parametrize("precheck", ["1", "0"])
def test_the_operators_kernels_get_it_in_their_push_argument(monkeypatch, precheck):
    """operators.push_argument (what each operators run hands its kernels) from the run choice:
    the bit exactly when the switch is off, never the far queue's."""
    monkeypatch.setenv(push.PRECHECK_ENV, precheck)
    plan = SimpleNamespace(push_expansion="group", batch_changes=10 ** 6)
    argument = int(operators.push_argument(plan, operators.run_choice(plan)))
    assert bool(argument & chains.NO_PRECHECK_BIT) is (precheck == "0")
    assert not argument & chains.FAR_QUEUE_BIT
