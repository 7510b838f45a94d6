"""One campaign per records folder (issue 28, item 3): an exclusive lock on ``--out``.

Two campaigns writing into one folder mix their round files (two campaign ids in one record), so
``perf_ab.py engines`` takes this lock before it checks or writes anything in ``--out`` and holds
it until it exits. The lock is ``fcntl.flock`` on ``<out>/.campaign.lock``: the kernel drops it
when its holder dies however it dies (SIGKILL, a lost machine), so a lock left by a dead process is
never an obstacle; the file only says who holds it (pid and start time), for the message that
refuses a second campaign. A holder empties the file when it lets go, so a lock acquired over a
file that still names a process is a stale lock from a holder that died: it is taken over
(``stale_holder`` says whose it was) and the new holder's line replaces the old one.

The file is never deleted: unlinking a locked file lets a third process lock a fresh file of the
same name while the second still holds the old one, and the folder would have two holders.
"""

from __future__ import annotations

import errno
import fcntl
import os
from datetime import datetime, timezone
from pathlib import Path

from .errors import UsageError

LOCK_NAME = ".campaign.lock"


def _describe_self() -> bytes:
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return f"pid {os.getpid()}, started {started}\n".encode()


class OutLock:
    """The exclusive lock of one records folder; ``acquire()`` raises ``UsageError`` (exit 2)
    naming the holder when another process holds it."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None
        self.stale_holder: str | None = None  # the line of a dead holder whose lock was taken over

    def acquire(self) -> "OutLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise
            raise UsageError(
                f"--out {self.folder} is in use by another campaign ({holder}; lock file {self.path}): "
                "one campaign per folder. Wait for it to end, or choose another --out folder") from None
        # ours now. A holder empties the file when it lets go, so a line still there was left by a
        # holder that died holding the lock: a stale lock, taken over (the line is kept to say so)
        self.stale_holder = _read_holder(fd, empty=None)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _describe_self(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # still held: no one reads a half-emptied line
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> "OutLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def running_campaign(folder) -> str | None:
    """Who holds ``folder``'s lock now ("pid 123, started ..."), or None when no campaign runs
    there. Only reads: a shared lock tried on the existing file, never creating it, so a report
    printed from a folder (perf_ab.py report) writes nothing into it."""
    path = Path(folder) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None  # no campaign ever locked this folder
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES, errno.EAGAIN):
                raise
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int, empty="a process that has not written its pid yet"):
    """The holder's line in the lock file ("pid 123, started ..."), or ``empty`` when it has none."""
    text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    return text or empty


__all__ = ["OutLock", "LOCK_NAME", "running_campaign"]
