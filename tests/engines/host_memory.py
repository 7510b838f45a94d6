"""A stand-in for the host memory that engines/graph/growth.py asks about, shared by the growth
tests of the graph (tests/engines/graph/test_growth.py) and of update() (test_api_growth.py)."""

from __future__ import annotations

from engines.graph import growth


def plenty_checked(monkeypatch) -> list:
    """Every growth checked (no floor below which the check is skipped) against 2^50 available
    bytes; returns the list that gets one entry per question asked."""
    asked = []

    def plenty():
        asked.append(1)
        return 1 << 50

    monkeypatch.setattr(growth, "available_host_bytes", plenty)
    monkeypatch.setattr(growth, "CHECK_FLOOR", 0)
    return asked
