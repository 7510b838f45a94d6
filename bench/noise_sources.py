#!/usr/bin/env python3
"""What each noise source contributes to an A/A interval (issue 32, step 1): one table over several
campaigns, each labelled by the experiment it is.

Each experiment is a campaign folder written by ``perf_ab.py engines --out DIR`` (read with the
project's record reader and its summary, protocol/records.py, protocol/report.py), given as
``LABEL=DIR``; one of them is the base (``--base``, default ``base``), the campaign without the
option under test. Per experiment and cell the table states the paired ratio B / A with its
hierarchical interval, the interval's relative half-width, the spread between and within the
worker processes, and the change of the half-width against the base's same cell: the source's
share, the fraction of the base's half-width the experiment removes (negative: wider). Then, from
the NVML clocks recorded per round, the correlation of the per-pair ratio and of the per-round time
with the SM clock ("constant" when every round ran at one clock), and, where the rounds hold both
timers of the engine region, host time minus CUDA-event time (protocol/noise.py). What the records
do not hold is said so in the table.

    python bench/noise_sources.py base=runs/noise/base l2-flush=runs/noise/l2-flush --out runs/noise

writes ``noise_sources.md`` and ``noise_sources.json`` into ``--out`` (the markdown is printed
too). The experiments of issue 32 run in one call with ``bash bench/gpu_session.sh BUDGET noise``.

Exit codes (engines/exitcodes.py): 0 the table written; 2 a bad argument, a missing folder, a
folder that holds no campaign or damaged records (the message names it).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "noise_sources.py")

from protocol.errors import UsageError, run_command  # noqa: E402
from protocol.exitcodes import ExitCode  # noqa: E402

PROG = "noise_sources.py"
NAME = "noise_sources"
DEFAULT_BASE = "base"


def parse_experiment(text: str) -> tuple[str, Path]:
    """``LABEL=DIR`` -> (label, folder)."""
    label, sep, folder = text.partition("=")
    if not sep or not label or not folder:
        raise UsageError(f"experiment {text!r}: give it as LABEL=DIR (e.g. base=runs/noise/base)")
    return label, Path(folder)


def read_experiment(label: str, folder: Path) -> dict:
    """One experiment's campaign: its parameters, summary and rounds, read and checked by the
    record reader; UsageError naming the folder when it is missing or holds no campaign."""
    from protocol.records import RecordStore
    from protocol.report import checked_summary

    if not folder.is_dir():
        raise UsageError(f"experiment {label}: {folder} is not a folder (run its campaign first, "
                         "perf_ab.py engines --out DIR)")
    store = RecordStore(folder)
    if not store.has_campaign():
        raise UsageError(f"experiment {label}: {folder} holds no campaign (no campaign.json): not a "
                         "perf_ab.py engines --out folder")
    campaign = store.read_campaign()
    rounds = store.read_rounds(campaign)
    summary = checked_summary(store, campaign, rounds, keep=False)  # never writes into the folder
    return {"label": label, "folder": folder, "campaign": campaign, "rounds": rounds, "summary": summary}


def planted_text(params: dict) -> str | None:
    """``B +2 %`` for a campaign with a planted delay (--plant-delay), else None."""
    planted = params.get("planted_delay")
    if not planted:
        return None
    return f"{planted.get('side')} +{planted.get('percent'):g} %"


def cell_entry(cell: dict, rows) -> dict:
    """One cell's line of the table, from its summary entry and its rounds."""
    from protocol.analysis import REGIONS
    from protocol.noise import clock_correlation, half_width, host_event_difference

    primary = cell.get("primary_region")
    paired = ((cell.get("regions") or {}).get(primary) or {}).get("paired")
    return {
        "cell": cell["cell"],
        "status": cell.get("status"),
        "region": primary,
        "pairs": (cell.get("accepted") or {}).get("A", 0),
        "processes": cell.get("processes") or 0,
        "ratio": cell.get("ratio"),
        "lo": cell.get("ratio_lo"),
        "hi": cell.get("ratio_hi"),
        "half_width": half_width(paired),
        "between": cell.get("between_spread"),
        "within": cell.get("within_spread"),
        "clock": clock_correlation(rows, REGIONS[primary]) if primary in REGIONS else None,
        "host_event": host_event_difference(rows, cell),
    }


