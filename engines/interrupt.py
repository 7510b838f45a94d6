"""Ctrl-C in a command: exit status 130 and one line on stderr, at any moment (issue 28, item 4).

A command spends its first second importing NumPy, Numba, pandas...; a ``KeyboardInterrupt``
raised there (or anywhere in ``main`` that does not handle it) used to print a traceback. Every
entry point therefore does, before its heavy imports::

    from engines import interrupt
    interrupt.guard(__name__, "perf_ab.py")   # until main runs: Ctrl-C exits at once
    ...
    if __name__ == "__main__":
        interrupt.run(main)                   # main's own KeyboardInterrupt handling still applies

This module imports only the standard library, and ``engines/__init__.py`` loads its names
lazily, so importing it costs nothing. Both calls do nothing for a module that is imported rather
than run (a test, a spawned worker process re-importing the main script as ``__mp_main__``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from .exitcodes import ExitCode  # standard library only

_prog: str | None = None   # the command's name once guard() took SIGINT over
_previous = None           # the handler guard() replaced, given back while main runs


def guard(module_name: str, prog: str) -> None:
    """Make Ctrl-C end the command at once with one line (call before the heavy imports)."""
    global _prog, _previous
    if module_name != "__main__" or _prog is not None:
        return
    current = signal.getsignal(signal.SIGINT)
    if current is not signal.default_int_handler:
        return  # SIGINT ignored (started in the background, nohup) or already handled: leave it so
    _prog, _previous = prog, current
    signal.signal(signal.SIGINT, _exit_now)


def run(main) -> None:
    """``sys.exit(main())``; a ``KeyboardInterrupt`` that ``main`` lets out is one line and 130."""
    if _prog is not None:
        # main sees Python's own KeyboardInterrupt, so a command that handles it (perf_ab.py
        # engines says how to --resume, the clock lock resets the clocks) keeps doing so
        signal.signal(signal.SIGINT, _previous)
    try:
        code = main()
    except KeyboardInterrupt:
        _say()
        code = ExitCode.INTERRUPTED
    if _prog is not None:
        signal.signal(signal.SIGINT, _exit_now)  # while the interpreter shuts down
    sys.exit(code)


@contextlib.contextmanager
def ignored(*signums: int):
    """Ctrl-C (or each of ``signums``, e.g. SIGINT and SIGTERM) ignored inside the block: a command
    saving what it measured after a first Ctrl-C (a few writes) finishes the save rather than leave
    its files half written. Only the main thread may change a signal's handler; elsewhere the block
    runs unguarded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in signums or (signal.SIGINT,)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _exit_now(signum, frame):
    _say()
    raise SystemExit(ExitCode.INTERRUPTED)


def _say() -> None:
    try:
        print(f"{_prog or 'command'}: interrupted", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or a broken pipe: the status still says it
        pass
