"""Can an output path be written? Checked before any work, without creating anything.

``output_problem(path, folder=...)`` says why a file (``folder=False``) or a folder receiving files
(``folder=True``) cannot be written there, or returns None. It looks at what exists: the path
itself, else its nearest existing ancestor, which must be a writable folder (``os.access``, so a
read-only mount counts as read-only and a user with the rights, such as root, may write).
"""

from __future__ import annotations

import os
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    ancestor = path.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    return ancestor


def output_problem(path: str | Path, *, folder: bool) -> str | None:
    """Why ``path`` cannot receive the output, in words naming the path; None when it can."""
    path = Path(path)
    if path.exists():
        if folder and not path.is_dir():
            return f"{path} exists and is not a folder"
        if not folder and path.is_dir():
            return f"{path} is a folder, not a file"
        where = path if folder else path.parent
        if not os.access(where, os.W_OK | os.X_OK):
            return f"{where} is not writable (permission denied)"
        if not folder and not os.access(path, os.W_OK):
            return f"{path} exists and is read-only"
        return None
    ancestor = _nearest_existing(path)
    if not ancestor.is_dir():
        return f"cannot create {path}: {ancestor} is a file, not a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot create {path}: {ancestor} is not writable (permission denied)"
    return None


__all__ = ["output_problem"]