def experiment_entry(experiment: dict) -> dict:
    from protocol.report import noise_options_text, summary_controls

    summary, rounds = experiment["summary"], experiment["rounds"]
    params = experiment["campaign"]["parameters"]
    cells = [cell_entry(c, rounds[rounds["cell"] == c["cell"]])
             for c in summary_controls(summary) + summary["cells"]]
    return {
        "label": experiment["label"],
        "folder": str(experiment["folder"]),
        "campaign_id": experiment["campaign"]["campaign_id"],
        "sides": summary["sides"],
        "options": noise_options_text(params).removeprefix(", ") or "none",
        "processes": params.get("processes"),
        "rounds": params.get("rounds"),
        "planted": planted_text(params),
        "reproduce": experiment["campaign"].get("reproduce"),
        "cells": cells,
    }


def with_shares(entries: list[dict], base: str) -> None:
    """Each cell's change of half-width against the base experiment's same cell (``delta``,
    absolute) and the source's share (protocol.noise.share_of_base); None where the base has no
    such cell, and for the base itself."""
    from protocol.noise import share_of_base

    base_cells = {c["cell"]: c for e in entries if e["label"] == base for c in e["cells"]}
    for entry in entries:
        for cell in entry["cells"]:
            mine = base_cells.get(cell["cell"]) if entry["label"] != base else None
            base_half = mine["half_width"] if mine else None
            cell["base_half_width"] = base_half
            cell["delta"] = (cell["half_width"] - base_half
                             if None not in (cell["half_width"], base_half) else None)
            cell["share"] = share_of_base(cell["half_width"], base_half)


def build_table(experiments: list[tuple[str, Path]], *, base: str = DEFAULT_BASE) -> dict:
    """The record of the table: every experiment's cells with their shares against ``base``."""
    labels = [label for label, _ in experiments]
    if not experiments:
        raise UsageError("no experiment given (LABEL=DIR ...)")
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UsageError(f"experiment label(s) given twice: {', '.join(repeated)}")
    if base not in labels:
        raise UsageError(f"--base {base}: no experiment of that label among {', '.join(labels)}")
    entries = [experiment_entry(read_experiment(label, Path(folder))) for label, folder in experiments]
    with_shares(entries, base)
    return {"base": base, "experiments": entries}


