"""results/M7.md from the records alone (docs/protocol.md §10), rendered with jinja2.

``render_report(store)`` reads campaign.json, the rounds and summary.json (rebuilt from the rounds
when missing), draws the plots beside the report and renders ``templates/M7.md.j2``. No number in
the report is computed anywhere but in the summary record or the findings below, which only pick
and phrase numbers of the summary.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import jinja2

from .schema import UPDATE_REGION
from .analysis import build_summary, control_trust, gpu_floor
from .environment import REPO_ROOT, probe_figures
from .nvml import reason_names
from .plots import DISTRIBUTIONS, RATIO_VS_SYNCS, engine_time_distributions, ratio_against_syncs
from .errors import UsageError
from .record_checks import summary_difference
from .records import RecordStore, as_recorded, write_text
from .reproduce import prepare_command, reproduce_lines

TEMPLATE_DIR = REPO_ROOT / "templates"
TEMPLATE = "M7.md.j2"
REPORT_NAME = "M7.md"
PLOTS_DIR = "plots"


# -- formatting filters (one place, so tests can parse what the report prints) --------------------
def fmt_ms(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def fmt_ratio(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def fmt_count(value) -> str:
    if value is None:
        return "–"
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.1f}"


def fmt_pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def describe_weights(weights: dict | None) -> str:
    """How a graph file's weights were made, from the weight record of its facts."""
    weights = weights or {}
    if weights.get("from") == "file":
        return "its own weights"
    if {"num_objectives", "low", "high", "seed"} <= set(weights):
        return (f"weights drawn like the gates' (K = {weights['num_objectives']}, uniform in "
                f"[{weights['low']}, {weights['high']}], seed {weights['seed']})")
    return "weights not recorded"


def describe_origin(origin: dict | None, facts: dict | None = None) -> str:
    """An input's origin in words; ``facts`` (the input's recorded facts) say how a graph file's
    weights were made."""
    if not origin:
        return "unknown"
    kind = origin.get("kind")
    if kind == "real":
        return f"real file {origin.get('path')} (SHA-256 {str(origin.get('sha256'))[:16]}…)"
    if kind == "standin":
        params = origin.get("params") or {}
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        return f"stand-in: {origin.get('generator')}({shown}), seed {origin.get('seed')}"
    if kind == "file":
        how = [str(origin.get("format"))]
        if origin.get("one_based") is not None:
            how.append("ids one-based" if origin["one_based"] else "ids zero-based")
        how.append("symmetrized" if origin.get("symmetrize") else "directed as listed")
        return (f"graph file {origin.get('path')} ({', '.join(how)}), SHA-256 `{origin.get('sha256')}`, "
                f"{describe_weights((facts or {}).get('weights'))}")
    return ", ".join(f"{k}: {v}" for k, v in origin.items())


# the graph facts section 8 prints per input, in this order, where recorded
INPUT_FACTS = ("vertices", "directed_edges", "average_degree", "largest_component_share",
               "source_reachable_vertices", "source_hop_eccentricity", "hop_diameter_lower_bound", "local_radius")


def describe_facts(facts: dict | None) -> str:
    """The recorded graph facts as one line ("" when none were recorded)."""
    facts = facts or {}
    shown = []
    for name in INPUT_FACTS:
        value = facts.get(name)
        if value is None:
            continue
        text = f"{value:.4g}" if isinstance(value, float) else (f"{value:,}" if isinstance(value, int) else str(value))
        shown.append(f"{name.replace('_', ' ')} {text}")
    check = facts.get("initial_tree_check")
    if isinstance(check, dict):
        shown.append("initial trees checked against " + " and ".join(check.get("references", []))
                     if check.get("checked") else f"initial trees not checked ({check.get('reason')})")
    return "; ".join(shown)


