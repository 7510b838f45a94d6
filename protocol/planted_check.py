"""The planted checks (issue 32 item 4, docs/protocol.md §7): the proof, in every campaign that asks
for it, that its statistics detect a slowdown of a given size on its own shortest and longest cell.

``perf_ab.py engines --planted-check PERCENT`` adds up to two cells at the end of the campaign: side
A against itself with a delay of ``PERCENT`` % planted on the B role (protocol/planted_delay.py: a
host busy wait at the end of the engine region, calibrated on the cell's own warm-up), on the
campaign's *shortest* and *longest* cell. Unlike ``--plant-delay`` (every cell of a campaign
planted, the whole campaign a test), the campaign's own cells are measured as without the option;
the check cells are reported on their own, never among the A/B cells.

Which cells: once every cell of the campaign (the A/A controls aside) has a terminal status, the
cells that are ``done`` are ranked by side A's median primary region (device time where both sides
have it, else host time of the engine region) over their accepted rounds; the shortest is the
lowest median, the longest the highest, ties broken by the cell's key. The choice is recorded in
campaign.json (``planted_check``: the percent, the two cells and their medians) before the first
check cell runs, and a resumed campaign replays it. One cell done: one check cell (both roles).
A campaign some of whose cells never finished chooses nothing (a resume does, once they have).

The rule (:func:`judge`): the check *detected* the plant when the lower bound of its ratio's
hierarchical 95 % interval (B / A, the delayed role over the plain) is above 1; it also says whether
the interval *covers* the planted ratio 1 + PERCENT / 100 (the plant's calibration is PERCENT % of
the warm-up median, so a campaign whose interval covers it measures the size too, not only the
sign). A 0 % check plants nothing: it is an A/A cell on the same cells, which must not detect.

A missed detection marks the campaign's proof as failed in the report and the summary
(``proof``); it does not change the exit status. Exit 4 (too noisy, an A/A control excluding 1)
says that the campaign's differences may be the machine's: its positive results cannot be
trusted. A missed planted check says the opposite kind of thing: the campaign cannot resolve a
difference of that size, which every cell's interval width already shows, and its detected
differences stay trustworthy. The command prints the proof's line either way.
"""

from __future__ import annotations

from .planted_delay import PlantedSide
from .sides import Side

OPTION = "--planted-check"
#: The key of a planted-check cell: the cell it checks plus this suffix.
SUFFIX = "/planted-check"
#: How the cells are chosen, as the record and the report say it.
RULE = ("side A's median primary region over the accepted rounds of the campaign's done cells: the lowest "
        "(shortest) and the highest (longest), ties by cell key")
ROLES = ("shortest", "longest")


def sides(side_a: Side, percent: float) -> tuple[Side, Side]:
    """A check cell's sides: side A in role A, side A delayed by ``percent`` % in role B (a plant of
    the campaign's own, ``--plant-delay``, is refused with this option: config.py)."""
    return side_a, PlantedSide.around(side_a, float(percent))


def check_key(key: str) -> str:
    return key + SUFFIX


def choose(candidates: list[dict], percent: float) -> dict | None:
    """The recorded choice from ``candidates`` (dicts with ``cell``, ``graph``, ``batch``,
    ``objective`` and ``median_ms``, the done cells with a median); None when there is none."""
    ranked = sorted((c for c in candidates if c.get("median_ms") is not None),
                    key=lambda c: (float(c["median_ms"]), c["cell"]))
    if not ranked:
        return None
    record = {"percent": float(percent), "rule": RULE, "candidates": len(ranked)}
    for role, c in zip(ROLES, (ranked[0], ranked[-1])):
        record[role] = {"cell": c["cell"], "graph": c["graph"], "batch": c["batch"],
                        "objective": int(c["objective"]), "median_ms": float(c["median_ms"]),
                        "check": check_key(c["cell"])}
    return record


def check_cells(choice: dict) -> list[dict]:
    """The check cells of a recorded choice, shortest first, each once: ``cell`` (the check's key),
    ``checks`` (the cell checked), ``graph``, ``batch``, ``objective`` and ``chosen_as``."""
    out: dict[str, dict] = {}
    for role in ROLES:
        c = choice[role]
        entry = out.setdefault(c["check"], {"cell": c["check"], "checks": c["cell"], "graph": c["graph"],
                                            "batch": c["batch"], "objective": c["objective"], "chosen_as": []})
        entry["chosen_as"].append(role)
    return list(out.values())


def judge(entry: dict, percent: float) -> dict:
    """A check cell's verdict (module docstring): ``detected`` when its interval's lower bound is
    above 1, ``covers_planted`` when it contains 1 + percent / 100; both None when it did not
    measure."""
    lo, hi = entry.get("ratio_lo"), entry.get("ratio_hi")
    planted = 1.0 + float(percent) / 100.0
    measured = entry.get("status") == "done" and lo is not None and hi is not None
    return {"percent": float(percent), "planted_ratio": planted,
            "detected": bool(lo > 1.0) if measured else None,
            "covers_planted": bool(lo <= planted <= hi) if measured else None}


def proof(checks: list[dict], percent: float | None, choice: dict | None) -> dict:
    """The campaign's proof from its judged check cells: ``passed`` when every check detected its
    plant (a 0 % check: when none did, the plant being nothing), else failed, with the reason."""
    pct = 0.0 if percent is None else float(percent)
    if not checks:
        why = ("the planted checks run once every cell of the campaign has finished (continue with --resume)"
               if choice is None else "no planted-check cell was measured")
        return {"percent": pct, "passed": False, "detail": why, "checks": 0, "detected": 0}
    detected = sum(1 for c in checks if c.get("detected"))
    unmeasured = [c["cell"] for c in checks if c.get("detected") is None]
    if unmeasured:
        passed, detail = False, f"{', '.join(unmeasured)} did not measure"
    elif pct == 0:
        passed = detected == 0
        detail = ("no difference detected without a plant (0 %)" if passed
                  else f"{detected} of {len(checks)} checks detected a difference with nothing planted")
    else:
        passed = detected == len(checks)
        detail = (f"a planted {pct:g} % detected in {detected} of {len(checks)} checks" if passed
                  else f"a planted {pct:g} % missed in {len(checks) - detected} of {len(checks)} checks: the "
                       f"campaign does not resolve a {pct:g} % difference there")
    return {"percent": pct, "passed": passed, "detail": detail, "checks": len(checks), "detected": detected}


__all__ = ["OPTION", "SUFFIX", "RULE", "ROLES", "sides", "check_key", "choose", "check_cells", "judge", "proof"]
