"""Deprecated alias, kept for one release (issue 29): ``python -m bench.golden ...`` is
``python -m conformance ...`` and ``bench.golden`` is ``conformance.golden``."""

from __future__ import annotations

from engines import interrupt  # standard library only: before the heavy imports

interrupt.guard(__name__, "golden.py")

from conformance.golden import *  # noqa: E402,F401,F403
from conformance.golden import DEFAULT_CORPUS, GENERATOR  # noqa: E402,F401
from conformance.golden import main as _main  # noqa: E402


def main(argv=None) -> int:
    return _main(argv, prog="python -m bench.golden")


if __name__ == "__main__":
    interrupt.run(main)
