"""What preparing an input can go wrong with, as the protocol's errors (the one mapping behind
``perf_ab.py prepare`` and ``perf_ab.py engines``; the errors are :mod:`protocol.errors`, their
codes :mod:`engines.exitcodes`).

- a malformed, missing or unreadable file, an input that cannot be measured (``FileFormatError``,
  ``InputError``, ``InvalidArgumentError``, ``FileNotFoundError``): usage, exit 2;
- initial trees that differ from their reference (``TreeCheckError``): correctness, exit 1;
- an ``OSError`` on a file under the folders the command writes (the cache, ``--out``): the
  environment, exit 3 ("cannot write"); on any other file it is an input that cannot be read
  (exit 2); without a file name it is the environment (exit 3);
- not enough host memory: the environment, exit 3.

Anything else is a bug and is passed on (the commands print its traceback and say so).
"""

from __future__ import annotations

import os
from pathlib import Path

from engines.errors import FileFormatError, InvalidArgumentError, os_error_text
from protocol.errors import CorrectnessFailure, EnvironmentProblem, ProtocolError, UsageError


def _under(filename, folders) -> bool:
    path = os.path.abspath(os.fsdecode(filename))
    for folder in folders:
        root = os.path.abspath(os.fspath(folder))
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def prepare_failure(name: str, exc: BaseException, *, written: tuple[Path, ...] = ()) -> ProtocolError | None:
    """The error that ends the command when preparing graph ``name`` raised ``exc``, or None when
    ``exc`` is a bug; ``written`` are the folders the command writes into (the cache, ``--out``)."""
    from .prepare import InputError
    from .tree_check import TreeCheckError

    if isinstance(exc, (FileFormatError, InputError, InvalidArgumentError)):
        return UsageError(f"graph {name}: bad input: {exc}")
    if isinstance(exc, TreeCheckError):
        return CorrectnessFailure(f"graph {name}: the initial trees differ from their reference: {exc}")
    if isinstance(exc, FileNotFoundError) and not exc.filename:
        return UsageError(f"graph {name}: missing input: {exc}")
    if isinstance(exc, OSError):
        if not exc.filename:
            return EnvironmentProblem(f"graph {name}: an operating-system error while preparing its inputs: "
                                      f"{os_error_text(exc)}")
        if _under(exc.filename, written):
            return EnvironmentProblem(f"graph {name}: cannot write its prepared inputs: {os_error_text(exc)}")
        return UsageError(f"graph {name}: cannot read an input: {os_error_text(exc)}")
    if isinstance(exc, MemoryError):
        return EnvironmentProblem(f"graph {name}: not enough host memory to prepare it ({exc})")
    return None


def prepared(name: str, prepare, written: tuple = ()):
    """``prepare()``, its input and environment problems as the protocol's errors (one line, no
    traceback; ``prepare_failure``); ``written``: the folders the command writes (an OSError
    elsewhere is an input problem). A bug keeps its traceback."""
    try:
        return prepare()
    except Exception as exc:
        failure = prepare_failure(name, exc, written=written)
        if failure is None:
            raise
    raise failure


def prepared_in_cache(name: str, prepare, cache_dir=None):
    """``prepared`` for a command whose only written folder is the inputs' cache (``cache_dir``,
    engines.io.default_cache_dir's choice when None)."""
    from engines.io import default_cache_dir

    return prepared(name, prepare, (default_cache_dir(cache_dir),))


__all__ = ["prepare_failure", "prepared", "prepared_in_cache"]
