"""The update's host path, made cheaper without changing what it computes: the switches' raw
read (switches.raw), the run choices and plans kept between updates (engines/sssp/kept.py) and the
control block's fields read at once (fused._values). Their oracles are the slow readings they
replace: ``os.environ.get``, a choice worked out from scratch, the structured record's fields."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import errors
from engines.sssp.cuda import appends, chains, fused, mapped, operators, switches, variants, workspace
from engines.sssp.kept import Kept

from .fake_cupy import FakeCupy
from engines.sssp.packing import decide_packing
from engines.sssp.plan import PUSH_EXPANSIONS, Plan

from tests.switch_env import set_switch

NAME = "ENGINES_TEST_HOST_PATH_SWITCH"
SWITCH_NAMES = variants.SWITCHES + (fused.SOLO_ENV, fused.CAPTURE_ENV, mapped.MAPPED_RECORDS_ENV,
                                     fused.POLL_RECORD_ENV)


@pytest.mark.parametrize("value", [None, "", "1", " On ", "0", "16384", "é-ü", "a=b"])
def test_the_raw_read_is_what_os_environ_gives(monkeypatch, value):
    set_switch(monkeypatch, NAME, value)
    assert switches.raw(NAME) == os.environ.get(NAME, "")


def test_the_raw_read_follows_every_change(monkeypatch):
    monkeypatch.setenv(NAME, "1")
    assert switches.raw(NAME) == "1"
    os.environ[NAME] = "2"
    assert switches.raw(NAME) == "2"
    monkeypatch.delenv(NAME)
    assert switches.raw(NAME) == ""


def test_without_the_posix_dictionary_the_read_is_os_environ_get(monkeypatch):
    monkeypatch.setenv(NAME, "7")
    asked = []
    real_get = os.environ.get

    def spy(name, default=None):
        asked.append(name)
        return real_get(name, default)

    monkeypatch.setattr(os.environ, "get", spy)
    assert switches.raw(NAME) == "7" and asked == []  # POSIX: the dictionary, not os.environ.get
    monkeypatch.setattr(switches.os, "name", "not-posix")
    assert switches.raw(NAME) == "7" and asked == [NAME]


NAMES = (NAME, NAME + "_B", NAME + "_C")


@pytest.mark.parametrize("values", [(None, None, None), ("1", None, ""), (" On ", "16384", "é-ü"), ("", "", "a=b")])
def test_the_values_read_at_once_are_what_os_environ_gives(monkeypatch, values):
    """switches.raw_values as a key: each value decodes to os.environ.get's (unset reads None, an
    empty value b"": two keys for one parse, never one key for two values)."""
    for name, value in zip(NAMES, values):
        set_switch(monkeypatch, name, value)
    got = switches.raw_values(NAMES)
    assert [("" if v is None else os.fsdecode(v)) for v in got] == [os.environ.get(n, "") for n in NAMES]
    assert [v is None for v in got] == [value is None for value in values]


@given(st.lists(st.sampled_from([None, "", "0", "1", "on", "16"]), min_size=6, max_size=6))
@settings(max_examples=60, deadline=None)
def test_two_readings_are_equal_exactly_when_no_value_changed(values):
    before, after = values[:3], values[3:]
    with pytest.MonkeyPatch.context() as mp:  # undone after each example
        for name, value in zip(NAMES, before):
            set_switch(mp, name, value)
        first = switches.raw_values(NAMES)
        for name, value in zip(NAMES, after):
            set_switch(mp, name, value)
        assert (switches.raw_values(NAMES) == first) == (before == after)


def test_without_the_posix_dictionary_the_values_are_os_environ_gets(monkeypatch):
    monkeypatch.setenv(NAME, "7")
    monkeypatch.delenv(NAMES[1], raising=False)
    monkeypatch.setattr(switches.os, "name", "not-posix")
    assert switches.raw_values(NAMES[:2]) == ("7", "")


def _plan(expansion: str, batch_changes: int) -> Plan:
    return Plan(source=0, objective=0, num_vertices=1000, max_weight=100, delta=10,
                packing=decide_packing(100, 1000), push_expansion=expansion, batch_changes=batch_changes)


def _fresh(module, plan, update):
    """The choice worked out from scratch (empty tables for the call; the kept ones restored)."""
    saved = variants._choices, fused._choices
    variants._choices, fused._choices = Kept(), Kept()
    try:
        return module.run_choice(plan, update)
    finally:
        variants._choices, fused._choices = saved


SETTINGS = st.fixed_dictionaries({name: st.sampled_from([None, "0", "1", "on", "2"]) for name in SWITCH_NAMES})


@settings(max_examples=150, deadline=None)
@given(settings_=st.lists(SETTINGS, min_size=1, max_size=4), expansion=st.sampled_from(PUSH_EXPANSIONS),
       batch=st.sampled_from([0, 100, appends.min_batch_changes("fused"), 10 ** 6]),
       engine=st.sampled_from(["fused", "operators"]), update=st.booleans())
def test_a_kept_choice_is_the_one_worked_out_anew(settings_, expansion, batch, engine, update):
    """Switches changed between runs (as an A/B does between batches) give each run the choice,
    or the error, that reading them afresh gives."""
    module = fused if engine == "fused" else operators
    plan = _plan(expansion, batch)
    with pytest.MonkeyPatch.context() as mp:  # undone after each example
        for setting in settings_ + settings_[:1]:  # the first again: from the kept choices
            for name, value in setting.items():
                set_switch(mp, name, value)
            try:
                expected = _fresh(module, plan, update)
            except errors.InvalidArgumentError as exc:
                with pytest.raises(errors.InvalidArgumentError) as caught:
                    module.run_choice(plan, update)
                assert str(caught.value) == str(exc)
                continue
            assert module.run_choice(plan, update) == expected
            assert module.run_choice(plan, update) == expected


def test_a_changed_default_is_not_answered_from_a_kept_choice(monkeypatch):
    for name in SWITCH_NAMES:
        monkeypatch.delenv(name, raising=False)
    plan = _plan("group", 10 ** 6)
    before = operators.run_choice(plan)
    monkeypatch.setattr(chains, "OPERATORS_DEFAULT_HOPS", 3)
    after = operators.run_choice(plan)
    assert after.chain_limits[0] == 3 != before.chain_limits[0]
    monkeypatch.setattr(chains, "DEFAULT_DEGREE", 7)
    assert operators.run_choice(plan).chain_limits == (3, 7)


def test_a_table_keeps_what_was_made_refuses_again_and_is_bounded():
    table = Kept(limit=4)
    made = []
    assert table.get("a", lambda: made.append("a") or 1) == 1
    assert table.get("a", lambda: made.append("again") or 2) == 1 and made == ["a"]

    def refuse():
        made.append("refused")
        raise errors.InvalidArgumentError("bad")

    for _ in range(2):  # a refusal keeps nothing: asked again, refused again
        with pytest.raises(errors.InvalidArgumentError):
            table.get("b", refuse)
    assert made == ["a", "refused", "refused"] and len(table) == 1
    for i in range(10):
        table.get(i, lambda i=i: i + 100)
        assert len(table) <= 4
    assert table.get(9, lambda: 0) == 109


@pytest.mark.parametrize("vertex_dtype", [np.int32, np.int64])
def test_the_control_values_are_the_records_fields(vertex_dtype):
    dtype = workspace.fused_control_dtype(vertex_dtype)
    rng = np.random.default_rng(5)
    host = np.frombuffer(rng.integers(0, 256, dtype.itemsize, dtype=np.uint8).tobytes(), dtype=dtype).copy()
    record = host[0]
    values = fused._values(record)
    assert list(values) == list(dtype.names)
    for name in dtype.names:
        assert np.array_equal(np.asarray(values[name]), np.asarray(record[name])), name
    assert fused.grid_syncs(values, update=True, packed=True) == fused.grid_syncs(record, update=True, packed=True)


@pytest.mark.parametrize("layout", sorted(workspace.CONTROL_LAYOUTS))
@pytest.mark.parametrize("vertex_dtype", [np.int32, np.int64])
def test_the_initial_record_is_the_structured_assignments(monkeypatch, layout, vertex_dtype):
    """stage_initial's byte copy and field writes give the bytes of the structured assignment it
    replaced (zeros, every minimum slot empty, the fields set), also over a stale record."""
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    monkeypatch.setattr(workspace, "_pinned_array", lambda nbytes, dtype, count: (np.zeros(count, dtype), 0))
    block = workspace.ControlBlock(layout, vertex_dtype, 0)
    names = [n for n in ("base_generation", "num_heads", "solo_limit", "delta") if n in block.dtype.names]
    rng = np.random.default_rng(11)
    for _ in range(5):
        block.host_init.view(np.uint8)[:] = rng.integers(0, 256, block.nbytes, dtype=np.uint8)  # stale
        fields = {name: block.dtype[name].type(rng.integers(0, 1 << 20)) for name in names}
        block.stage_initial(**fields)
        expected = np.zeros(1, dtype=block.dtype)
        expected[...] = np.zeros((), dtype=block.dtype)
        expected["minimum"] = workspace.EMPTY_MIN
        for name, value in fields.items():
            expected[name] = value
        assert block.host_init.tobytes() == expected.tobytes()


def test_a_kept_plan_is_the_one_made_anew_and_a_bad_size_still_raises(monkeypatch):
    from engines.sssp import api

    monkeypatch.setattr(api, "_plans", Kept())
    args = (3, 0, 1000, 100, 10, "group", 100)
    plan = api._update_plan(*args)
    assert api._update_plan(*args) is plan
    assert plan == Plan(source=3, objective=0, num_vertices=1000, max_weight=100, delta=10,
                        packing=decide_packing(100, 1000), push_expansion="group", batch_changes=100)
    too_heavy = (3, 0, 1000, (1 << 60) // 500, 10, "group", 100)
    for _ in range(2):  # refused every time: nothing kept
        with pytest.raises(errors.InvalidArgumentError, match="too large for 61-bit distances"):
            api._update_plan(*too_heavy)
    assert len(api._plans) == 1
    for i in range(api._plans.limit + 5):
        api._update_plan(3, 0, 1000 + i, 100, 10, "group", 100)
    assert len(api._plans) <= api._plans.limit


def test_a_graph_already_on_the_asked_device_is_returned_at_once():
    """to_device's steady state (every CUDA update asks it) answers before any CUDA query; another
    device still goes through the checks and is refused."""
    from types import SimpleNamespace

    import engines

    graph = engines.Graph.from_edges([0, 1], [1, 2], [5, 7], num_vertices=3)
    graph._device = SimpleNamespace(device=3)
    try:
        assert graph.to_device(3) is graph
        with pytest.raises(errors.NotSupportedError):
            graph.to_device(2)
    finally:
        graph._device = None


def test_a_modules_function_table_is_its_functions_made_once():
    """CompiledModule.functions (the operators launcher's table): every kernel's ``function`` at
    the type pair, the same objects, looked up in the module once per pair."""
    from engines.sssp.cuda import runtime

    loaded = []

    class _Raw:
        def get_function(self, name):
            loaded.append(name)
            return ("kernel", name)

    module = runtime.CompiledModule("operators", 0, _Raw(), ("ops_a", "ops_b"))
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    table = module.functions(i32, i32)
    assert table == {name: module.function(name, i32, i32) for name in ("ops_a", "ops_b")}
    assert all(table[name] is module.function(name, i32, i32) for name in table)
    assert module.functions(i32, i32) is table and len(loaded) == 2
    wide = module.functions(i32, i64)
    assert wide is not table and wide["ops_a"] == ("kernel", runtime.instantiation_name("ops_a", i32, i64))
    assert len(loaded) == 4


class _Stream:
    """A stream whose work finishes after ``busy`` queries (``done``: cudaStreamQuery)."""

    def __init__(self, busy):
        self.busy, self.queries = busy, 0

    @property
    def done(self):
        self.queries += 1
        return self.queries > self.busy


def _step(ready_after):
    """A host step (PendingCommit.resolve_ready) that finds its event done at its ready_after-th
    call, and says so from then on."""
    calls = []

    def step():
        calls.append(len(calls) + 1 >= ready_after)
        return calls[-1]

    return step, calls


@pytest.mark.parametrize("ready_after", [1, 2, 7])
def test_polling_runs_the_step_until_it_is_done_while_the_stream_runs(ready_after):
    """The commit's record arrives before the engine's kernel starts: the step is asked again
    until it has run, never after, and the stream is queried once per step that was not done."""
    from engines.sssp.cuda import runtime

    step, calls = _step(ready_after)
    stream = _Stream(busy=100)
    runtime.poll_while_running(step, stream)
    assert calls == [False] * (ready_after - 1) + [True]
    assert stream.queries == ready_after - 1


def test_polling_stops_when_the_stream_finished_with_one_last_step():
    """If the run's stream finishes first (nothing left to overlap), the step is asked once more
    and the polling returns whatever it answered: it never spins on a finished run."""
    from engines.sssp.cuda import runtime

    step, calls = _step(ready_after=50)
    stream = _Stream(busy=3)
    runtime.poll_while_running(step, stream)
    assert calls == [False] * 5 and stream.queries == 4


def test_a_failed_query_while_polling_is_a_cuda_error_naming_the_wait(monkeypatch):
    """A query that raises (a faulted context) leaves the loop as the engines' CUDA error."""
    from engines.sssp.cuda import runtime

    class _Broken:
        @property
        def done(self):
            raise RuntimeError("cudaErrorIllegalAddress")

    monkeypatch.setattr(runtime, "_is_cuda_exception", lambda exc: True)
    with pytest.raises(errors.CudaError) as caught:
        runtime.poll_while_running(lambda: False, _Broken())
    assert str(caught.value) == "CUDA failure while waiting for the run: cudaErrorIllegalAddress"


@pytest.mark.parametrize("poll, mapped_text, captured, expected", [
    (None, None, None, (True, False)), ("1", None, None, (True, True)), (None, "0", None, (False, False)),
    ("on", "1", "0", (False, True)),  # launched from Python: never mapped
])
def test_an_updates_mapped_records_and_polling_come_with_its_run_choice(monkeypatch, poll, mapped_text,
                                                                          captured, expected):
    """Read with the run's other switches (prepare(), before the commit): an update's choice says
    whether it maps its records (a captured update only) and whether it polls; compute() neither."""
    set_switch(monkeypatch, fused.POLL_RECORD_ENV, poll)
    set_switch(monkeypatch, mapped.MAPPED_RECORDS_ENV, mapped_text)
    set_switch(monkeypatch, fused.CAPTURE_ENV, captured)
    choice = fused.run_choice(_plan("group", 100), True)
    assert (choice.mapped_records, choice.poll_record) == expected
    computed = fused.run_choice(_plan("group", 100), False)
    assert (computed.mapped_records, computed.poll_record) == (False, False)


@pytest.mark.parametrize("name", [fused.POLL_RECORD_ENV, mapped.MAPPED_RECORDS_ENV])
def test_a_bad_value_of_either_is_refused_by_the_updates_run_choice(monkeypatch, name):
    monkeypatch.setenv(name, "sometimes")
    with pytest.raises(errors.InvalidArgumentError, match=name):
        fused.run_choice(_plan("group", 100), True)
