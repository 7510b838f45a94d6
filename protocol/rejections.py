"""Why a campaign ends with exit 4 (docs/protocol.md §8), in words a user can act on.

A round is rejected for its clocks or for contamination (``clocks.judge_round_clocks``,
``monitor.judge_contamination``); a cell whose rejected pairs exceed ``--max-rejects`` is too
noisy, and an A/A control whose interval excludes 1 makes the whole campaign untrustworthy. This
module maps the recorded reasons to the option that relaxes each (or says that none does) so that
the last lines of ``perf_ab.py engines`` name the cause and the way on, from the summary alone.
"""

from __future__ import annotations

import re

_PAIR_REPEATED = re.compile(r"^pair repeated \(other round: (?P<inner>.*)\)$")


def reason_kind(reason: str) -> str:
    """The rejection's cause: ``foreign_cpu``, ``foreign_gpu``, ``sm_clock_low``, ``sm_clock_lock``,
    ``clock_event``, ``memory_clock`` or ``other`` (a pair's partner carries its round's reason)."""
    inner = _PAIR_REPEATED.match(reason)
    text = inner.group("inner") if inner else reason
    if text.startswith("foreign CPU load"):
        return "foreign_cpu"
    if text.startswith("foreign GPU process"):
        return "foreign_gpu"
    if text.startswith("SM clock") and " below " in text:
        return "sm_clock_low"
    if text.startswith("SM clock") and "locked" in text:
        return "sm_clock_lock"
    if text.startswith("clock event"):
        return "clock_event"
    if text.startswith("memory clock"):
        return "memory_clock"
    return "other"


def remedy(kind: str, params: dict) -> str:
    """What relaxes a rejection of this kind (with the campaign's current value), or what to do."""
    if kind == "foreign_cpu":
        return (f"other processes used more CPU than --max-foreign-cpu {params.get('max_foreign_cpu'):g} cores: "
                "stop them, or raise --max-foreign-cpu")
    if kind == "sm_clock_low":
        return (f"the SM clock fell below --min-clock-fraction {params.get('min_clock_fraction'):g} of its max: "
                "let the GPU cool or idle, or lower --min-clock-fraction")
    if kind == "foreign_gpu":
        return "another process used the GPU: no option relaxes this, stop that process"
    if kind == "sm_clock_lock":
        return "the locked SM clock did not hold: no option relaxes this, run without --lock-clocks (observe)"
    if kind == "clock_event":
        return "the GPU reported throttling (power, thermal or similar): no option relaxes this, let it cool"
    if kind == "memory_clock":
        return "the memory clock changed within the cell: no option relaxes this, keep the GPU's clocks steady"
    return "see the reasons in the report's clocks section"


def too_noisy_explanation(summary: dict | None, params: dict) -> list[str]:
    """One line per too-noisy cell (its rejection reasons by cause and what relaxes each) and one
    for an untrustworthy A/A control; empty when neither."""
    if summary is None:
        return []
    lines = []
    controls = list(summary.get("controls") or ([summary["control"]] if summary.get("control") else []))
    cells = list(summary.get("cells") or []) + controls + list(summary.get("planted_checks") or [])
    for cell in cells:
        if cell.get("status") != "too_noisy":
            continue
        by_kind: dict[str, int] = {}
        for reason, count in (cell.get("reject_reasons") or {}).items():
            kind = reason_kind(reason)
            by_kind[kind] = by_kind.get(kind, 0) + int(count)
        causes = "; ".join(f"{n} rejected rounds: {remedy(kind, params)}"
                           for kind, n in sorted(by_kind.items(), key=lambda item: -item[1]))
        lines.append(f"cell {cell['cell']} is too noisy: {cell.get('rejected_pairs')} rejected pairs exceed "
                     f"--max-rejects {params.get('max_rejects')} (raise it to repeat more pairs)"
                     + (f"; {causes}" if causes else ""))
    trust = summary.get("trust") or {}
    if trust.get("untrustworthy"):
        lines.append(f"the campaign is untrustworthy: {trust.get('detail')}; run it on a quieter machine, "
                     "or with more --rounds")
    return lines


__all__ = ["reason_kind", "remedy", "too_noisy_explanation"]
