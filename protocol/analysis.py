"""From round records to the per-cell statistics of docs/protocol.md §7 (the summary record).

Used by the runner (adaptive stopping, the end-of-campaign summary) and by the report, so both
read the same numbers from the same rows.

A pair is identified by its worker and pair index (pair indexes count per worker). A *process* of
the statistics is one worker in one session: a unit resumed after a crash ran in a new process,
so its rounds of the new session are a process of their own (rows recorded before workers existed
are worker 0). The paired interval is the hierarchical bootstrap over those processes
(``stats.hierarchical_ratio``), which with one process is the plain paired bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .schema import SCHEMA_VERSION
from . import floor as floor_model
from . import planted_check
from .adaptive import imprecise
from .nvml import reason_names
from .stats import (hierarchical_ratio, process_spread, provisional, ratio_of_medians, round_trip_cost_ms,
                    summarize, verdict)

REGIONS = {
    "engine_device": "engine_device_ms",
    "engine_host": "engine_host_ms",
    "update_host": "update_host_ms",
}


def timed(rows: pd.DataFrame) -> pd.DataFrame:
    """Rounds that count for timing (not warm-up, not verification)."""
    return rows[~rows["warmup"].astype(bool)]


def verification(rows: pd.DataFrame) -> pd.DataFrame:
    """The untimed rounds that carried the CUPTI counter."""
    if "verification" not in rows:
        return rows.iloc[0:0]
    return rows[rows["verification"].fillna(False).astype(bool)]


def accepted(rows: pd.DataFrame) -> pd.DataFrame:
    t = timed(rows)
    return t[t["accepted"].astype(bool)]


def primary_region(rows: pd.DataFrame) -> str:
    """Device time when both sides have it (CUDA events), else host time of the engine region."""
    acc = accepted(rows)
    if len(acc) and acc["engine_device_ms"].notna().all():
        return "engine_device"
    return "engine_host"


def with_process(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with a ``process`` and a ``session`` in every row (0 where none was recorded)."""
    out = rows.copy()
    for name in ("process", "session"):
        out[name] = out[name].fillna(0).astype(int) if name in out else 0
    return out


def paired_frame(rows: pd.DataFrame, columns) -> pd.DataFrame:
    """The accepted pairs, one row per (process, pair_index), with ``columns`` of both roles
    (``(column, "A")``, ``(column, "B")``; NaN where a role lacks a value); empty where no pair
    has both roles. What every paired statistic aligns its two sides by."""
    return _paired(with_process(accepted(rows)), columns)


def _paired(acc: pd.DataFrame, columns) -> pd.DataFrame:
    """``paired_frame`` of rows already accepted and given their process."""
    if acc.empty:
        return pd.DataFrame()
    wide = acc.groupby(["process", "pair_index", "role"])[list(columns)].first().unstack("role")
    roles = wide.columns.get_level_values("role")
    if "A" not in roles or "B" not in roles:
        return pd.DataFrame()
    return wide.sort_index()


def paired_groups(rows: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, process) of the accepted pairs, aligned by worker and pair index; ``process`` labels
    the process of each pair as ``session * 1000 + worker`` (one label per process)."""
    empty = (np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64))
    acc = with_process(accepted(rows))
    wide = _paired(acc, [column])
    if wide.empty:
        return empty
    pairs = wide[column].dropna(subset=["A", "B"])
    # a pair lies within one session (a half pair left by an interruption is never accepted)
    session = acc.groupby(["process", "pair_index"])["session"].min().reindex(pairs.index)
    workers = pairs.index.get_level_values("process").to_numpy(dtype=np.int64)
    labels = session.to_numpy(dtype=np.int64) * 1000 + workers
    return pairs["A"].to_numpy(dtype=float), pairs["B"].to_numpy(dtype=float), labels


def paired_values(rows: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) values of the accepted pairs, aligned by worker and pair index."""
    a, b, _ = paired_groups(rows, column)
    return a, b


def primary_interval(rows: pd.DataFrame, *, resamples: int, seed: int):
    """The cell's paired ratio B / A on its primary region with the hierarchical interval over its
    processes and pairs (``stats.PairedRatio``): the ratio, interval and verdict the summary states
    for the cell (:func:`cell_summary`), and what the cell's adaptive stop judges (protocol/adaptive.py)."""
    a, b, processes = paired_groups(rows, REGIONS[primary_region(rows)])
    return hierarchical_ratio(a, b, processes, resamples=resamples, seed=seed)


