"""Deprecated alias, kept for one release (issue 29): ``python bench/compare.py ...`` is
``python -m conformance compare ...`` (``conformance/compare.py``), same options and exit status."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "compare.py")

from conformance.compare import *  # noqa: E402,F401,F403
from conformance.compare import main as _main  # noqa: E402


def main(argv=None) -> int:
    return _main(argv, prog="bench/compare.py")


if __name__ == "__main__":
    interrupt.run(main)
