"""The one rule for compiling every Numba function of this project: :func:`njit`.

Numba's ``cache=True`` looks for a writable folder when a function is *decorated*, that is at
import: beside the source (``__pycache__``), then the user-wide cache (``$XDG_CACHE_HOME`` or
``~/.cache``). A read-only install run by a service account has neither, and Numba then raises
``RuntimeError: cannot cache function ...: no locator available``, so every command died at
import. The cache only saves compile time; it must never decide whether the program runs. So:

1. the default locators (and ``NUMBA_CACHE_DIR`` when set) when one works: nothing changes;
2. else a private folder under the temporary directory, used with ``NUMBA_CACHE_DIR``'s
   semantics for this function only;
3. else no on-disk cache, and one line on stderr, once per process, saying so.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from contextlib import contextmanager

import numba
from numba.core import config as _numba_config

# Numba's message when none of its cache locators can be used
_NO_LOCATOR = "no locator available"

_fallback_folder: str | None | bool = False   # False: not resolved yet; None: none usable
_warned = False


def njit(**options):
    """``numba.njit(cache=True, **options)`` that degrades instead of failing (module docstring)."""

    def decorate(func):
        try:
            return numba.njit(cache=True, **options)(func)
        except RuntimeError as exc:
            if _NO_LOCATOR not in str(exc):
                raise
        folder = _fallback_cache_folder()
        if folder is not None:
            with _numba_cache_dir(folder):
                try:
                    return numba.njit(cache=True, **options)(func)
                except RuntimeError as exc:
                    if _NO_LOCATOR not in str(exc):
                        raise
        _warn_once(f"ssspab: Numba's on-disk cache is disabled (no writable cache folder beside "
                   f"the sources, in the user's cache or under {tempfile.gettempdir()}); "
                   "compiled functions are rebuilt in every process (set NUMBA_CACHE_DIR to keep them)")
        return numba.njit(cache=False, **options)(func)

    return decorate


def _fallback_cache_folder() -> str | None:
    """A folder of our own under the temporary directory, or None; resolved once per process."""
    global _fallback_folder
    if _fallback_folder is False:
        _fallback_folder = _private_folder(os.path.join(tempfile.gettempdir(), _folder_name()))
    return _fallback_folder


def _folder_name() -> str:
    # one folder per user: the temporary directory is shared by every account on the machine
    return f"ssspab-numba-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def _private_folder(path: str) -> str | None:
    """``path`` if it is (or can be made) a directory owned by this user that nobody else can
    write, else None. Numba's cache files are pickles, loading one runs code: a folder in a shared
    temporary directory that another account created, or may write, must not be trusted."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return None
    if not os.access(path, os.W_OK | os.X_OK):
        return None
    return path


@contextmanager
def _numba_cache_dir(folder: str):
    """``NUMBA_CACHE_DIR`` for the decorations inside only: Numba reads it when it builds a
    function's locator, which keeps the path, so the process-wide setting is put back after."""
    previous = _numba_config.CACHE_DIR
    _numba_config.CACHE_DIR = folder
    try:
        yield
    finally:
        _numba_config.CACHE_DIR = previous


def _warn_once(line: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        print(line, file=sys.stderr)
