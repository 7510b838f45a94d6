"""The exit-status table (:class:`engines.exitcodes.ExitCode`, re-exported) and the campaign's rule:
the status of ``perf_ab.py engines`` from its cells (docs/protocol.md §8). The errors that carry a
status are in :mod:`protocol.errors`."""

from __future__ import annotations

from engines.exitcodes import ExitCode


def campaign_exit_code(cell_statuses, *, untrustworthy: bool = False) -> ExitCode:
    """The exit status of a finished campaign from its cells' statuses and its A/A control.

    A correctness failure outranks a noisy cell: a wrong answer matters more than a slow
    measurement, and the other cells still ran either way. An A/A control whose interval excludes
    1 puts the measurement itself in doubt: too noisy (docs/protocol.md §7, §8).

    A cell whose worker process crashed (``worker_failed``: killed, a device fault, an error that
    ended the process) is not a wrong answer: its finished rounds are kept and ``--resume``
    re-runs that worker. It is an environment problem (exit 3), ranked after correctness and
    before noise, since the campaign is incomplete until resumed.
    """
    statuses = set(cell_statuses)
    if statuses & {"guard_failed", "check_failed"}:
        return ExitCode.CORRECTNESS
    if "worker_failed" in statuses:
        return ExitCode.ENVIRONMENT
    if "too_noisy" in statuses or untrustworthy:
        return ExitCode.TOO_NOISY
    return ExitCode.OK


__all__ = ["ExitCode", "campaign_exit_code"]