# -- findings -------------------------------------------------------------------------------------
def findings(summary: dict, campaign: dict) -> list[str]:
    """Sentences built only from the summary: extremes, round-trip cost, noisy and failed cells."""
    sides = summary["sides"]
    cells = summary["cells"]
    measured = [c for c in cells if c["status"] == "done" and c["ratio"] is not None]
    out = []
    if measured:
        hi = max(measured, key=lambda c: c["ratio"])
        lo = min(measured, key=lambda c: c["ratio"])
        out.append(
            f"The largest ratio B/A ({sides['B']} over {sides['A']}) is {fmt_ratio(hi['ratio'])} on "
            f"{hi['cell']} ({hi['verdict']}); the smallest is {fmt_ratio(lo['ratio'])} on {lo['cell']} "
            f"({lo['verdict']})."
        )
        differ = [c for c in measured if c["verdict"] != "no difference detected"]
        out.append(
            f"{len(differ)} of {len(measured)} measured cells show a difference whose 95 % interval "
            "excludes 1."
        )
    costs = [(c["syncs"]["round_trip_ms"], c["cell"]) for c in measured if c["syncs"]["round_trip_ms"] is not None]
    if costs:
        costs.sort()
        median = statistics.median(cost for cost, _ in costs)
        out.append(
            f"One host round trip costs {fmt_ms(median)} ms, if the extra synchronizations explained "
            f"the whole difference (median over {len(costs)} cells; from {fmt_ms(costs[0][0])} ms on "
            f"{costs[0][1]} to {fmt_ms(costs[-1][0])} ms on {costs[-1][1]}; meaningless where B's loop "
            "runs on the device, with fewer readbacks than its budget)."
        )
    else:
        out.append("No cell has a difference in host synchronizations, so no round-trip cost is derived.")
    imprecise = [c for c in measured if c.get("imprecise")]
    # noisy by spread: the primary region's own flag (a cell's "noisy" also carries the adaptive stop's)
    noisy = [c["cell"] for c in measured
             if (c.get("regions", {}).get(c.get("primary_region")) or {}).get("noisy", c["noisy"] and not c.get("imprecise"))]
    out.append(
        f"Noisy cells (interquartile spread above 5 %): {', '.join(noisy)}." if noisy
        else "No measured cell is noisy (every interquartile spread is at most 5 %)."
    )
    if imprecise:
        out.append("Noisy, their interval wider than --precision when the adaptive stop's budget was spent: "
                   + ", ".join(f"{c['cell']} ({adaptive_text(c['adaptive'])})" for c in imprecise) + ".")
    provisional = [c["cell"] for c in measured if c["provisional"]]
    if provisional:
        out.append(f"Provisional (under 10 ms with fewer than 20 accepted rounds): {', '.join(provisional)}.")
    between = [(c["between_spread"], c["cell"]) for c in measured if c.get("between_spread") is not None]
    within = [c["within_spread"] for c in measured if c.get("within_spread") is not None]
    if between and within:
        widest, where = max(between)
        out.append(
            f"The medians of the worker processes differ by up to {fmt_pct(widest)} of the ratio (on {where}; "
            f"median over {len(between)} cells {fmt_pct(statistics.median(b for b, _ in between))}), against a "
            f"within-process spread of {fmt_pct(statistics.median(within))}; "
            "the intervals carry both."
        )
    for status, text in (("too_noisy", "too noisy to measure"), ("guard_failed", "failed the guard"),
                         ("check_failed", "failed a per-round check"),
                         ("worker_failed", "with a crashed worker process (continue with --resume)"),
                         ("running", "unfinished")):
        bad = [c["cell"] for c in cells if c["status"] == status]
        if bad:
            out.append(f"Cells {text}: {', '.join(bad)}.")
    rejected = sum(c["rejected_pairs"] for c in cells)
    if rejected:
        out.append(f"{rejected} pairs were rejected and repeated (reasons in the clocks section).")
    return out


