"""The engines' environment switches: experiments and test hooks the GPU measurements decide
(``ENGINES_FUSED_SOLO``, ``ENGINES_FUSED_CAPTURE``, ``ENGINES_WIDE_PASSES``, ``ENGINES_BLOCK_APPEND``,
``ENGINES_FUSED_GRID``, ``ENGINES_FUSED_MAX_BLOCKS``, ``ENGINES_PUSH_CHAIN``,
``ENGINES_PUSH_CHAIN_DEGREE``, ``ENGINES_OPERATORS_CAPTURED_START``, ``ENGINES_OPERATORS_WAIT_READ_AHEAD``,
``ENGINES_MULTI_HOP_JUMP``, ``ENGINES_MAPPED_RECORDS``, ``ENGINES_FUSED_POLL_RECORD``,
``ENGINES_PULL_OFFERS``, ``ENGINES_FAR_APPEND``, ``ENGINES_PUSH_PRECHECK``, ``ENGINES_FUSED_MEMO``), read at each run, and the device apply's
``ENGINES_APPLY_MIN_EVENTS`` and ``ENGINES_APPLY_TOUCHED_SCAN`` (engines/graph/device_apply.py),
read when a graph's event buffers grow, and ``ENGINES_APPLY_GROUP`` and ``ENGINES_CHANGES_GRID``,
read at every commit. One parse per kind of value, so every switch
accepts the same spellings and a bad value is always an ``InvalidArgumentError`` naming the
switch and what it expects, never a traceback.
"""

from __future__ import annotations

import os

from ... import errors

#: The spellings of a flag (case and surrounding spaces ignored); unset (or empty) is the
#: switch's default.
OFF, ON = ("0", "off"), ("1", "on")


#: Each switch name's key in the raw environment (``raw``), encoded once.
_RAW_KEYS: dict[str, bytes] = {}


def raw(name: str) -> str:
    """The variable ``name`` as ``os.environ.get(name, "")`` gives it, read faster.

    An update reads about ten switches, most of them unset. ``os.environ.get`` encodes the name
    and, for an unset one, raises and catches a KeyError inside Mapping.get: 1.5 µs a read on the
    CPU that measured it (timeit), against 0.08 µs for a lookup in the dict that CPython keeps
    behind ``os.environ`` on POSIX (``os.environ._data``: bytes to bytes, updated by every change
    made through ``os.environ``, monkeypatch.setenv's included; a bare ``os.putenv`` changes neither,
    as before). Where that dict is missing (another platform or Python), ``os.environ.get``.
    """
    data = getattr(os.environ, "_data", None) if os.name == "posix" else None
    if type(data) is not dict:
        return os.environ.get(name, "")
    key = _RAW_KEYS.get(name)
    if key is None:
        key = _RAW_KEYS[name] = os.fsencode(name)
    value = data.get(key)
    return "" if value is None else os.fsdecode(value)


#: Each tuple of switch names' keys in the raw environment (``raw_values``), encoded once.
_RAW_TUPLES: dict[tuple[str, ...], tuple[bytes, ...]] = {}


def raw_values(names: tuple[str, ...]) -> tuple:
    """The raw values of ``names`` at once, to key a table of choices by them (never to parse):
    two readings are equal exactly when no value changed (an unset switch reads None and an empty
    one b"" here, two keys for what every parse takes alike: a miss, never a wrong hit).

    A run choice is keyed by seven switches on each side (variants.py, fused.py): seven ``raw``
    reads took 1.63 µs on the CPU that measured it (timeit), one lookup per name in the dict behind
    ``os.environ`` 0.31 µs. Where that dict is missing (``raw`` says when), the values as
    ``os.environ.get`` gives them."""
    data = getattr(os.environ, "_data", None) if os.name == "posix" else None
    if type(data) is not dict:
        return tuple(os.environ.get(name, "") for name in names)
    keys = _RAW_TUPLES.get(names)
    if keys is None:
        keys = _RAW_TUPLES[names] = tuple(os.fsencode(name) for name in names)
    return tuple(map(data.get, keys))


def _text(name: str) -> str:
    return raw(name).strip().lower()


def given(name: str) -> str:
    """The switch's value as every parse reads it (case and surrounding spaces folded); empty
    when unset or empty."""
    return _text(name)


def flag(name: str, default: bool = False) -> bool:
    """A switch that is on (1 / on) or off (0 / off); ``default`` when unset or empty."""
    text = _text(name)
    if not text:
        return default
    if text in OFF:
        return False
    if text in ON:
        return True
    raise errors.InvalidArgumentError(f"{name}={text!r}: expected 1/on or 0/off")


def count(name: str, what: str, *, minimum: int = 0, maximum: int | None = None,
          default: int = 0) -> int:
    """A switch that is a whole number of at least ``minimum`` and at most ``maximum`` (none when
    None; ``what`` says of what), ``default`` when unset, or 0 when 0 or off."""
    text = _text(name)
    if not text:
        return default
    if text in OFF:
        return 0
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" + ("" if maximum is None else f" and at most {maximum}")
        raise errors.InvalidArgumentError(f"{name}={text!r}: expected {what} (an integer of {bounds}) or off")
    return value


def choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """A switch that is one of ``choices`` (``default`` when unset)."""
    text = raw(name).strip() or default
    if text not in choices:
        raise errors.InvalidArgumentError(f"{name}={text!r}: expected one of {', '.join(choices)}")
    return text


__all__ = ["OFF", "ON", "choice", "count", "flag", "given", "raw", "raw_values"]
