"""Sync verification never touches a timed round (protocol.md §6).

The independent counter (CUPTI on a GPU) costs tens of microseconds per synchronization, so it
runs only in dedicated untimed verification rounds: one per side and cell after the warm-up,
restored and checked like any round, recorded with ``verification = true`` and never used for
timing. These tests give the runner a counter that records when it is active and what it counts,
around the real host reference.
"""

from __future__ import annotations

from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner

from .helpers import HookedSide, host_config, small_graph_input


class RecordingCounter:
    """A sync counter that reports ``count`` and logs its activity into a shared list."""

    def __init__(self, log: list, count: int = 0):
        self.log = log
        self.count = count
        self.calls = []

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")
        return False

    def described(self):
        return "cudaEventSynchronize_v3020 from where/it/was.py:7 caller"


def _run(tmp_path, sides=None, count=0, log=None, verify_rounds=1):
    log = [] if log is None else log
    config = host_config(rounds=5, verify_syncs=True, verify_rounds=verify_rounds,
                         **({"sides": sides} if sides else {}))
    store = RecordStore(tmp_path)
    with Instruments.open(gpu=False) as inst:
        runner = CampaignRunner(config, store, inst, sync_counter_factory=lambda: RecordingCounter(log, count))
        code = runner.run([small_graph_input(n=600, m=2400)])
    return code, store, log


def test_only_the_verification_rounds_carry_the_counter(tmp_path):
    log = []

    def engine_region(number):
        log.append(f"engine {number}")

    sides = (HookedSide("host", engine_region), HookedSide("host", engine_region))
    code, store, log = _run(tmp_path, sides=sides, log=log, verify_rounds=2)
    assert code == ExitCode.OK
    rows = store.read_rounds()
    verified = rows[rows["verification"]]
    # two per side, untimed, never accepted, counted
    assert sorted(verified["role"]) == ["A", "A", "B", "B"]
    assert verified["warmup"].all() and not verified["accepted"].any()
    assert (verified["cupti_syncs"] == verified["host_syncs"]).all()
    timed = rows[~rows["warmup"]]
    assert len(timed) == 10 and timed["cupti_syncs"].isna().all() and not timed["verification"].any()
    # the counter was active around exactly four engine regions, and around no other
    inside = [e for i, e in enumerate(log) if e.startswith("engine") and log[:i].count("enter") > log[:i].count("exit")]
    assert log.count("enter") == log.count("exit") == 4
    assert len(inside) == 4
    # ... which ran after the warm-up (2 rounds per side: the guard and warm-up engine regions
    # come first) and before every timed round
    engine_calls = [e for e in log if e.startswith("engine")]
    first_inside = engine_calls.index(inside[0])
    assert first_inside == 2 * 1 + 2 * 2  # two guard updates, four warm-up rounds
    summary = store.read_summary()["cells"][0]
    assert summary["syncs"]["cupti_syncs_A"] == 0 and summary["syncs"]["verified_rounds_A"] == 2
    assert summary["syncs"]["verified_rounds_B"] == 2


def test_a_verified_count_that_disagrees_is_a_correctness_failure(tmp_path):
    code, store, _ = _run(tmp_path, count=1)  # the host engine synchronizes 0 times
    assert code == ExitCode.CORRECTNESS
    cell = store.read_campaign()["cells"]["toy/mixed/0"]
    assert cell["status"] == "check_failed"
    assert "CUPTI counted 1 synchronizations, the engine 0" in cell["detail"]
    # the counter's own account of each counted call, where it came from, is in the failure
    assert "(counted: cudaEventSynchronize_v3020 from where/it/was.py:7 caller)" in cell["detail"]


def test_without_a_counter_there_are_no_verification_rounds(tmp_path):
    config = host_config(rounds=5)
    store = RecordStore(tmp_path)
    with Instruments.open(gpu=False) as inst:
        assert CampaignRunner(config, store, inst).run([small_graph_input(n=600, m=2400)]) == ExitCode.OK
    rows = store.read_rounds()
    assert not rows["verification"].any() and rows["cupti_syncs"].isna().all()
    assert store.read_summary()["cells"][0]["syncs"]["verified_rounds_A"] == 0


def test_round_files_recorded_before_the_verification_column_still_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    code, store, _ = _run(tmp_path)
    assert code == ExitCode.OK
    path = next(store.root.glob("rounds/*.parquet"))
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["verification"]), path)
    rows = RecordStore(tmp_path).read_rounds()
    assert not rows["verification"].any()
    assert table.schema.field("verification").type == pa.bool_()  # what the file held before
