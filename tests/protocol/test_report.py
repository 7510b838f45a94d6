"""results/M7.md from a fixture campaign's records (protocol.md §10)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from protocol import SCHEMA_VERSION
from protocol.records import ROUND_COLUMNS, RecordStore, cell_key
from protocol.report import render_report

SECTIONS = ["## 1. Environment", "## 2. Verdicts", "## 3. Per graph", "## 4. Host synchronizations",
            "## 5. Clocks and rejected rounds", "## 6. Findings", "## 7. Cell status", "## 8. Inputs",
            "## 9. Reproduce", "## 10. Plots"]

# (graph, batch, objective): A device ms, B device ms, B iterations, B epochs
CELLS = {
    ("roadNet-PA", "safe50k", 0): (2.0, 3.0, 40, 2),
    ("roadNet-PA", "safe50k", 1): (2.2, 3.4, 44, 3),
    ("rgg_n_2_20_s0", "local10k", 0): (0.50, 0.55, 6, 0),
}


def _campaign(cells):
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": "fixture0001",
        "tool": {"name": "ssspab perf_ab", "version": "0.1.0"},
        "started_utc": "2026-12-02T10:00:00+00:00",
        "finished_utc": "2026-12-02T10:30:00+00:00",
        "host": {"cpu_model": "Fake CPU", "logical_cores": 16, "os": "Linux", "python": "3.12.3",
                 "numpy": "2.1", "cupy": "14.2", "nvrtc": "13.0", "cuda_runtime": "13.0", "cuda_driver": "13.0"},
        "gpu": {"name": "NVIDIA H200", "sm_count": 132, "memory_bytes": 150 * 2**30, "compute_capability": "9.0",
                "nvml": {"nvidia_driver": "580.1", "max_sm_mhz": 1980, "default_sm_mhz": 1590,
                         "ecc_current": True, "persistence_mode": True}},
        "clocks": {"mode": "observe", "note": None, "lock": None, "min_clock_fraction": 0.9,
                   "max_sm_mhz": 1980, "max_foreign_cpu": 1.0},
        "parameters": {"sides": {"A": "cuda:fused", "B": "cuda:operators"}, "rounds": 21, "warmup": 2,
                       "order": "abba", "seed": 0, "adaptive": False, "precision": 0.01, "max_rounds": 84,
                       "max_rejects": 21, "min_clock_fraction": 0.9, "max_foreign_cpu": 1.0,
                       "bootstrap_resamples": 2000},
        "reproduce": "python bench/perf_ab.py engines --rounds 21",
        "inputs": [
            {"graph": "roadNet-PA", "origin": {"kind": "standin", "generator": "road_grid",
                                                "params": {"n": 1090920}, "seed": 1},
             "n": 1090920, "m": 3083796, "K": 3, "source": 0, "facts": {},
             "batches": [{"name": "safe50k", "facts": {"insertions": 25000, "deletions_kept": 24000},
                          "sha256": "f" * 64}]},
            {"graph": "rgg_n_2_20_s0", "origin": {"kind": "real", "path": "data/rgg.mtx", "sha256": "e" * 64},
             "n": 1048576, "m": 13783240, "K": 3, "source": 0, "facts": {},
             "batches": [{"name": "local10k", "facts": {"insertions": 5000}, "sha256": "d" * 64}]},
        ],
        "cells": {cell_key(*c): {"graph": c[0], "batch": c[1], "objective": c[2], "status": "done",
                                 "detail": None} for c in cells},
        "sessions": [{"started_utc": "2026-12-02T10:00:00+00:00", "resumed": False,
                      "git": {"commit": "0123456789abcdef", "dirty": False, "dirty_allowed": False}}],
    }


def _write_fixture(root):
    store = RecordStore(root)
    rng = np.random.default_rng(0)
    for (graph, batch, k), (a_ms, b_ms, iters, epochs) in CELLS.items():
        rounds = store.cell_rounds(cell_key(graph, batch, k))
        rows = []
        for pair in range(21):
            noise = rng.normal(1, 0.01, 2)
            for role, ms, engine, syncs, budget in (("A", a_ms * noise[0], "fused", 1, 1),
                                                    ("B", b_ms * noise[1], "operators", 3 + iters + epochs,
                                                     3 + iters + epochs)):
                row = dict.fromkeys(ROUND_COLUMNS)
                row.update(campaign_id="fixture0001", session=0, cell=cell_key(graph, batch, k), graph=graph,
                           batch=batch, objective=k, role=role, side=f"cuda:{engine}", engine=engine,
                           round_index=pair, pair_index=pair, position=0 if role == "A" else 1, sequence=0,
                           warmup=False, accepted=True, engine_device_ms=ms, engine_host_ms=ms + 0.05,
                           update_host_ms=ms + 0.4, host_syncs=syncs, cupti_syncs=syncs, sync_budget=budget,
                           iterations=iters if role == "B" else 1, epochs=epochs if role == "B" else 0,
                           pushes=100, invalidated=7, affected=9, packed_parents=True, sm_clock_min_mhz=1965,
                           sm_clock_median_mhz=1980.0, mem_clock_mhz=2619, pstate=0, event_reasons=0,
                           nvml_samples=3, foreign_cpu_cores=0.1, foreign_gpu_pids="",
                           timestamp="2026-12-02T10:01:00+00:00")
                rows.append(row)
        for role, syncs in (("A", 1), ("B", 3 + iters + epochs)):  # the untimed CUPTI-counted rounds
            rows.append(dict(rows[0 if role == "A" else 1], role=role, pair_index=-1, position=-1, warmup=True,
                             verification=True, accepted=False, host_syncs=syncs, cupti_syncs=syncs))
        # one rejected pair in the first cell
        if (graph, batch, k) == ("roadNet-PA", "safe50k", 0):
            for row in rows[:2]:
                bad = dict(row, pair_index=99, accepted=False, event_reasons=4,
                           reject_reason="clock event: sw_power_cap")
                rows.append(bad)
        rounds.append(*rows)
    store.write_campaign(_campaign(CELLS))
    return store


@pytest.fixture
def rendered(tmp_path):
    store = _write_fixture(tmp_path)
    path = render_report(store)
    return store, path.read_text()


def _table_rows(text, heading):
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not line.startswith("|---")][1:]


def test_report_has_every_section(rendered):
    _, text = rendered
    positions = [text.index(h) for h in SECTIONS]
    assert positions == sorted(positions)
    assert text.startswith("# M7: cuda:operators against cuda:fused")
    assert "Commit `0123456789abcdef`" in text and "dirty" not in text.split("\n## 1.")[0]
    assert "real files: rgg_n_2_20_s0" in text and "stand-ins: roadNet-PA" in text


def test_verdict_table_numbers_equal_the_records(rendered):
    store, text = rendered
    rounds = store.read_rounds()
    summary = {c["cell"]: c for c in store.read_summary()["cells"]}
    rows = _table_rows(text, "## 2. Verdicts")
    assert len(rows) == len(CELLS)
    for row in rows:
        graph, batch, k = row[0], row[1], int(row[2])
        key = cell_key(graph, batch, k)
        acc = rounds[(rounds["cell"] == key) & rounds["accepted"]]
        med_a = np.median(acc.loc[acc["role"] == "A", "engine_device_ms"])
        med_b = np.median(acc.loc[acc["role"] == "B", "engine_device_ms"])
        assert row[3] == f"{med_a:.3f}" and row[4] == f"{med_b:.3f}"
        pairs = acc.pivot(index="pair_index", columns="role", values="engine_device_ms")
        assert float(row[5].split()[0]) == pytest.approx(np.median(pairs["B"] / pairs["A"]), abs=6e-4)
        c = summary[key]
        assert row[5] == f"{c['ratio']:.3f} [{c['ratio_lo']:.3f}, {c['ratio_hi']:.3f}]"
        assert row[6] == c["verdict"] and row[6].startswith("B slower by")
        _, _, iters, epochs = CELLS[(graph, batch, k)]
        assert row[7] == f"1 / {3 + iters + epochs} ({3 + iters + epochs})"
        rejected = 1 if k == 0 and graph == "roadNet-PA" else 0
        assert row[8] == f"21 / {rejected}"


def test_sync_section_and_round_trip_cost(rendered):
    store, text = rendered
    rows = {r[0]: r for r in _table_rows(text, "## 4. Host synchronizations")}
    for (graph, batch, k), (_, _, iters, epochs) in CELLS.items():
        key = cell_key(graph, batch, k)
        c = next(c for c in store.read_summary()["cells"] if c["cell"] == key)
        reg = c["regions"]["engine_device"]
        cost = (reg["B"]["median"] - reg["A"]["median"]) / (3 + iters + epochs - 1)
        row = rows[key]
        assert row[3] == "1" and row[4] == str(3 + iters + epochs)  # the budgets the records state
        verified = (c["syncs"]["verified_rounds_A"], c["syncs"]["verified_rounds_B"])
        assert verified[0] >= 1 and verified[1] >= 1
        # CUPTI, with the number of verification rounds behind each median
        assert row[5] == f"1 / {3 + iters + epochs} ({verified[0]} / {verified[1]})"
        assert row[6] == f"{cost:.3f}"


def test_the_budget_is_the_engines_own_from_the_records(rendered):
    """Issue 30, item 4: analysis reads Stats.sync_budget as recorded (no formula of its own)."""
    store, _ = rendered
    rounds = store.read_rounds()
    for c in store.read_summary()["cells"]:
        assert "operators_formula_B" not in c["syncs"]
        for role in ("A", "B"):
            timed = rounds[(rounds["cell"] == c["cell"]) & rounds["accepted"] & (rounds["role"] == role)]
            assert c["syncs"][f"sync_budget_{role}"] == np.median(timed["sync_budget"])


def test_clock_section_names_rejections(rendered):
    _, text = rendered
    rows = {r[0]: r for r in _table_rows(text, "## 5. Clocks and rejected rounds")}
    first = rows["roadNet-PA/safe50k/0"]
    assert first[1] == "1965–1980" and first[3] == "sw_power_cap"
    assert first[6] == "1" and first[7] == "2× clock event: sw_power_cap"


def test_findings_are_built_from_the_summary(rendered):
    store, text = rendered
    cells = store.read_summary()["cells"]
    hi = max(cells, key=lambda c: c["ratio"])
    lo = min(cells, key=lambda c: c["ratio"])
    findings = text.split("## 6. Findings", 1)[1].split("\n## ", 1)[0]
    assert f"is {hi['ratio']:.3f} on {hi['cell']}" in findings
    assert f"the smallest is {lo['ratio']:.3f} on {lo['cell']}" in findings
    assert "3 of 3 measured cells show a difference" in findings
    assert "One host round trip costs" in findings


def test_inputs_reproduce_and_plots(rendered, tmp_path):
    _, text = rendered
    assert "`" + "f" * 64 + "`" in text and "insertions = 25000, deletions_kept = 24000" in text
    assert "stand-in: road_grid(n=1090920), seed 1" in text
    assert "python bench/perf_ab.py engines --rounds 21" in text
    for png in re.findall(r"\]\((plots/[^)]+\.png)\)", text):
        data = (tmp_path / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_report_rerenders_from_rounds_alone(rendered):
    store, text = rendered
    store.summary_path.unlink()
    again = render_report(store).read_text()
    assert again == text


def test_failed_and_unknown_clock_cells_render(tmp_path):
    store = _write_fixture(tmp_path)
    campaign = store.read_campaign()
    campaign["cells"]["rgg_n_2_20_s0/local10k/0"].update(status="guard_failed", detail="trees differ at 1 vertices")
    campaign["clocks"] = {"mode": "unknown", "note": "clocks unknown: NVML missing", "lock": None}
    campaign["gpu"] = None
    store.write_campaign(campaign)
    text = render_report(store).read_text()
    assert "guard_failed" in text and "trees differ at 1 vertices" in text
    assert "clocks unknown: NVML missing" in text
    assert "Cells failed the guard: rgg_n_2_20_s0/local10k/0." in text


def test_a_resumed_campaign_names_the_commit_of_every_session(tmp_path):
    store = _write_fixture(tmp_path)
    campaign = store.read_campaign()
    # an older record: one campaign-level git state, sessions without their own
    del campaign["sessions"][0]["git"]
    campaign["git"] = {"commit": None, "dirty": True, "dirty_allowed": True}
    campaign["sessions"] += [
        {"started_utc": "2026-12-02T11:00:00+00:00", "resumed": True,
         "git": {"commit": "c" * 40, "dirty": False, "dirty_allowed": False}},
        {"started_utc": "2026-12-02T12:00:00+00:00", "resumed": True},
    ]
    store.write_campaign(campaign)
    text = render_report(store).read_text()
    assert "ran in 3 sessions" in text
    lines = [line for line in text.splitlines() if line.startswith("- session ")]
    assert len(lines) == 3
    assert "started 2026-12-02T10:00:00+00:00" in lines[0] and "dirty or had no git" in lines[0]
    assert f"resumed 2026-12-02T11:00:00+00:00: commit `{'c' * 40}`" in lines[1] and "dirty" not in lines[1]
    assert "commit not recorded" in lines[2]


def test_a_single_session_campaign_names_one_commit(rendered):
    _, text = rendered
    assert "Commit `0123456789abcdef`." in text and "- session " not in text


def _region_paragraph(text):
    section = text.split("## 3. Per graph", 1)[1].split("\n## ", 1)[0]
    return " ".join(p for p in section.split("\n\n") if p.startswith('"Whole update, host"')).replace("\n", " ")


def test_whole_update_region_says_what_the_rounds_timed(tmp_path):
    from protocol import UPDATE_REGION

    store = _write_fixture(tmp_path)
    campaign = store.read_campaign()
    # sessions recorded by the earlier code (no update_region): the rounds replayed a memo
    old = _region_paragraph(render_report(store).read_text())
    assert "through a memo" in old and "as a user pays it" not in old
    # the current code marks every session: the real call, device apply, no memo
    for session in campaign["sessions"]:
        session["update_region"] = UPDATE_REGION
    store.write_campaign(campaign)
    new = _region_paragraph(render_report(store).read_text())
    assert "as a user pays it" in new and "the device apply (the new CSRs built on the GPU)" in new
    assert "batch validation and upload" in new and "No memo" in new and "reuse_applied_batches" not in new
    # a resumed campaign whose sessions ran both codes says so
    campaign["sessions"].append({"started_utc": "2026-12-02T11:00:00+00:00", "resumed": True})
    store.write_campaign(campaign)
    mixed = _region_paragraph(render_report(store).read_text())
    assert "mixes the two" in mixed


def test_host_sides_whole_update_region_names_the_host_apply(tmp_path):
    from protocol import UPDATE_REGION
    from protocol.report import build_context, _environment, TEMPLATE

    store = _write_fixture(tmp_path)
    campaign = store.read_campaign()
    for session in campaign["sessions"]:
        session["update_region"] = UPDATE_REGION
    render_report(store)  # writes the summary from the rounds
    summary = dict(store.read_summary(), sides={"A": "host", "B": "host"})
    text = _environment().get_template(TEMPLATE).render(**build_context(campaign, summary, {}))
    para = _region_paragraph(text)
    assert "the host apply" in para and "device" not in para


def test_push_section_lists_every_cell(rendered):
    """Section 4b: one row per cell; the synthetic rounds carry no near-list median or grid
    syncs (as campaigns recorded before those columns), so those read '–', the iterations not."""
    store, text = rendered
    rows = {r[0]: r for r in _table_rows(text, "## 4b. The push")}
    summary = {c["cell"]: c for c in store.read_summary()["cells"]}
    for (graph, batch, k), (_, _, iters, _epochs) in CELLS.items():
        key = cell_key(graph, batch, k)
        row = rows[key]
        assert row[1] == f"{int(summary[key]['push']['A']['iterations'])} / {iters}"
        assert row[2] == "– / –" and row[3] == "– / –"
        per_iteration = summary[key]["regions"]["engine_device"]["B"]["median"] * 1e3 / iters
        assert float(row[4].split(" / ")[1]) == pytest.approx(per_iteration, abs=0.05)


def test_push_section_shows_the_floor_when_the_gpu_recorded_it(tmp_path):
    """Section 4b with ``--floor`` (issue 34): the constants recorded with the GPU (gpu.floor) give
    each fused side's floor, its median grid syncs x (barrier + chain), and measured / floor; a side
    without grid syncs reads '–'; a campaign without the constants has no floor columns at all."""
    from protocol.analysis import build_summary
    from protocol.floor import FloorConstants
    from protocol.report import _environment, build_context, TEMPLATE

    store = _write_fixture(tmp_path)
    key = cell_key("roadNet-PA", "safe50k", 0)
    frame = store.read_rounds()
    frame.loc[(frame["cell"] == key) & (frame["role"] == "A"), "grid_syncs"] = 106  # fused barriers
    campaign = store.read_campaign()
    constants = FloorConstants(barrier_us=1.25, chain_us=1.03, blocks=528, device_name="NVIDIA H200")
    campaign["gpu"]["floor"] = constants.to_dict()
    summary = build_summary(frame, campaign)
    text = _environment().get_template(TEMPLATE).render(**build_context(campaign, summary, {}))
    section = text.split("## 4b. The push", 1)[1].split("\n## ", 1)[0]
    assert constants.describe() in section.replace("\n", " ")
    header = [line for line in section.splitlines() if line.startswith("| cell")][0]
    assert header.rstrip().endswith("| floor ms A / B | measured / floor A / B |")
    rows = {r[0]: r for r in _table_rows(text, "## 4b. The push")}
    cell = {c["cell"]: c for c in summary["cells"]}[key]
    floor_ms = 106 * 2.28 / 1e3
    measured = cell["regions"][cell["primary_region"]]["A"]["median"]
    assert rows[key][5] == f"{floor_ms:.3f} / –"
    assert rows[key][6] == f"{measured / floor_ms:.3f} / –"
    assert rows[cell_key("rgg_n_2_20_s0", "local10k", 0)][5] == "– / –"  # no grid syncs recorded

    del campaign["gpu"]["floor"]  # a campaign measured without --floor: the table as before
    plain = _environment().get_template(TEMPLATE).render(
        **build_context(campaign, build_summary(frame, campaign), {}))
    assert "floor ms" not in plain and "--floor" not in plain


def test_the_cpu_line_shows_the_host_probe_when_the_campaign_recorded_it(tmp_path):
    """Campaigns record protocol.environment.host_probe in their host (two hosts of one GPU model
    differ in every update's host side); the report's CPU line shows its two figures, and a
    campaign from before it renders as it did."""
    store = _write_fixture(tmp_path)
    before = render_report(store).read_text()
    cpu_line = next(line for line in before.splitlines() if line.startswith("| CPU |"))
    assert cpu_line == "| CPU | Fake CPU (16 logical cores) |"
    campaign = store.read_campaign()
    campaign["host"]["host_probe"] = {"python_call_us": 0.27125, "numpy_call_us": 19.96, "calls": 1000,
                                      "repeats": 7, "array_size": 100, "timer": "time.perf_counter_ns",
                                      "python_runs_ns": [271_250] * 7, "numpy_runs_ns": [19_960_000] * 7}
    store.write_campaign(campaign)
    after = render_report(store).read_text()
    assert ("| CPU | Fake CPU (16 logical cores); host probe 0.27 µs a Python call, 20.0 µs a small NumPy "
            "call |") in after.splitlines()
    assert [l for l in before.splitlines() if not l.startswith("| CPU |")] == \
        [l for l in after.splitlines() if not l.startswith("| CPU |")]


@pytest.mark.parametrize("where", ["beside the records", "--to"])
def test_an_interrupted_report_write_keeps_the_earlier_report(where, rendered, tmp_path, interrupted_write):
    from protocol.report import REPORT_NAME, report_text

    store, text = rendered
    to = None if where == "beside the records" else tmp_path / "elsewhere" / "report.md"
    path = interrupted_write.of(to or store.root / REPORT_NAME)
    with pytest.raises(OSError, match="No space left on device"):
        render_report(store, to=to)
    interrupted_write.check_kept()
    interrupted_write.paths.clear()
    assert render_report(store, to=to).read_text() == (text if to is None else report_text(store, beside=path.parent))