# -- context --------------------------------------------------------------------------------------
def _clock_overview(summary: dict, campaign: dict) -> str:
    clocks = campaign.get("clocks") or {}
    mode = clocks.get("mode", "unknown")
    lows = [c["clocks"]["sm_min_mhz"] for c in summary["cells"] if c["clocks"]["sm_min_mhz"] is not None]
    highs = [c["clocks"]["sm_max_mhz"] for c in summary["cells"] if c["clocks"]["sm_max_mhz"] is not None]
    if mode == "lock":
        lock = clocks.get("lock") or {}
        text = f"locked at SM {lock.get('sm_mhz')} MHz"
        if lock.get("memory_locked"):
            text += f", memory {lock.get('mem_mhz')} MHz"
        text += f" (held under load: {lock.get('held_under_load')})"
    elif mode == "observe":
        text = "observed (not locked)"
    elif mode == "not_applicable":
        return "not applicable (host sides only)"
    else:
        return f"clocks unknown ({clocks.get('note') or 'NVML unavailable'})"
    if lows and highs:
        text += f"; SM clock seen {fmt_count(min(lows))}–{fmt_count(max(highs))} MHz in accepted rounds"
    return text


def process_spread_text(cell: dict) -> str:
    """``3: 0.4 % / 5.2 %``: the processes of a cell and its spread within / between them."""
    count = cell.get("processes") or 0
    if not count:
        return "–"
    between = cell.get("between_spread")
    return f"{count}: {fmt_pct(cell.get('within_spread'))} / {fmt_pct(between) if between is not None else '–'}"


def summary_controls(summary: dict) -> list[dict]:
    """The A/A control cells of a summary: every gate's with ``--control every-gate``, else the one."""
    return list(summary.get("controls") or ([summary["control"]] if summary.get("control") else []))


def control_rows(summary: dict) -> list[dict]:
    """The control table (``--control every-gate``: one row per gate): the cell, the medians of
    both roles, the ratio and interval, its relative half-width and whether it contains 1."""
    rows = []
    for c in summary_controls(summary):
        r = (c.get("regions") or {}).get(c.get("primary_region")) or {}
        lo, hi, ratio = c.get("ratio_lo"), c.get("ratio_hi"), c.get("ratio")
        measured = c.get("status") == "done" and None not in (lo, hi, ratio)
        rows.append({
            "cell": c["cell"],
            "graph": c["graph"],
            "a_ms": fmt_ms((r.get("A") or {}).get("median")),
            "b_ms": fmt_ms((r.get("B") or {}).get("median")),
            "ratio": f"{fmt_ratio(ratio)} [{fmt_ratio(lo)}, {fmt_ratio(hi)}]" if measured else "–",
            "half_width": f"±{100 * (hi - lo) / 2 / ratio:.2f} %" if measured else "–",
            "pairs": (c.get("accepted") or {}).get("A", 0),
            "judgement": ("contains 1" if lo <= 1 <= hi else "excludes 1") if measured
            else f"not measured ({c.get('status')})",
        })
    return rows


def planted_check_rows(summary: dict) -> list[dict]:
    """The planted-check table (``--planted-check``, protocol/planted_check.py): per check cell the
    cell checked and why it was chosen, A's median in both roles, the ratio and interval, the
    planted percent, detected / missed and whether the interval covers 1 + percent / 100."""
    rows = []
    for c in summary.get("planted_checks") or []:
        r = (c.get("regions") or {}).get(c.get("primary_region")) or {}
        lo, hi, ratio = c.get("ratio_lo"), c.get("ratio_hi"), c.get("ratio")
        measured = c.get("detected") is not None and None not in (lo, hi, ratio)
        rows.append({
            "cell": c["cell"],
            "chosen_as": " and ".join(c.get("chosen_as") or []) or "–",
            "a_ms": fmt_ms((r.get("A") or {}).get("median")),
            "b_ms": fmt_ms((r.get("B") or {}).get("median")),
            "ratio": f"{fmt_ratio(ratio)} [{fmt_ratio(lo)}, {fmt_ratio(hi)}]" if measured else "–",
            "percent": f"{c['percent']:g} %",
            "pairs": (c.get("accepted") or {}).get("A", 0),
            "detected": ("detected" if c["detected"] else "missed") if measured
            else f"not measured ({c.get('status')})",
            "covers": ("yes" if c.get("covers_planted") else "no") if measured else "–",
        })
    return rows


