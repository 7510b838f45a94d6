"""The exception hierarchy of the engines (docs/algorithm.md §8.1, D5).

Every error the package raises on purpose is an ``engines.errors.Error``; the second base lets
callers catch the familiar built-in category (``ValueError``, ``MemoryError`` ...) as well.

The command lines (``engines.cli``, ``bench/perf_ab.py``) word the errors they end with through
:func:`os_error_text` (an ``OSError`` naming its file) and :func:`print_internal_error` (a bug: the
traceback and one line saying so).
"""

from __future__ import annotations

import sys
import traceback


class Error(Exception):
    """Root of every error raised by the engines."""


class InvalidArgumentError(Error, ValueError):
    """Bad arguments, options, batches or trees; also ``invalid_input`` and ``parent_cycle``.

    ``reason`` names the post-commit condition (``"invalid_input"``, ``"parent_cycle"``) when the
    error was found after the batch was applied, else ``None``.
    """

    def __init__(self, message: str, *, reason: str | None = None):
        super().__init__(message)
        self.reason = reason


class StaleResultError(InvalidArgumentError):
    """A poisoned result, or a result of another graph or graph version."""


class NotSupportedError(Error, NotImplementedError):
    """A backend, engine or operation that cannot run here (no GPU, no cooperative launch...)."""


class CudaError(Error, RuntimeError):
    """A CUDA runtime, driver or NVRTC failure; ``code`` holds the CUDA status where known."""

    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.code = code


class OutOfMemoryError(Error, MemoryError):
    """A failed device (or host) allocation."""


class InternalError(Error, RuntimeError):
    """A broken invariant: a bug in the engines, never a user error."""


class FileFormatError(Error, OSError):
    """A graph or tree file that cannot be parsed; the message names the file and line."""


INVALID_INPUT_MESSAGE = (
    "an input distance is negative or larger than (n - 1) x max weight; "
    "the input tree does not belong to this graph"
)
PARENT_CYCLE_MESSAGE = (
    "the input shortest-path tree has a parent cycle "
    "(pointer jumping did not reach a root in ceil(log2 n) + 1 rounds)"
)


def os_error_text(exc: OSError) -> str:
    """An ``OSError`` in words, naming its file where it has one: ``"PATH: Permission denied"``."""
    where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
    return f"{where}{getattr(exc, 'strerror', None) or exc}"


def print_internal_error(prefix: str, exc: BaseException, *, package: str = "ssspab",
                         blamed: str = "the input", then: str = "") -> None:
    """On stderr: the traceback of ``exc`` (a bug) and one line saying it is one, starting with
    ``prefix`` and ending with ``then`` (what the user can do next)."""
    traceback.print_exception(exc)
    print(f"{prefix}internal error (a bug in {package}, not a problem with {blamed}): "
          f"{type(exc).__name__}: {exc}; please report it with the traceback above{then}", file=sys.stderr)


def invalid_input_error(detail: str = "") -> InvalidArgumentError:
    """The post-commit ``invalid_input`` report (algorithm.md §8.3); every engine raises it."""
    message = INVALID_INPUT_MESSAGE + (f" ({detail})" if detail else "")
    return InvalidArgumentError(message, reason="invalid_input")


def parent_cycle_error(detail: str = "") -> InvalidArgumentError:
    """The post-commit ``parent_cycle`` report (algorithm.md §8.3); every engine raises it."""
    message = PARENT_CYCLE_MESSAGE + (f" ({detail})" if detail else "")
    return InvalidArgumentError(message, reason="parent_cycle")


__all__ = [
    "Error",
    "InvalidArgumentError",
    "StaleResultError",
    "NotSupportedError",
    "CudaError",
    "OutOfMemoryError",
    "InternalError",
    "FileFormatError",
    "invalid_input_error",
    "parent_cycle_error",
    "os_error_text",
    "print_internal_error",
]
