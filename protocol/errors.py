"""The errors that end an A/B command with a given exit status (:class:`engines.exitcodes.ExitCode`)."""

from __future__ import annotations

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


__all__ = ["ProtocolError", "UsageError", "EnvironmentProblem", "CorrectnessFailure"]
