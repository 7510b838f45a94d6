"""Where the golden generator gets its independent oracles: ``tests/oracles.py``, nothing else.

The oracles live in one module, shared with the engine tests, so that the corpus and the tests
judge the engines by the same rules; nothing is re-implemented here. Only a checkout has
``tests/``, so the import waits for the first use: ``verify``, ``list`` and ``bench/compare.py``
keep working where only the corpus and the ``bench`` package are present.
"""

from __future__ import annotations


def oracles():
    """The ``tests.oracles`` module, or an error that says why generation cannot run here."""
    try:
        from tests import oracles as module
    except ModuleNotFoundError as exc:
        if exc.name not in ("tests", "tests.oracles"):
            raise  # a dependency of the oracles is missing: report that one
        raise ModuleNotFoundError(
            "generating or checking the golden corpus needs the independent oracles of tests/oracles.py: "
            "run `python -m bench.golden` from the repository root of a full checkout", name=exc.name) from exc
    return module