def process_rows(summary: dict) -> list[dict]:
    """The per-process table of section 2 (cells measured by more than one process, the A/A
    control first, the planted checks last); empty when every cell ran in one process."""
    cells = summary_controls(summary) + summary["cells"] + list(summary.get("planted_checks") or [])
    rows = []
    for c in cells:
        spread = (c.get("regions", {}).get(c.get("primary_region")) or {}).get("processes")
        if not spread or spread.get("processes", 0) < 2:
            continue
        rows.append({
            "cell": c["cell"],
            "processes": spread["processes"],
            "medians": ", ".join(f"{fmt_ratio(m)} ({n})" for m, n in zip(spread["medians"], spread["pairs"])),
            "within": spread["within"],
            "between": spread["between"],
        })
    return rows


def workers_line(campaign: dict) -> str:
    """How the cells were measured: how many worker processes, and how they ran."""
    params = campaign["parameters"]
    count = int(params.get("processes", 1))
    modes = {s.get("workers") for s in campaign.get("sessions") or []}
    if count == 1:
        return "one process per cell (the campaign's own)" + adaptive_line(params)
    share = -(-int(params["rounds"]) // count)
    if modes == {"in_process"}:
        return (f"{count} workers per cell ({share} accepted pairs each) run inside the campaign's process "
                "(in-process mode: no fresh process per worker)" + adaptive_line(params))
    line = f"{count} worker processes per cell ({share} accepted pairs each, a fresh spawned process per worker pass)"
    return line + adaptive_line(params)


def adaptive_line(params: dict) -> str:
    """The cell's adaptive stop, when the campaign had it (empty otherwise)."""
    if not params.get("adaptive") or params.get("adaptive_scope") != "cell":
        return ""
    least = params.get("min_processes")  # campaigns recorded before --min-processes judged from one
    return (f"; with the cell's adaptive stop: more worker processes until the cell's interval is within "
            f"±{100 * float(params['precision']):.2f} %"
            + (f" with at least {least} processes" if least else "")
            + f", at most {params['max_processes']} processes and {params['max_rounds']} pairs")


def noise_options_text(params: dict) -> str:
    """The protocol row's words for the noise options used (docs/protocol.md §2.5; empty when none)."""
    parts = []
    if params.get("alloc_order", "fixed") != "fixed":
        parts.append(f"allocation order {params['alloc_order']} per worker")
    if params.get("l2_flush"):
        parts.append("L2 flushed before every CUDA round")
    if params.get("discard_after_clock_change"):
        parts.append(f"{params['discard_after_clock_change']} rounds discarded from each SM clock change")
    return "".join(", " + p for p in parts)


def protocol_preset_text(params: dict) -> str:
    """The protocol row's opening words for a ``--protocol`` preset (empty for standard, which
    campaigns before the presets also were): the row's other words give the values it resolved to."""
    name = params.get("protocol", "standard")
    return "" if name == "standard" else f"preset {name}: "


def adaptive_scope_text(params: dict) -> str:
    """The protocol row's words for --adaptive: its target and what it judges (its scope)."""
    if not params.get("adaptive"):
        return ""
    target = f"±{100 * float(params['precision']):.2f} %"
    if params.get("adaptive_scope") == "cell":
        least = params.get("min_processes")
        return (f", adaptive to {target} judged per cell (scope cell: the cell's interval over its processes"
                + (f", at least {least} processes" if least else "")
                + f", at most {params['max_processes']} processes and {params['max_rounds']} pairs)")
    return (f", adaptive to {target} judged per worker process (scope process: each worker's own pairs, "
            f"at most {params['max_rounds']} rounds per cell)")


def adaptive_text(record: dict) -> str:
    """The adaptive stop's judgement of a cell in words: the half-width reached against the target,
    with the workers and pairs it took."""
    width = record.get("half_width")
    reached = "no interval" if width is None else f"±{100 * width:.2f} %"
    return (f"{reached} against ±{100 * record['precision']:.2f} % after {record['processes']} processes "
            f"and {record['pairs']} pairs")


def cell_flags(cell: dict) -> str:
    flags = [] if cell["status"] == "done" else [cell["status"]]
    for name in ("noisy", "provisional"):
        if not cell[name]:
            continue
        if name == "noisy" and cell.get("imprecise"):
            width = cell["adaptive"].get("half_width")
            name = "noisy (±" + ("?" if width is None else f"{100 * width:.2f}") + " % at the budget)"
        flags.append(name)
    return ", ".join(flags)


GPU_FIELDS = ("name", "sm_count", "memory_bytes", "compute_capability")
NVML_FIELDS = ("nvidia_driver", "default_sm_mhz", "max_sm_mhz", "ecc_current", "persistence_mode")
HOST_FIELDS = ("cuda_runtime", "cuda_driver", "cupy", "nvrtc", "cpu_model", "logical_cores", "host_probe", "os",
               "python", "numpy")


def _with_keys(record: dict | None, keys) -> dict:
    return {**dict.fromkeys(keys), **(record or {})}


def build_context(campaign: dict, summary: dict, plots: dict, *, records_dir: Path | None = None) -> dict:
    origins = {i["graph"]: i["origin"] for i in campaign["inputs"]}
    real = sorted(g for g, o in origins.items() if (o or {}).get("kind") in ("real", "file"))
    standins = sorted(g for g, o in origins.items() if (o or {}).get("kind") not in ("real", "file"))
    by_graph: dict[str, dict] = {}
    for c in summary["cells"]:
        by_graph.setdefault(c["graph"], {}).setdefault(c["batch"], []).append(c)
    # the environment records may lack fields (no GPU, no NVML): every field the template reads
    # is present, None where unknown, so the template stays strict about everything else
    gpu = _with_keys(campaign.get("gpu"), GPU_FIELDS)
    nvml = _with_keys((campaign.get("gpu") or {}).get("nvml"), NVML_FIELDS)
    host = _with_keys(campaign.get("host"), HOST_FIELDS)
    return {
        "campaign": campaign,
        "summary": summary,
        "sides": summary["sides"],
        "code_sessions": code_sessions(campaign),
        "update_region": update_region(campaign),
        "real_graphs": real,
        "standin_graphs": standins,
        "origins": {i["graph"]: describe_origin(i["origin"], i.get("facts")) for i in campaign["inputs"]},
        "input_facts": {i["graph"]: describe_facts(i.get("facts")) for i in campaign["inputs"]},
        "prepare_command": prepare_command(campaign),
        # section 9 (protocol/reproduce.py) and the planted-delay warning (protocol/planted_delay.py)
        "reproduce": reproduce_lines(campaign, records_dir or REPO_ROOT / "results"),
        "planted": campaign["parameters"].get("planted_delay"),
        "gpu": gpu,
        "nvml": nvml,
        "host": host,
        "host_probe_figures": probe_figures(host["host_probe"]) if host["host_probe"] else None,
        "clock_overview": _clock_overview(summary, campaign),
        "cells": summary["cells"],
        "control": summary.get("control"),
        "control_rows": control_rows(summary) if summary.get("controls") else [],
        "proof": summary.get("proof"),  # --planted-check (protocol/planted_check.py), or None
        "planted_check": campaign.get("planted_check"),
        "planted_check_rows": planted_check_rows(summary),
        "trust": summary.get("trust") or control_trust(summary.get("control")),
        "flags": {c["cell"]: cell_flags(c) for c in summary["cells"]},
        "process_spreads": {c["cell"]: process_spread_text(c) for c in summary["cells"]},
        "per_process": process_rows(summary),
        "workers_line": workers_line(campaign),
        "adaptive_scope": adaptive_scope_text(campaign["parameters"]),
        "noise_options": noise_options_text(campaign["parameters"]),
        "protocol_preset": protocol_preset_text(campaign["parameters"]),
        "floor": gpu_floor(campaign),  # the floor constants of section 4b (--floor), or None
        "by_graph": by_graph,
        "findings": findings(summary, campaign),
        "plots": plots,
        "params": campaign["parameters"],
        "reason_names": reason_names,
    }


def code_sessions(campaign: dict) -> list[dict]:
    """The commit each session ran (``sessions[i].git``). Older records kept one campaign-level
    ``git``: it stands for the first session, and later sessions say "not recorded"."""
    out = []
    for index, session in enumerate(campaign.get("sessions") or [{}]):
        git = session.get("git") or (campaign.get("git") if index == 0 else None)
        out.append({
            "index": index,
            "started_utc": session.get("started_utc"),
            "resumed": bool(session.get("resumed")),
            "recorded": git is not None,
            "commit": (git or {}).get("commit"),
            "dirty": bool((git or {}).get("dirty")),
        })
    return out


def update_region(campaign: dict) -> str:
    """What the "whole update" region of the campaign's rounds timed: ``user_path`` when every
    session recorded the real update() call (no apply memo), ``memo`` when none did (records of the
    earlier code, whose rounds republished the cell's first apply), ``mixed`` otherwise."""
    marks = [s.get("update_region") == UPDATE_REGION for s in campaign.get("sessions") or [{}]]
    if all(marks):
        return UPDATE_REGION
    return "mixed" if any(marks) else "memo"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(ms=fmt_ms, ratio=fmt_ratio, count=fmt_count, pct=fmt_pct)
    return env


def checked_summary(store: RecordStore, campaign: dict, rounds, *, keep: bool = True) -> dict:
    """The summary derived from the records, checked against summary.json. A summary.json stamped
    with these records' fingerprint that says anything else was changed after it was derived (by
    hand, or by another tool): exit 2 naming it, never a rendering of its numbers (issue 28: the
    fingerprint covers the records, not the summary's own content). A stale or damaged summary.json
    is only a cache: it is written again when ``keep`` (a rendering that writes beside the records)."""
    derived = as_recorded(build_summary(rounds, campaign))
    stored = store.read_summary()
    if stored is None:
        if keep:
            store.write_summary(derived)
        return derived
    difference = summary_difference({k: v for k, v in stored.items() if k != "records_sha256"}, derived)
    if difference:
        raise UsageError(
            f"{store.summary_path}: the summary does not match the records it claims to come from ({difference}): "
            f"it was changed after it was derived. Delete it and run `perf_ab.py report --out {store.root} --write` "
            "to derive it again from the records")
    return derived


def report_text(store: RecordStore, *, beside: Path | None = None, write: bool = False) -> str:
    """The report of the records in ``store``, as text. ``write``: the plots and summary.json are
    (re)written beside the records first, as a campaign's own last step does; otherwise nothing is
    written and the plot links point at the plots already there. Links are relative to ``beside``,
    the folder the text is meant to sit in (default: the records folder)."""
    campaign = store.read_campaign()
    rounds = store.read_rounds(campaign)
    summary = checked_summary(store, campaign, rounds, keep=write)
    plots_dir = store.root / PLOTS_DIR
    plots = {}
    if summary["cells"]:
        if write:
            engine_time_distributions(rounds, summary, plots_dir / DISTRIBUTIONS)
            ratio_against_syncs(summary, plots_dir / RATIO_VS_SYNCS)
        base = Path(beside if beside is not None else store.root).resolve()
        plots = {key: Path(os.path.relpath((plots_dir / name).resolve(), base)).as_posix()
                 for key, name in (("distributions", DISTRIBUTIONS), ("ratio", RATIO_VS_SYNCS))}
    return _environment().get_template(TEMPLATE).render(**build_context(campaign, summary, plots, records_dir=store.root))


def render_report(store: RecordStore, to: Path | None = None) -> Path:
    """Write the report of the records in ``store``; returns its path. By default ``<out>/M7.md``
    with its plots and summary.json beside the records (the campaign's own last step, and
    ``perf_ab.py report --write``); with ``to``, that one file alone, nothing beside the records
    touched, its plot links pointing at the records' plots."""
    if to is None:
        path, text = store.root / REPORT_NAME, report_text(store, write=True)
    else:
        path = Path(to)
        text = report_text(store, beside=path.parent)
    write_text(path, text)
    return path


__all__ = ["render_report", "report_text", "build_context", "code_sessions", "update_region", "findings", "fmt_ms", "fmt_ratio",
           "fmt_count", "describe_origin", "describe_facts", "describe_weights"]
