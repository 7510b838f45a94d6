"""Exit status of ``perf_ab.py engines`` (docs/protocol.md §8) and the errors that carry one."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    CORRECTNESS = 1  # trees or counters differ, sync count over budget, digest mismatch
    USAGE = 2  # bad arguments, unreadable input, unknown gate name
    ENVIRONMENT = 3  # no CUDA GPU, no cooperative launch for fused, clock lock not permitted, a crashed worker
    TOO_NOISY = 4  # a cell had more rejections than --max-rejects


class ProtocolError(Exception):
    """An error that ends the command with a given exit code and a message for the user."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str):
        super().__init__(message)


class UsageError(ProtocolError):
    exit_code = ExitCode.USAGE


class EnvironmentProblem(ProtocolError):
    exit_code = ExitCode.ENVIRONMENT


class CorrectnessFailure(ProtocolError):
    """A check of the inputs found a wrong answer (an initial tree against its reference)."""

    exit_code = ExitCode.CORRECTNESS


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


__all__ = ["ExitCode", "ProtocolError", "UsageError", "EnvironmentProblem", "CorrectnessFailure",
           "campaign_exit_code"]
