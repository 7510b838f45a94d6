"""The runner end to end with the host reference on both sides (protocol.md §2, §3, §8)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from protocol import UPDATE_REGION
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner
from protocol.sides import Side

from .fake_nvml import FakeNvml
from .helpers import HookedSide, SlowedSide, VirtualClock, VirtualSide, host_config, small_graph_input

HOST = Side("host", "host")


@pytest.fixture(scope="module")
def toy():
    return small_graph_input()


def run(config, inputs, out, *, instruments=None, resume=False):
    store = RecordStore(out)
    inst = instruments or Instruments.open(gpu=False)
    with inst:
        code = CampaignRunner(config, store, inst, resume=resume).run(inputs)
    return code, store


def only_cell(store):
    return store.read_summary()["cells"][0]


def timed_rows(store):
    rows = store.read_rounds()
    return rows[~rows["warmup"]]


def test_host_campaign_records_every_round(toy, tmp_path):
    code, store = run(host_config(rounds=5, warmup=2), [toy], tmp_path)
    assert code == ExitCode.OK
    rows = store.read_rounds()
    warm = rows[rows["warmup"]]
    assert len(warm) == 4 and not warm["accepted"].any()
    timed = rows[~rows["warmup"]]
    assert len(timed) == 10 and timed["accepted"].all()
    # ABBA: accepted pair k puts A first when k is even
    firsts = timed[timed["position"] == 0].sort_values("pair_index")["role"].tolist()
    assert firsts == ["A", "B", "A", "B", "A"]
    # counters are the host engine's own and equal across sides
    assert (timed["host_syncs"] == 0).all() and (timed["sync_budget"] == 0).all()
    assert timed["invalidated"].nunique() == 1 and timed["affected"].nunique() == 1
    assert (timed["engine"] == "host").all()
    assert timed["engine_device_ms"].isna().all()
    assert (timed["update_host_ms"] >= timed["engine_host_ms"]).all()
    cell = only_cell(store)
    assert cell["status"] == "done" and cell["primary_region"] == "engine_host"
    assert cell["accepted"] == {"A": 5, "B": 5}
    assert cell["provisional"]  # under 10 ms with fewer than 20 accepted rounds
    campaign = store.read_campaign()
    assert campaign["cells"]["toy/mixed/0"]["status"] == "done"
    assert campaign["inputs"][0]["n"] == toy.graph.num_vertices
    assert campaign["clocks"]["mode"] == "not_applicable"
    # the session says its update region is the real call (no apply memo), for the report
    assert campaign["sessions"][0]["update_region"] == UPDATE_REGION
    # the graph is back in its pre-batch state for whoever uses it next
    assert toy.graph.state_id == toy.graph.snapshot().state_id


def test_random_order_is_seeded(toy, tmp_path):
    orders = []
    for i, seed in enumerate((4, 4, 5)):
        _, store = run(host_config(rounds=8, order="random", seed=seed), [toy], tmp_path / str(i))
        t = timed_rows(store)
        orders.append(t[t["position"] == 0].sort_values("pair_index")["role"].tolist())
    assert orders[0] == orders[1]
    assert set(orders[0]) == {"A", "B"}
    assert orders[0] != orders[2]


def _campaign_ratio(toy, out, side_b, rounds=21):
    _, store = run(host_config(sides=(HOST, side_b), rounds=rounds), [toy], out)
    return only_cell(store)


def _virtual_campaign(toy, out, monkeypatch, *, seed, slowdown=0.0, rounds=21, sigma=0.02, **options):
    """A campaign whose engine regions are seeded draws on a virtual clock (helpers.VirtualSide):
    the same distribution for both sides, B scaled by ``1 + slowdown``; ``options`` go to the
    campaign's configuration."""
    import numpy as np

    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing: the whole update and its region
    rng = np.random.default_rng(seed)
    sides = (VirtualSide("host", clock, rng, sigma=sigma),
             VirtualSide("host-b", clock, rng, sigma=sigma, slowdown=slowdown))
    _, store = run(host_config(sides=sides, rounds=rounds, **options), [toy], out)
    return only_cell(store)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aa_campaign_interval_contains_one(toy, tmp_path, monkeypatch, seed):
    # deterministic: the regions are seeded draws (2 % spread) of one distribution for both sides
    cell = _virtual_campaign(toy, tmp_path, monkeypatch, seed=seed)
    assert cell["primary_region"] == "engine_host"
    assert abs(cell["ratio"] - 1) < 0.02
    assert cell["ratio_lo"] <= 1 <= cell["ratio_hi"]
    assert cell["verdict"] == "no difference detected"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_five_percent_slowdown_is_detected(toy, tmp_path, monkeypatch, seed):
    cell = _virtual_campaign(toy, tmp_path, monkeypatch, seed=seed, slowdown=0.05)
    assert 1.0 < cell["ratio_lo"] <= cell["ratio"] <= cell["ratio_hi"] < 1.09
    assert 1.03 < cell["ratio"] < 1.07
    assert cell["verdict"].startswith("B slower by ")


