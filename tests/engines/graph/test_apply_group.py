"""The device apply's lanes per touched row (``ENGINES_APPLY_GROUP``, device_apply.cu ``Group``)
without a GPU: the switch's reading (the degree rule unless set; a bad value named, never a traceback),
the degree rule's widths, and the plan: both row kernels of both sides take the same shift as
their last argument, their grids are sized for a group per event, and a captured commit's plan
key changes with the width. The bytes each width writes are checked on the GPU
(tests/gpu/test_apply_group.py)."""

from __future__ import annotations

import pytest

from engines import errors
from engines.graph import device_apply

from tests.switch_env import set_switch

from .test_apply_sides import _planned


@pytest.mark.parametrize("text, rule", [(None, "degree"), ("", "degree"), (" Warp ", "warp"), ("degree", "degree"),
                                        ("1", 1), ("4", 4), ("32", 32)])
def test_the_switch(monkeypatch, text, rule):
    set_switch(monkeypatch, device_apply.GROUP_ENV, text)
    assert device_apply.group_rule() == rule


@pytest.mark.parametrize("text", ["3", "64", "0", "-4", "auto", "4 lanes"])
def test_a_bad_value_is_named(monkeypatch, text):
    monkeypatch.setenv(device_apply.GROUP_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=f"{device_apply.GROUP_ENV}=.*warp, degree or a width"):
        device_apply.group_rule()


@pytest.mark.parametrize("n, m, width", [
    (1_090_920, 3_083_796, 4),    # roadNet-PA: 2.8 arcs a vertex, rounded up to 3 -> 4
    (114_599, 239_332, 4),        # luxembourg_osm: 2.1 -> 3 -> 4
    (1000, 1000, 4),              # one arc a vertex: the smallest group
    (4039, 176_000, 32),          # the dense random graph: 44 -> the whole warp
    (100, 1500, 16),              # 15 -> 16
    (100, 1600, 16),              # 16 exactly
    (100, 1700, 32),              # 17 -> 32
    (100, 700, 8),                # 7 -> 8
    (100, 500, 8),                # 5 -> 8
    (0, 0, 4), (5, 0, 4),         # no rows, no arcs: the smallest
])
def test_the_degree_rule(monkeypatch, n, m, width):
    monkeypatch.setenv(device_apply.GROUP_ENV, "degree")
    assert device_apply.group_shift(n, m) == width.bit_length() - 1


@pytest.mark.parametrize("text, shift", [(None, 2), ("warp", 5), ("1", 0), ("8", 3), ("degree", 2)])
@pytest.mark.parametrize("parallel", [False, True])
def test_both_row_kernels_of_both_sides_take_the_shift(monkeypatch, text, shift, parallel):
    """10 vertices, 20 arcs (degree: 2 -> 4 lanes), a captured plan (sized for the reserved event
    capacity): each row kernel's last argument is the shift and its grid covers capacity << shift
    threads; apply_keys is sized as before."""
    set_switch(monkeypatch, device_apply.GROUP_ENV, text)
    scratch, steps = _planned(monkeypatch, parallel, touched=False, blocks=lambda items, device: items)
    cap = scratch.event_cap
    kernels = [step for step in steps if isinstance(step, tuple) and step[0] == "kernel"]
    rows = [step for step in kernels if step[1] in ("apply_decide", "apply_rebuild")]
    assert sorted(step[1] for step in rows) == ["apply_decide"] * 2 + ["apply_rebuild"] * 2
    for step in rows:
        assert int(step[3][-1]) == shift and step[2] == cap << shift
    keys = next(step for step in kernels if step[1] == "apply_keys")
    assert keys[2] == cap


def test_a_captured_commit_is_planned_again_for_another_width(monkeypatch):
    """The shift is a kernel argument: a captured commit made for one width is not replayed for
    another (the plan key changes), and the same width gives the same key (the commit reads the
    width once and passes it to the key and the plan)."""
    from types import SimpleNamespace

    cur = SimpleNamespace(serial=1, num_vertices=10, num_edges=20)
    target = SimpleNamespace(serial=2)
    scratch = SimpleNamespace(layout=3, arena=SimpleNamespace(serial=4))
    keys = {}
    for text in ("warp", "1", "warp", "degree"):
        monkeypatch.setenv(device_apply.GROUP_ENV, text)
        shift = device_apply.group_shift(cur.num_vertices, cur.num_edges)
        keys.setdefault(text, set()).add(device_apply._plan_key(cur, target, 10, scratch, shift))
    assert len(keys["warp"]) == 1 and len({next(iter(v)) for v in keys.values()}) == 3


def test_the_commit_reads_the_width_first(monkeypatch):
    """A bad value is refused by the commit before it reaches the device or the graph's buffers."""
    from types import SimpleNamespace

    monkeypatch.setenv(device_apply.GROUP_ENV, "3")
    monkeypatch.setattr(device_apply, "cupy_module", lambda: pytest.fail("the device was reached first"))
    dgraph = SimpleNamespace(current=SimpleNamespace(num_vertices=10, num_edges=20))
    with pytest.raises(errors.InvalidArgumentError, match=device_apply.GROUP_ENV):
        device_apply.commit(dgraph, SimpleNamespace(n_after=10, size=5), (1,), (1,), "stream")
