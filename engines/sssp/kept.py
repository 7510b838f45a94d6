"""Values that a steady stream of updates asks for again and again, kept by everything they depend
on (algorithm.md §12.3): the run's module variant (cuda/variants.py, cuda/fused.py) and the
update's plan (api.py). One bounded table per kind of value."""

from __future__ import annotations

#: The entries a table keeps before it starts over.
DEFAULT_LIMIT = 256


class Kept:
    """A table of values by key, at most ``limit`` of them: a full table starts over, so a process
    that tries many settings (an A/B, a sweep) keeps its memory bounded while a steady stream hits
    the same few keys. Only values that ``make`` returned are kept: one that raises keeps nothing,
    so a refusal is repeated every time."""

    __slots__ = ("limit", "_values")

    def __init__(self, limit: int = DEFAULT_LIMIT):
        self.limit = int(limit)
        self._values: dict = {}

    def get(self, key, make):
        """The value of ``key``; ``make()`` gives it the first time."""
        value = self._values.get(key)
        if value is None:
            value = make()
            if len(self._values) >= self.limit:
                self._values.clear()
            self._values[key] = value
        return value

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()


__all__ = ["DEFAULT_LIMIT", "Kept"]