def _median(series: pd.Series) -> float | None:
    s = series.dropna()
    return float(s.median()) if len(s) else None


def _clean(value):
    """NaN/inf -> None so the JSON record holds only real numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def cell_summary(rows: pd.DataFrame, *, resamples: int, seed: int, floor=None) -> dict:
    """The statistics of one cell's rounds (every region, both sides); ``floor``: the GPU's floor
    constants (protocol.floor.FloorConstants) or None."""
    acc = accepted(rows)
    t = timed(rows)
    by_role = {role: acc[acc["role"] == role] for role in ("A", "B")}
    regions = {}
    for region, column in REGIONS.items():
        a_vals = by_role["A"][column].dropna().to_numpy(dtype=float)
        b_vals = by_role["B"][column].dropna().to_numpy(dtype=float)
        if a_vals.size == 0 and b_vals.size == 0:
            continue
        sa, sb = summarize(a_vals), summarize(b_vals)
        pa_, pb_, processes = paired_groups(rows, column)
        pr = hierarchical_ratio(pa_, pb_, processes, resamples=resamples, seed=seed)
        spread = process_spread(pa_, pb_, processes)
        regions[region] = {
            "A": _clean(sa.as_dict()),
            "B": _clean(sb.as_dict()),
            "ratio_of_medians": _clean(ratio_of_medians(a_vals, b_vals))
            if a_vals.size and b_vals.size
            else None,
            "paired": _clean(pr.as_dict()),
            # the pair ratios within each process and between the processes' medians (docs/protocol.md §7)
            "processes": _clean(spread.as_dict()),
            "verdict": verdict(pr),
            "noisy": bool(sa.noisy or sb.noisy),
            "provisional": bool(
                (sa.count and provisional(sa.median, sa.count))
                or (sb.count and provisional(sb.median, sb.count))
            ),
        }
    primary = primary_region(rows)
    rejected_pairs = int(len(with_process(t.loc[~t["accepted"].astype(bool)])[["process", "pair_index"]]
                             .drop_duplicates()))
    reasons = (
        t.loc[~t["accepted"].astype(bool), "reject_reason"].dropna().value_counts().to_dict()
    )
    syncs = {}
    verified = verification(rows)
    for role, part in by_role.items():
        syncs[f"host_syncs_{role}"] = _median(part["host_syncs"])
        # the budget the engine states for each update (Stats.sync_budget, recorded every round):
        # the engine owns its formula; the conformance replay checks it independently
        syncs[f"sync_budget_{role}"] = _median(part["sync_budget"])
        # the independent count comes from the untimed verification rounds (docs/protocol.md §6)
        mine = verified[verified["role"] == role]
        syncs[f"cupti_syncs_{role}"] = _median(mine["cupti_syncs"])
        syncs[f"verified_rounds_{role}"] = int(mine["cupti_syncs"].notna().sum())
        syncs[f"iterations_{role}"] = _median(part["iterations"])
        syncs[f"epochs_{role}"] = _median(part["epochs"])
        engines = part["engine"].dropna().unique().tolist()
        syncs[f"engine_{role}"] = engines[0] if len(engines) == 1 else ",".join(map(str, engines))
    cost = None
    if primary in regions and None not in (syncs["host_syncs_A"], syncs["host_syncs_B"]):
        r = regions[primary]
        if r["A"]["median"] is not None and r["B"]["median"] is not None:
            cost = round_trip_cost_ms(
                r["A"]["median"], r["B"]["median"], syncs["host_syncs_A"], syncs["host_syncs_B"]
            )
    syncs["round_trip_ms"] = cost
    push = push_summary(rows, by_role, regions.get(primary), floor)
    reasons_seen = 0
    for v in t["event_reasons"].dropna():
        reasons_seen |= int(v)
    clocks = {
        "sm_min_mhz": _extreme(acc["sm_clock_min_mhz"], min),
        "sm_max_mhz": _extreme(acc["sm_clock_median_mhz"], max),
        "mem_mhz": _median(acc["mem_clock_mhz"]),
        "event_reasons_seen": reason_names(reasons_seen) if t["event_reasons"].notna().any() else None,
        "nvml_samples_median": _median(acc["nvml_samples"]),
        "temperature_peak_c": _extreme(t["temperature_peak_c"], max),
        "power_peak_w": _extreme(t["power_peak_w"], max),
        "foreign_cpu_max": _extreme(t["foreign_cpu_cores"], max),
    }
    main = regions.get(primary)
    return _clean(
        {
            "primary_region": primary,
            "accepted": {role: int(len(part)) for role, part in by_role.items()},
            "rejected": {
                role: int(((t["role"] == role) & ~t["accepted"].astype(bool)).sum())
                for role in ("A", "B")
            },
            "rejected_pairs": rejected_pairs,
            "reject_reasons": {str(k): int(v) for k, v in reasons.items()},
            "regions": regions,
            "verdict": main["verdict"] if main else "not measured",
            "ratio": main["paired"]["median"] if main else None,
            "ratio_lo": main["paired"]["lo"] if main else None,
            "ratio_hi": main["paired"]["hi"] if main else None,
            "noisy": bool(main and main["noisy"]),
            "provisional": bool(main and main["provisional"]),
            "processes": main["processes"]["processes"] if main else 0,
            "within_spread": main["processes"]["within"] if main else None,
            "between_spread": main["processes"]["between"] if main else None,
            "syncs": syncs,
            "push": push,
            "clocks": clocks,
        }
    )


def push_summary(rows: pd.DataFrame, accepted_by_role: dict, primary: dict | None,
                 floor=None) -> dict:
    """Per side: the push iterations of an update (median over accepted rounds), the median
    near-list length of its push iterations (recorded in the untimed rounds, where reading the
    device's log costs no timed round anything), the fused kernel's grid syncs, and the primary
    region's median time per push iteration in µs (issue 26: a short near list waits on latency,
    a long one on throughput). With the GPU's ``floor`` constants, also the floor of the median
    grid syncs (protocol/floor.py) and the primary region's median over it (issue 34); None on a
    side without grid syncs."""
    out = {}
    for role, part in accepted_by_role.items():
        iterations = _median(part["iterations"])
        mine = rows[rows["role"] == role]
        near = mine["near_median"] if "near_median" in mine else pd.Series(dtype=float)
        grid = part["grid_syncs"] if "grid_syncs" in part else pd.Series(dtype=float)
        median_ms = primary[role]["median"] if primary else None
        grid_syncs = _median(grid)
        floor_ms = floor_model.floor_ms(grid_syncs, floor)
        out[role] = {
            "iterations": iterations,
            "near_median": _median(near),
            "grid_syncs": grid_syncs,
            "us_per_iteration": (median_ms * 1e3 / iterations
                                 if median_ms is not None and iterations else None),
            "floor_ms": floor_ms,
            "over_floor": floor_model.over_floor(median_ms, floor_ms),
        }
    return out


def _extreme(series: pd.Series, pick):
    s = series.dropna()
    return float(pick(s)) if len(s) else None


def control_trust(control: dict | None) -> dict:
    """What the A/A control says of the campaign: untrustworthy when its interval excludes 1."""
    if control is None:
        return {"control": None, "untrustworthy": False, "detail": "no A/A control cell was run"}
    lo, hi = control.get("ratio_lo"), control.get("ratio_hi")
    if control.get("status") == "done" and control.get("ratio") is not None and (lo is None or hi is None):
        # a bound the summary holds as null beside a measured ratio is infinite (a round timed at
        # 0 ms): the control did measure, but an open interval cannot show that A agrees with itself
        shown = ", ".join("unbounded" if b is None else f"{b:.3f}" for b in (lo, hi))
        return {"control": control["cell"], "untrustworthy": True,
                "detail": f"A/A ratio {control['ratio']:.3f} [{shown}] is open (a round timed at 0 ms?), so it "
                          "cannot show that side A measures the same as itself"}
    if control.get("status") != "done" or lo is None or hi is None:
        return {"control": control["cell"], "untrustworthy": True,
                "detail": f"the A/A control cell did not measure ({control.get('status')})"}
    if lo <= 1 <= hi:
        return {"control": control["cell"], "untrustworthy": False,
                "detail": f"A/A ratio {control['ratio']:.3f} [{lo:.3f}, {hi:.3f}] contains 1"}
    return {"control": control["cell"], "untrustworthy": True,
            "detail": f"A/A ratio {control['ratio']:.3f} [{lo:.3f}, {hi:.3f}] excludes 1: side A against "
                      "itself differs, so differences in this campaign may be the machine's"}


def controls_trust(controls: list) -> dict:
    """What the A/A controls say (``--control every-gate``: one per graph): untrustworthy when any
    interval excludes 1 (or any control did not measure); one control: :func:`control_trust`."""
    if len(controls) <= 1:
        return control_trust(controls[0] if controls else None)
    judged = [control_trust(c) for c in controls]
    bad = [t for t in judged if t["untrustworthy"]]
    if bad:
        return {"control": bad[0]["control"], "untrustworthy": True,
                "detail": "; ".join(f"{t['control']}: {t['detail']}" for t in bad)}
    return {"control": judged[0]["control"], "untrustworthy": False,
            "detail": f"all {len(controls)} A/A controls contain 1"}


def gpu_floor(campaign: dict):
    """The floor constants recorded with the campaign's GPU (``perf_ab.py engines --floor``), or
    None."""
    record = (campaign.get("gpu") or {}).get("floor")
    return floor_model.FloorConstants.from_dict(record) if record else None


def build_summary(rounds: pd.DataFrame, campaign: dict) -> dict:
    """The summary record: campaign-level facts plus one entry per cell in campaign order."""
    params = campaign["parameters"]
    resamples = int(params.get("bootstrap_resamples", 2000))
    seed = int(params.get("seed", 0))
    floor = gpu_floor(campaign)
    cells = []
    control = None  # the first control (the only one unless --control every-gate)
    controls = []
    checks = []  # the planted checks (--planted-check, protocol/planted_check.py)
    for key, cell in campaign.get("cells", {}).items():
        rows = rounds[rounds["cell"] == key]
        entry = {
            "cell": key,
            "graph": cell["graph"],
            "batch": cell["batch"],
            "objective": cell["objective"],
            "status": cell["status"],
            "detail": cell.get("detail"),
        }
        entry.update(cell_summary(rows, resamples=resamples, seed=seed, floor=floor))
        if cell.get("adaptive") is not None:
            # the cell's adaptive stop (protocol/adaptive.py): its judgement as the runner recorded
            # it; a cell whose budget ran out before its interval reached --precision is noisy
            entry["adaptive"] = cell["adaptive"]
            entry["imprecise"] = imprecise(cell["adaptive"])
            entry["noisy"] = bool(entry["noisy"] or entry["imprecise"])
        if cell.get("control"):  # the A/A control: reported on its own, never among the A/B cells
            controls.append(dict(entry, control=True))
            control = control or controls[0]
            continue
        if cell.get("planted_check") is not None:  # a planted check: reported on its own, too
            checks.append(dict(entry, **planted_check.judge(entry, cell["planted_check"])))
            continue
        cells.append(entry)
    percent = params.get("planted_check")
    choice = campaign.get("planted_check")
    if percent is not None or checks:
        by_check = {c["cell"]: c for c in planted_check.check_cells(choice)} if choice else {}
        for entry in checks:
            chosen = by_check.get(entry["cell"]) or {}
            entry.update(checks_cell=chosen.get("checks"), chosen_as=chosen.get("chosen_as") or [])
        proof = {"planted_checks": checks, "proof": planted_check.proof(checks, percent, choice)}
    else:
        proof = {}
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": campaign["campaign_id"],
        "sides": campaign["parameters"]["sides"],
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": 0.95},
        "cells": cells,
        "control": control,
        "trust": controls_trust(controls),
        **({"controls": controls} if len(controls) > 1 else {}),
        **proof,
    }


__all__ = ["REGIONS", "control_trust", "controls_trust", "timed", "verification", "accepted", "primary_region", "with_process",
           "paired_frame", "paired_groups", "paired_values", "primary_interval", "cell_summary", "build_summary"]