# -- the markdown ----------------------------------------------------------------------------------
def _pct(value, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{100 * value:+.2f} %" if signed else f"{100 * value:.2f} %"


def _points(value) -> str:
    return "–" if value is None else f"{100 * value:+.2f} pp"


def _r(value) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _interval(cell: dict) -> str:
    if None in (cell["ratio"], cell["lo"], cell["hi"]):
        return f"not measured ({cell['status']})"
    return f"{cell['ratio']:.4f} [{cell['lo']:.4f}, {cell['hi']:.4f}]"


def clock_text(clock: dict | None) -> str:
    if clock is None or clock["state"] == "not recorded":
        return "not recorded (no NVML clock readings)"
    if clock["state"] == "constant":
        return f"clock constant ({clock['min_mhz']:g} MHz, {clock['rounds']} rounds)"
    return f"{clock['min_mhz']:g}–{clock['max_mhz']:g} MHz ({clock['rounds']} rounds)"


def host_event_text(difference: dict) -> str:
    if difference["state"] != "recorded":
        return "not recorded (no CUDA-event times: host sides)"
    return (f"{1e3 * difference['median_ms']:.1f} µs [{1e3 * difference['q1_ms']:.1f}, "
            f"{1e3 * difference['q3_ms']:.1f}] ({_pct(difference['median_relative'], signed=True)})")


def markdown(table: dict) -> str:
    experiments = table["experiments"]
    lines = [f"# Noise sources: A/A experiments against `{table['base']}` (issue 32, step 1)", "",
             "Per experiment and cell: the paired ratio B / A with its 95 % hierarchical interval, its "
             "relative half-width, the spread of the pair ratios between the worker processes' medians "
             "(range / median) and within them (median of IQR / median), the half-width's change "
             f"against `{table['base']}`'s same cell in percentage points, and the source's share: the fraction of "
             f"`{table['base']}`'s half-width the experiment removes (negative: wider).", "",
             "## Experiments", "", "| experiment | options | planted | processes × rounds | folder |",
             "|---|---|---|---|---|"]
    for e in experiments:
        lines.append(f"| {e['label']} | {e['options']} | {e['planted'] or '–'} | {e['processes']} × {e['rounds']} | "
                     f"`{e['folder']}` |")
    lines += ["", "## Intervals and spreads", "",
              "| experiment | cell | pairs (processes) | ratio [95 %] | half-width | between | within | "
              "Δ half-width | share |", "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for e in experiments:
        for c in e["cells"]:
            lines.append(f"| {e['label']} | {c['cell']} | {c['pairs']} ({c['processes']}) | {_interval(c)} | "
                         f"±{_pct(c['half_width'])} | {_pct(c['between'])} | {_pct(c['within'])} | "
                         f"{_points(c['delta'])} | {_pct(c['share'], signed=True)} |")
    lines += ["", "## SM clock", "",
              "r(pair): the per-pair ratio B / A against clock A / clock B; r(round): each round's time "
              "over its worker's and side's median against its clock (NVML, median per round).", "",
              "| experiment | cell | SM clock | r(pair) | r(round) |", "|---|---|---|---:|---:|"]
    for e in experiments:
        for c in e["cells"]:
            clock = c["clock"] or {}
            lines.append(f"| {e['label']} | {c['cell']} | {clock_text(c['clock'])} | {_r(clock.get('r_pair_ratio'))} "
                         f"| {_r(clock.get('r_round_time'))} |")
    lines += ["", "## Host time against CUDA-event time (engine region)", "",
              "host − event per accepted round: median [quartiles] (median of host / event − 1); the "
              "half-width of the paired interval on either timer.", "",
              "| experiment | cell | rounds | host − event | half-width host | half-width event |",
              "|---|---|---:|---|---:|---:|"]
    for e in experiments:
        for c in e["cells"]:
            d = c["host_event"]
            lines.append(f"| {e['label']} | {c['cell']} | {d['rounds']} | {host_event_text(d)} | "
                         f"±{_pct(d['half_width_host'])} | ±{_pct(d['half_width_event'])} |")
    commands = [e for e in experiments if e.get("reproduce")]
    if commands:
        lines += ["", "## Commands", ""]
        lines += [f"- {e['label']}: `{e['reproduce']}`" for e in commands]
    return "\n".join(lines).replace("±–", "–") + "\n"


def run(experiments, *, base: str = DEFAULT_BASE, out=None, command: str | None = None) -> int:
    """The table with plain arguments: ``experiments`` a list of (label, folder); writes
    noise_sources.md and noise_sources.json into ``out`` (when given) and prints the markdown.
    ProtocolError (a missing folder, no campaign, damaged records) is raised for the caller; a file
    that cannot be written after the table is one line and exit 3 (protocol.records.write_or_say)."""
    from protocol.records import as_recorded, writable_folder, write_or_say

    table = build_table([(label, Path(folder)) for label, folder in experiments], base=base)
    # NumPy scalars as numbers, as every record holds them (a value of any other type is a bug
    # here: the records' rule raises instead of writing its text)
    record = as_recorded({"command": command or "", **table})
    text = markdown(table)
    print(text, end="")
    if out is not None:
        # after the reading (cheap): a bad experiment leaves no --out folder behind
        folder = writable_folder(out, f"--out {Path(out)}")
        # the table is printed above: a failed write is one line and its status
        failed = write_or_say(PROG, [(folder / f"{NAME}.json", record), (folder / f"{NAME}.md", text)])
        if failed is not None:
            return int(failed)
        print(f"{PROG}: wrote {folder / (NAME + '.md')} and {folder / (NAME + '.json')}", file=sys.stderr)
    return int(ExitCode.OK)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (UsageError), not a usage block."""

    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    from bench import options

    parser = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="+", metavar="LABEL=DIR",
                        help="an experiment: its label and its campaign folder (perf_ab.py engines --out DIR)")
    parser.add_argument("--base", default=DEFAULT_BASE, metavar="LABEL",
                        help=f"the experiment the others are compared with (default {DEFAULT_BASE})")
    options.add_table_out_option(parser, f"{NAME}.json and {NAME}.md")
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = shlex.join(["python", "bench/noise_sources.py", *argv])

    def work() -> int:
        args = build_parser().parse_args(argv)
        experiments = [parse_experiment(text) for text in args.experiments]
        return run(experiments, base=args.base, out=args.out, command=command)

    return run_command(work, prefix=f"{PROG}: error: ")


if __name__ == "__main__":
    interrupt.run(main)