def test_planted_slowdown_on_the_real_clock_is_measured(toy, tmp_path):
    # the real host clock, with the machine's own noise: only the direction is asserted, with a
    # slowdown (30 %) far outside what a shared CI box's noise reaches over 21 pairs
    cell = _campaign_ratio(toy, tmp_path, SlowedSide("host", 0.30))
    assert cell["ratio"] > 1.10, cell


def test_adaptive_continues_past_the_target(toy, tmp_path):
    config = host_config(rounds=5, adaptive=True, precision=1e-6, max_rounds=9)
    code, store = run(config, [toy], tmp_path)
    assert code == ExitCode.OK
    assert only_cell(store)["accepted"] == {"A": 9, "B": 9}


def _relative_half_width(cell):
    return (cell["ratio_hi"] - cell["ratio_lo"]) / 2 / cell["ratio"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adaptive_stops_at_the_target_once_precise(toy, tmp_path, monkeypatch, seed):
    # seeded draws on a virtual clock (2 % spread), not the real one: a busy machine once widened
    # the 5-pair interval past 90 % and the campaign went on to 7 pairs. Here the interval is a
    # few per cent wide by construction, so only a wrong stopping rule fails the test
    cell = _virtual_campaign(toy, tmp_path, monkeypatch, seed=seed, rounds=5, adaptive=True, precision=0.5,
                             max_rounds=9)
    assert _relative_half_width(cell) < 0.5
    assert cell["accepted"] == {"A": 5, "B": 5}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_adaptive_goes_on_until_precise(toy, tmp_path, monkeypatch, seed):
    # a 5 % spread: the 5-pair interval is wider than 3 %, so pairs are added until it is not
    # (or the maximum is reached), and the stop is at the first pair count that meets it
    cell = _virtual_campaign(toy, tmp_path / "run", monkeypatch, seed=seed, rounds=5, sigma=0.05, adaptive=True,
                             precision=0.03, max_rounds=100)
    pairs = cell["accepted"]["A"]
    assert cell["accepted"] == {"A": pairs, "B": pairs}
    assert 5 < pairs < 100
    assert _relative_half_width(cell) <= 0.03
    # one pair fewer was not precise enough: the same seeded campaign with a maximum one below
    shorter = _virtual_campaign(toy, tmp_path / "shorter", monkeypatch, seed=seed, rounds=5, sigma=0.05,
                                adaptive=True, precision=0.03, max_rounds=pairs - 1)
    assert shorter["accepted"] == {"A": pairs - 1, "B": pairs - 1}
    assert _relative_half_width(shorter) > 0.03


def test_throttled_rounds_are_rejected_and_repeated(toy, tmp_path):
    fake = FakeNvml()
    throttled_calls = {6, 8}  # B: guard 1, warm-up 2-3, timed rounds from 4

    def hook(call):
        if call in throttled_calls:
            fake.reasons = 0x8  # hardware slowdown while the engine runs
            time.sleep(0.03)
            fake.reasons = 0

    inst = Instruments.open(gpu=True, nvml_module=fake, sample_interval_s=0.001)
    config = host_config(sides=(HOST, HookedSide("host", hook)), rounds=5)
    code, store = run(config, [toy], tmp_path, instruments=inst)
    assert code == ExitCode.OK
    timed = timed_rows(store)
    rejected = timed[~timed["accepted"]]
    assert len(rejected) == 4  # both rounds of two pairs
    assert (rejected["reject_reason"] == "clock event: hw_slowdown").sum() == 2
    assert rejected["reject_reason"].str.startswith("pair repeated (other round: clock event").sum() == 2
    cell = only_cell(store)
    assert cell["accepted"] == {"A": 5, "B": 5} and cell["rejected_pairs"] == 2
    assert "hw_slowdown" in cell["clocks"]["event_reasons_seen"]
    assert fake.called("nvmlShutdown")


def test_low_sm_clock_rejects(toy, tmp_path):
    fake = FakeNvml(sm=1980, max_sm=1980)

    def hook(call):
        if call == 8:
            fake.sm = 1500
            time.sleep(0.03)
            fake.sm = 1980

    inst = Instruments.open(gpu=True, nvml_module=fake, sample_interval_s=0.001)
    _, store = run(host_config(sides=(HOST, HookedSide("host", hook)), rounds=5), [toy], tmp_path, instruments=inst)
    reasons = timed_rows(store)["reject_reason"].dropna()
    assert any("SM clock 1500 MHz below 0.9 x max 1980" in r for r in reasons)


def test_foreign_gpu_process_makes_cells_too_noisy_but_all_cells_run(toy, tmp_path):
    fake = FakeNvml(processes=[999_999])
    inst = Instruments.open(gpu=True, nvml_module=fake, sample_interval_s=0.01)
    config = host_config(rounds=5, max_rejects=1, objectives=[0, 1])
    code, store = run(config, [toy], tmp_path, instruments=inst)
    assert code == ExitCode.TOO_NOISY
    cells = store.read_summary()["cells"]
    assert [c["status"] for c in cells] == ["too_noisy", "too_noisy"]
    assert all(c["rejected_pairs"] == 2 for c in cells)


def test_foreign_cpu_load_rejects(toy, tmp_path, monkeypatch):
    # every round sees 2.5 foreign cores (a controlled load, not the machine's) against a limit of 1
    from protocol.monitor import CpuLoadMonitor

    monkeypatch.setattr(CpuLoadMonitor, "foreign_cores", lambda self, start, end: 2.5)
    config = host_config(rounds=5, max_foreign_cpu=1.0, max_rejects=0)
    code, store = run(config, [toy], tmp_path)
    assert code == ExitCode.TOO_NOISY
    assert timed_rows(store)["reject_reason"].str.contains("foreign CPU load").any()


class CorruptingSide(Side):
    """Changes one distance of its result after the given update calls (a wrong engine)."""

    def __init__(self, label, bad_calls):
        super().__init__(label, "host")
        object.__setattr__(self, "bad_calls", bad_calls)
        object.__setattr__(self, "calls", [0])

    def update(self, graph, batch, result, probe):
        stats = super().update(graph, batch, result, probe)
        self.calls[0] += 1
        if self.calls[0] in self.bad_calls:
            result._d[5] += 1
        return stats


class OverBudgetSide(Side):
    def update(self, graph, batch, result, probe):
        stats = super().update(graph, batch, result, probe)
        return dataclasses.replace(stats, host_syncs=stats.sync_budget + 1)


def test_guard_difference_fails_the_cell_with_first_vertices(toy, tmp_path):
    config = host_config(sides=(HOST, CorruptingSide("host", {1})), objectives=[0, 1])
    code, store = run(config, [toy], tmp_path)
    assert code == ExitCode.CORRECTNESS
    cells = {c["cell"]: c for c in store.read_summary()["cells"]}
    assert cells["toy/mixed/0"]["status"] == "guard_failed"
    assert "trees differ at 1 vertices; first: v5:" in cells["toy/mixed/0"]["detail"]
    assert cells["toy/mixed/1"]["status"] == "done"  # the other cells still run


def test_digest_mismatch_in_a_round_is_a_correctness_failure(toy, tmp_path):
    code, store = run(host_config(sides=(HOST, CorruptingSide("host", {4}))), [toy], tmp_path)
    assert code == ExitCode.CORRECTNESS
    cell = only_cell(store)
    assert cell["status"] == "check_failed" and "digest" in cell["detail"]
    bad = store.read_rounds()
    assert bad["reject_reason"].str.startswith("check failed: result digest").sum() == 1


def test_sync_count_over_budget_is_a_correctness_failure(toy, tmp_path):
    code, store = run(host_config(sides=(HOST, OverBudgetSide("host", "host"))), [toy], tmp_path)
    assert code == ExitCode.CORRECTNESS
    assert "over the budget" in only_cell(store)["detail"]


def test_verify_host_adds_the_reference_to_the_guard(toy, tmp_path):
    code, _ = run(host_config(verify_host=True), [toy], tmp_path)
    assert code == ExitCode.OK
    code, store = run(host_config(sides=(CorruptingSide("host", {1}), CorruptingSide("host", {1})),
                                  verify_host=True), [toy], tmp_path / "bad")
    assert code == ExitCode.CORRECTNESS  # A and B agree with each other, not with the host reference
    assert "host" in only_cell(store)["detail"]


@pytest.mark.parametrize(
    "overrides, message",
    [({"rounds": 4}, "at least 5"), ({"warmup": 1}, "at least 2"), ({"order": "abab"}, "abba or random"),
     ({"max_rounds": 3}, "below --rounds"), ({"precision": 0}, "precision")],
)
def test_bad_parameters_are_usage_errors(overrides, message):
    with pytest.raises(UsageError, match=message):
        host_config(**overrides)


def test_dirty_tree_needs_allow_dirty(toy, tmp_path, monkeypatch):
    import protocol.runner as runner_module

    monkeypatch.setattr(runner_module, "git_state", lambda **_: {"commit": "abc", "dirty": True})
    with pytest.raises(UsageError, match="--allow-dirty"):
        run(host_config(allow_dirty=False), [toy], tmp_path)
    code, store = run(host_config(allow_dirty=True), [toy], tmp_path)
    assert code == ExitCode.OK
    assert store.read_campaign()["sessions"][0]["git"] == {"commit": "abc", "dirty": True, "dirty_allowed": True}


def test_the_tree_check_leaves_out_the_records_being_written(toy, tmp_path, monkeypatch):
    """A campaign writing into the checkout (bench-commit into results/, a sweep into results/sweep)
    must not call its own records dirt: the runner excludes its store, or the folder it is told."""
    import protocol.runner as runner_module

    seen = []
    monkeypatch.setattr(runner_module, "git_state",
                        lambda **kw: seen.append(kw) or {"commit": "abc", "dirty": False})
    run(host_config(allow_dirty=False), [toy], tmp_path / "own")
    assert seen[-1] == {"exclude": (tmp_path / "own",)}
    store = RecordStore(tmp_path / "sweep" / "campaigns" / "toy")
    with Instruments.open(gpu=False) as inst:
        CampaignRunner(host_config(allow_dirty=False), store, inst, records_root=tmp_path / "sweep").run([toy])
    assert seen[-1] == {"exclude": (tmp_path / "sweep",)}


def test_unknown_batch_or_objective_is_usage_error(toy, tmp_path):
    with pytest.raises(UsageError, match="no batch 'nope'"):
        run(host_config(batches=["nope"]), [toy], tmp_path)
    # the one wording of this refusal (protocol.config.check_objectives_fit), as the commands give it
    with pytest.raises(UsageError, match=r"^--objectives: objective 3 is outside \[0, 3\): toy has 3 weight "
                                         r"column\(s\), numbered from 0$"):
        run(host_config(objectives=[3]), [toy], tmp_path / "k")


def test_the_objective_range_has_one_owner_for_the_runner_and_the_commands():
    from bench import options
    from protocol import config

    assert options.check_objectives_fit is config.check_objectives_fit


def test_an_unknown_batch_or_objective_writes_nothing_so_the_corrected_campaign_runs(toy, tmp_path):
    # the first graph's plan is refused before any record is written: the folder held a campaign
    # of no cells, and the corrected run was refused ("holds the unfinished campaign")
    from protocol.campaign import run_campaign

    out = tmp_path / "out"
    assert run_campaign(host_config(batches=["nope"]), [toy], out, progress=False) == ExitCode.USAGE
    assert not RecordStore(out).holds_records()
    assert run_campaign(host_config(objectives=[7]), [toy], out, progress=False) == ExitCode.USAGE
    assert not RecordStore(out).holds_records()
    assert run_campaign(host_config(), [toy], out, progress=False) == ExitCode.OK


def test_a_resume_refused_for_its_inputs_adds_no_session(toy, tmp_path):
    code, store = run(host_config(rounds=5), [toy], tmp_path)
    assert code == ExitCode.OK
    before = store.campaign_path.read_bytes()
    renamed = dataclasses.replace(toy, batches={"other": toy.batches["mixed"]})
    with pytest.raises(UsageError, match="the inputs of toy changed"):
        run(host_config(rounds=5), [renamed], tmp_path, resume=True)
    assert store.campaign_path.read_bytes() == before  # no session of a resume that never ran


def test_engine_error_in_the_guard_fails_only_that_cell(toy, tmp_path):


    def fail_first(call):
        if call == 1:
            raise RuntimeError("no such kernel")

    config = host_config(sides=(HOST, HookedSide("host", fail_first)), objectives=[0, 1])
    code, store = run(config, [toy], tmp_path)
    assert code == ExitCode.CORRECTNESS
    cells = store.read_summary()["cells"]
    assert cells[0]["status"] == "guard_failed" and "no such kernel" in cells[0]["detail"]
    assert cells[1]["status"] == "done"


def test_each_session_records_its_commit_and_a_dirty_resume_needs_allow_dirty(toy, tmp_path, monkeypatch):
    import protocol.runner as runner_module

    states = iter([{"commit": "a" * 40, "dirty": False}, {"commit": "b" * 40, "dirty": True},
                   {"commit": "b" * 40, "dirty": True}])
    monkeypatch.setattr(runner_module, "git_state", lambda **_: next(states))
    code, store = run(host_config(allow_dirty=False, rounds=5), [toy], tmp_path)
    assert code == ExitCode.OK
    # the second session's tree is dirty: refused without --allow-dirty, before anything is written
    before = store.read_campaign()
    with pytest.raises(UsageError, match="--allow-dirty"):
        run(host_config(allow_dirty=False, rounds=5), [toy], tmp_path, resume=True)
    assert store.read_campaign() == before
    code, store = run(host_config(allow_dirty=True, rounds=5), [toy], tmp_path, resume=True)
    assert code == ExitCode.OK
    sessions = store.read_campaign()["sessions"]
    assert [s["git"]["commit"] for s in sessions] == ["a" * 40, "b" * 40]
    assert [s["git"]["dirty"] for s in sessions] == [False, True]
    assert "git" not in store.read_campaign()  # kept once, per session


class _DeviceLabelledSide(Side):
    """A side the runner treats as a CUDA side while it runs the host engine (CPU test of the
    runner's device handling; the real device path is in tests/protocol/test_gpu_campaign.py)."""

    @property
    def needs_cuda(self) -> bool:
        return True


def test_a_cuda_side_makes_the_graph_device_resident_before_the_snapshot(tmp_path, monkeypatch):
    gi = small_graph_input(n=300, m=1200)
    graph = gi.graph
    calls = []
    snapshot = graph.snapshot
    monkeypatch.setattr(graph, "to_device", lambda *a, **k: calls.append("to_device"), raising=False)
    monkeypatch.setattr(graph, "snapshot", lambda: calls.append("snapshot") or snapshot())
    monkeypatch.setattr(graph, "reuse_applied_batches", lambda *a, **k: calls.append("memo"), raising=False)
    import protocol.cell

    monkeypatch.setattr(protocol.cell, "_device_synchronize", lambda: calls.append("sync"))
    side = _DeviceLabelledSide("cuda-labelled", "host")
    code, store = run(host_config(sides=(side, HOST)), [gi], tmp_path)
    assert code == ExitCode.OK
    # once per graph: to the device, then the snapshot every round restores; never the apply memo
    assert calls[:2] == ["to_device", "snapshot"] and "memo" not in calls
    # every restore (guard, warm-up and timed rounds) waits for its device copies outside the timers
    rows = store.read_rounds()
    assert calls.count("sync") >= len(rows) + 2
    # host sides only: the graph stays where it is
    calls.clear()
    code, _ = run(host_config(), [gi], tmp_path / "host")
    assert code == ExitCode.OK and not {"to_device", "memo", "sync"} & set(calls)


def test_resume_compares_the_inputs_by_batch_name_not_by_order():
    # the order an input source lists its batches in is not the input (a sweep read its batches
    # back from a cache that sorts them and was refused as changed); their bytes and names are
    from protocol.runner import _input_digests

    a, b = {"name": "uniform-10", "sha256": "aa"}, {"name": "local-10", "sha256": "bb"}
    first = {"n": 5, "m": 9, "batches": [a, b]}
    assert _input_digests(first) == _input_digests({"n": 5, "m": 9, "batches": [b, a]})
    assert _input_digests(first) != _input_digests({"n": 5, "m": 9, "batches": [a, {**b, "sha256": "cc"}]})
    assert _input_digests(first) != _input_digests({"n": 5, "m": 9, "batches": [a]})
    assert _input_digests(first) != _input_digests({"n": 5, "m": 10, "batches": [a, b]})


def test_an_interrupt_between_the_writes_of_a_rejected_pair_leaves_no_accepted_half(tmp_path, monkeypatch):
    # a pair whose second round is rejected: the second round was written, then the first amended
    # to rejected; Ctrl-C between the two writes left the first round accepted beside its rejected
    # partner, and the side's statistics counted that unpaired round. The first is amended first now.
    import protocol.records as records_module

    inst = Instruments.open(gpu=False)
    calls = {"n": 0}
    end_round = inst.end_round

    def judged(window):
        fields, reason = end_round(window)
        calls["n"] += 1
        # warm-up: 2 rounds per side (calls 1-4); call 6 is the second round of pair 0
        return fields, ("foreign GPU process(es): 4242" if calls["n"] == 6 else reason)

    monkeypatch.setattr(inst, "end_round", judged)
    append = records_module.CellRounds.append

    def interrupted(self, *rows):
        append(self, *rows)
        if any(r["position"] == 1 and r["reject_reason"] for r in rows):
            raise KeyboardInterrupt  # after the second round's write, before anything else

    monkeypatch.setattr(records_module.CellRounds, "append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(host_config(rounds=5), [small_graph_input()], tmp_path, instruments=inst)
    monkeypatch.setattr(records_module.CellRounds, "append", append)
    store = RecordStore(tmp_path)
    rows = store.read_rounds()
    pair = rows[(~rows["warmup"]) & (rows["pair_index"] == 0)]
    assert len(pair) == 2 and not pair["accepted"].any(), pair[["position", "accepted", "reject_reason"]]
    # records left by the earlier order (the first round still accepted) are mended on resume
    import pyarrow.parquet as pq

    [path] = (tmp_path / "rounds").glob("*.parquet")
    table = pq.read_table(path)
    old = table.to_pylist()
    for row in old:
        if not row["warmup"] and row["pair_index"] == 0 and row["position"] == 0:
            row["accepted"], row["reject_reason"] = True, None
    pq.write_table(table.from_pylist(old, schema=table.schema), path)
    code, store = run(host_config(rounds=5), [small_graph_input()], tmp_path, resume=True)
    cell = only_cell(store)
    assert code == ExitCode.OK, (cell["status"], cell.get("detail"))
    assert cell["accepted"] == {"A": 5, "B": 5} and cell["rejected_pairs"] == 1
    rows = store.read_rounds()
    pair = rows[(~rows["warmup"]) & (rows["pair_index"] == 0)]
    assert not pair["accepted"].any()


def test_an_interrupted_in_process_campaign_leaves_the_callers_graph_as_it_was(tmp_path, monkeypatch):
    # the campaign process measures on the caller's own GraphInput (in-process workers); an
    # interrupt mid-round left its graph in the post-batch state, so a resume with the same input
    # (a notebook's Ctrl-C, then --resume) snapshot that state and failed its guard ("compute()
    # differs from the prepared tree", exit 1) on a campaign with nothing wrong
    gi = small_graph_input()
    pristine = gi.graph.snapshot().state_id
    inst = Instruments.open(gpu=False)
    calls = {"n": 0}
    end_round = inst.end_round

    def interrupting(*args):
        calls["n"] += 1
        if calls["n"] == 7:  # a timed round, right after its update applied the batch
            raise KeyboardInterrupt
        return end_round(*args)

    monkeypatch.setattr(inst, "end_round", interrupting)
    with pytest.raises(KeyboardInterrupt):
        run(host_config(rounds=5), [gi], tmp_path, instruments=inst)
    assert gi.graph.state_id == pristine
    code, store = run(host_config(rounds=5), [gi], tmp_path, resume=True)
    cell = only_cell(store)
    assert code == ExitCode.OK, (cell["status"], cell.get("detail"))
