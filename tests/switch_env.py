"""Setting an engine switch for one test: the three states a switch test needs (unset, one text,
another) in one call, undone with the test by pytest's monkeypatch."""

from __future__ import annotations


def set_switch(monkeypatch, name: str, text: str | None) -> None:
    """``$name`` set to ``text``, or unset when ``text`` is None (the switch's default)."""
    if text is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, text)
