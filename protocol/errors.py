"""The errors that end an A/B command with a given exit status (:class:`engines.exitcodes.ExitCode`)."""

from __future__ import annotations

import sys
from typing import Callable

from .exitcodes import ExitCode


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


def run_command(work: Callable[[], int], *, prefix: str) -> int:
    """A command's ``main()`` around ``work`` (parse the arguments and run; returns the exit status):
    argparse's own exit (``--help``: 0) is returned as the status, and a ProtocolError is one line
    on stderr, ``prefix`` then the message, ending the command with the error's exit code. Anything
    else (a bug) keeps its traceback."""
    try:
        return int(work())
    except SystemExit as exc:  # --help, argparse's errors
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)  # a message, printed and status 1 as Python itself does
        return 1
    except ProtocolError as exc:
        print(f"{prefix}{exc}", file=sys.stderr)
        return int(exc.exit_code)


__all__ = ["ProtocolError", "UsageError", "EnvironmentProblem", "CorrectnessFailure", "run_command"]
