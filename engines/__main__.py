"""``python -m engines update|compute ...``: the same command line as ``python -m engines.cli``."""

from . import interrupt  # standard library only: before the heavy imports

interrupt.guard(__name__, "engines")

from .cli import main  # noqa: E402

interrupt.run(main)
