"""The fused kernel's phase clock without a GPU (fused.cu phase_mark, engines/sssp/cuda/
phase_clock.py, bench/fused_phases.py): the switch and the variant a run loads, every grid barrier
of fused.cu stamped, the kinds' names in the kernel's order, stamps turned into phases, and the
command's table from stored stamps.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from bench import fused_phases
from engines import errors
from engines.sssp.cuda import compile_check, fused, phase_clock, runtime

from tests.switch_env import set_switch

SOURCE = (runtime.SOURCE_DIR / fused.SOURCE).read_text()


@pytest.mark.parametrize("text, on", [(None, False), ("0", False), ("off", False), ("1", True), ("on", True)])
def test_the_switch_adds_the_variant(monkeypatch, text, on):
    plan = SimpleNamespace(push_expansion="group", batch_changes=0)
    set_switch(monkeypatch, fused.PHASE_CLOCK_ENV, text)
    assert fused.phase_clock_enabled() is on
    for update in (True, False):
        assert ("SSSP_PHASE_CLOCK" in fused.run_choice(plan, update).defines) is on


def test_a_bad_value_names_the_switch(monkeypatch):
    monkeypatch.setenv(fused.PHASE_CLOCK_ENV, "maybe")
    with pytest.raises(errors.InvalidArgumentError, match=fused.PHASE_CLOCK_ENV):
        fused.phase_clock_enabled()


def test_make_cuda_check_compiles_the_instrument_beside_the_variants():
    variants = compile_check.variants_of(runtime.SOURCE_DIR / fused.SOURCE)
    assert set(fused.INSTRUMENT_VARIANTS) <= set(variants)
    assert all("SSSP_PHASE_CLOCK" in v for v in fused.INSTRUMENT_VARIANTS)
    assert not any("SSSP_PHASE_CLOCK" in v for v in fused.VARIANTS)  # never a user's module
    assert runtime.variant_defines(("SSSP_PHASE_CLOCK",)) == ("SSSP_PHASE_CLOCK",)


@pytest.mark.parametrize("solo", [None, "0"])
def test_make_cuda_check_compiles_the_instrument_of_every_default_run(monkeypatch, solo):
    """What bench/fused_phases.py loads with the switches at their defaults (the solo push on) or
    with ENGINES_FUSED_SOLO=0 (its length table): compute(), a small update, a large one."""
    from engines.sssp.cuda import variants

    for name in variants.SWITCHES + (fused.CAPTURE_ENV,):
        monkeypatch.delenv(name, raising=False)
    set_switch(monkeypatch, fused.SOLO_ENV, solo)
    monkeypatch.setenv(fused.PHASE_CLOCK_ENV, "1")
    for changes, update in ((0, False), (100, True), (50_000, True)):
        plan = SimpleNamespace(push_expansion="group", batch_changes=changes)
        assert runtime.variant_defines(fused.run_defines(plan, update=update)) in fused.INSTRUMENT_VARIANTS, (
            solo, changes)


def test_every_grid_barrier_is_stamped():
    lines = [line.strip() for line in SOURCE.splitlines()]
    barriers = [i for i, line in enumerate(lines) if line == "grid.sync();"]
    assert len(barriers) >= 12
    for i in barriers:
        assert "phase_mark(" in lines[i + 1], f"fused.cu line {i + 2}: a barrier without a stamp"


def test_the_kinds_are_the_kernels_enum_in_order():
    body = re.search(r"enum PhaseKind : i32 \{(.*?)\};", SOURCE, re.S).group(1)
    names = [n.split("=")[0].strip() for n in body.split(",") if n.strip()]
    assert "PHASE_START = 0" in body
    assert tuple(names) == phase_clock.ENUM_NAMES and len(names) == len(phase_clock.KINDS)
    assert "SSSP_PHASE_SLOTS 8192" in SOURCE and phase_clock.SLOTS == 8192
    # each kind is stamped where its name says: after the barrier that ends that phase
    stamped = set(re.findall(r"phase_mark\((?:fused::)?(PHASE_[A-Z_]+)\)", SOURCE))
    assert stamped == set(phase_clock.ENUM_NAMES)


def _stamps(kinds, cycles, ns_per_cycle=0.5):
    cycles = np.asarray(cycles, dtype=np.uint64)
    return len(kinds), np.asarray(kinds, dtype=np.int32), cycles, (cycles * ns_per_cycle).astype(np.uint64)


def test_stamps_become_phases():
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    kinds = [0, k["pack and roots"], k["push iteration"], k["push iteration"], k["unpack"]]
    t = phase_clock.from_stamps(*_stamps(kinds, [1000, 1400, 2400, 2600, 3000]))
    assert t.kinds == ("pack and roots", "push iteration", "push iteration", "unpack")
    assert t.cycles == (400, 1000, 200, 400)
    assert t.cycles_of("push iteration") == [1000, 200] and t.cycles_of("seed") == []
    assert (t.launch_cycles, t.launch_ns, t.dropped) == (2000, 1000, 0)
    assert phase_clock.pooled_rate([t]) == pytest.approx(2e9)
    assert t.seconds(2e9) == pytest.approx([200e-9, 500e-9, 100e-9, 200e-9])


def test_stamps_past_the_slots_are_counted_not_kept():
    count, kinds, cycles, ns = _stamps([0] + [8] * (phase_clock.SLOTS - 1), np.arange(phase_clock.SLOTS) * 10)
    t = phase_clock.from_stamps(count + 5, kinds, cycles, ns)
    assert t.dropped == 5 and len(t.cycles) == phase_clock.SLOTS - 1


@pytest.mark.parametrize("kinds, match", [([], "no stamps"), ([3, 8], "start"), ([0, 99], "unknown phase kind")])
def test_bad_stamps_are_refused(kinds, match):
    count, k, c, n = _stamps(kinds, np.arange(len(kinds)) * 10)
    with pytest.raises(ValueError, match=match):
        phase_clock.from_stamps(count, k, c, n)


def test_no_timer_no_rate():
    t = phase_clock.PhaseTimes(("unpack",), (10,), 10, 0, 0)
    assert phase_clock.pooled_rate([t]) is None


def test_the_command_summarizes_stored_stamps():
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    launches = [phase_clock.from_stamps(*_stamps([0, k["pack and roots"], k["push iteration"], k["push iteration"],
                                                  k["unpack"]], [0, 2000, 4000, 8000, 10000], 0.5))
                for _ in range(3)]
    rows = {r["kind"]: r for r in fused_phases.summarize(launches, 2e9)}
    assert list(rows) == ["pack and roots", "push iteration", "unpack"]  # kernel order, kinds that ran
    assert rows["push iteration"]["count"] == 2
    assert rows["push iteration"]["total_us"] == pytest.approx(3.0)  # 6,000 cycles at 2 GHz
    assert rows["push iteration"]["each_us"] == pytest.approx(1.5)
    assert rows["push iteration"]["share"] == pytest.approx(0.6)
    stats = SimpleNamespace(iterations=2, epochs=0, grid_syncs=3)
    text = fused_phases.table("g b: fused update()", launches, stats)
    assert "| push iteration | 2 | 3.0 | 1.50 | 60.0 % |" in text
    assert "| launch (first stamp to last) | 3 barriers | 5.0 |" in text
    assert "2000 MHz" in text


def test_the_command_refuses_bad_counts_and_needs_a_gpu(capsys, monkeypatch):
    assert fused_phases.main(["--random-graph", "10,20", "--repeats", "0"]) == 2
    monkeypatch.setattr("bench.has_gpu.gpu_problem", lambda: "no GPU here")
    assert fused_phases.main(["--random-graph", "10,20"]) == 3
    assert "no GPU here" in capsys.readouterr().err


def test_push_iterations_group_by_their_lists_length():
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    kinds = [0, k["pack and roots"]] + [k["push iteration"]] * 4 + [k["unpack"]]
    t = phase_clock.from_stamps(*_stamps(kinds, [0, 100, 2100, 4100, 14100, 34100, 35000]))
    rows = fused_phases.by_length(t, np.array([5, 7, 500, 20_000]), 2e9)
    assert [(r["lengths"], r["iterations"]) for r in rows] == [("1-9", 2), ("100-999", 1), ("10,000-99,999", 1)]
    assert rows[0]["mean_us"] == pytest.approx(1.0) and rows[0]["mean_length"] == 6
    assert rows[2]["mean_us"] == pytest.approx(10.0)
    assert "| 10,000-99,999 | 1 | 20,000 | 10.00 |" in fused_phases.length_table(rows)
    with pytest.raises(ValueError, match="4 push iterations and 0 solo stretches stamped, 3 logged"):
        fused_phases.by_length(t, np.array([5, 7, 500]), 2e9)


def test_solo_iterations_are_the_shortest_lists_and_make_their_own_row():
    """Two solo stretches (block 0 alone: 3 iterations, then 2 after an epoch) among three grid
    iterations: the log's five shortest lists are the solo ones, whatever stretch each ran in; the
    grid's rows keep their own stamps in order, and the solo row spreads the stretches' time over
    their iterations."""
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    kinds = ([0, k["push iteration"], k["solo stretch"], k["push iteration"], k["epoch minimum"],
              k["epoch split"], k["solo stretch"], k["push iteration"], k["unpack"]])
    # phases of 2000, 6000, 4000, 100, 100, 4000, 20000, 100 cycles
    t = phase_clock.from_stamps(*_stamps(kinds, [0, 2000, 8000, 12000, 12100, 12200, 16200, 36200, 36300]))
    log = np.array([500, 3, 7, 2, 20_000, 4, 6, 150_000])
    rows = fused_phases.by_length(t, log, 2e9)
    assert [(r["lengths"], r["iterations"]) for r in rows] == [
        ("100-999", 1), ("10,000-99,999", 1), (">= 100,000", 1), ("solo (2 stretches, 1-7)", 5)]
    assert [r["mean_us"] for r in rows[:3]] == pytest.approx([1.0, 2.0, 10.0])  # the grid's stamps in order
    assert rows[3]["mean_us"] == pytest.approx(1.0) and rows[3]["mean_length"] == pytest.approx(4.4)
    assert "| solo (2 stretches, 1-7) | 5 | 4 | 1.00 |" in fused_phases.length_table(rows)


@pytest.mark.parametrize("log, message", [
    ([500, 3, 20_000, 150_000], "3 push iterations and 2 solo stretches stamped, 4 logged"),  # one solo
    ([500, 3, 7, 2, 20_000, 4, 500, 150_000], "no solo limit splits"),  # a solo list as long as a grid one
    ([500, 3, 7, 2, 20_000, 4, 600, 150_000], "do not follow the stamps' order"),  # 500 would be solo
    ([3, 500, 7, 2, 20_000, 4, 6, 150_000], "do not follow the stamps' order"),  # a stretch before the first push
])
def test_a_log_the_stamps_cannot_split_is_refused(log, message):
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    kinds = ([0, k["push iteration"], k["solo stretch"], k["push iteration"], k["epoch minimum"],
              k["epoch split"], k["solo stretch"], k["push iteration"], k["unpack"]])
    t = phase_clock.from_stamps(*_stamps(kinds, [0, 2000, 8000, 12000, 12100, 12200, 16200, 36200, 36300]))
    with pytest.raises(ValueError, match=message):
        fused_phases.by_length(t, np.array(log), 2e9)


def test_a_stream_batch_is_refused_without_a_gate_or_with_a_bad_size(capsys):
    for argv in (["--random-graph", "10,20", "--batch-size", "100"], ["--graph", "roadNet-PA", "--batch-size", "6"],
                 ["--graph", "roadNet-PA", "--batch-size", "0"]):
        assert fused_phases.main(argv) == 2
    assert "positive multiple of 4" in capsys.readouterr().err


def test_stretches_apart_only_by_an_epoch_meet_in_one_run_of_the_log():
    """A stretch that empties its list, the epoch's two phases, and the next stretch: the log has
    one run of short lists for both; the split still holds and the row counts both stretches."""
    k = {name: i for i, name in enumerate(phase_clock.KINDS)}
    kinds = [0, k["push iteration"], k["solo stretch"], k["epoch minimum"], k["epoch split"], k["solo stretch"],
             k["push iteration"], k["unpack"]]
    t = phase_clock.from_stamps(*_stamps(kinds, [0, 2000, 6000, 6100, 6200, 8200, 28200, 28300]))
    rows = fused_phases.by_length(t, np.array([500, 3, 7, 4, 20_000]), 2e9)
    assert [(r["lengths"], r["iterations"]) for r in rows] == [
        ("100-999", 1), ("10,000-99,999", 1), ("solo (2 stretches, 1-7)", 3)]
    assert rows[2]["mean_us"] == pytest.approx(1.0)  # 6,000 cycles over 3 iterations at 2 GHz
