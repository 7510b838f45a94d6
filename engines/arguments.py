"""Array-like arguments of the public constructors (``Graph``, ``Batch``): conversion and checks.

One owner for how a user's arrays are read and how their mistakes are reported: messages name
the argument, the first bad entry in the shape the caller passed (``weights[3]`` for a flat
sequence, ``weights[3, 1]`` for rows of K) and the value as the caller wrote it, never NumPy's
repr (``np.int64(1)``) or its exceptions (a ragged list is an ``InvalidArgumentError``).
"""

from __future__ import annotations

import operator

import numpy as np

from .errors import InvalidArgumentError

WEIGHT_MAX = (1 << 31) - 1
VERTEX_MAX = (1 << 31) - 1  # int32 vertex ids; the largest id is VERTEX_MAX - 1 so n fits too
_INT64_MAX = np.iinfo(np.int64).max


def ragged_description(values) -> str:
    """Where a sequence of rows stops being rectangular: "entry 0 has 2 values, entry 1 has 1"."""
    try:
        sizes = [len(v) if hasattr(v, "__len__") and not isinstance(v, str) else None for v in values]
    except TypeError:
        return "not a sequence of rows"
    said = lambda size: "a single value" if size is None else f"{size} value{'s' if size != 1 else ''}"  # noqa: E731
    for i, size in enumerate(sizes):
        if size != sizes[0]:
            return f"entry 0 has {said(sizes[0])}, entry {i} has {said(size)}"
    return "entries of different shapes"


def integer_dtype(dtype) -> bool:
    """A signed or unsigned integer dtype. Not ``np.issubdtype(dtype, np.integer)``: NumPy files
    timedelta64 under the signed integers (and bool is no integer here either)."""
    return dtype.kind in "iu"


def beyond_int64(arr: np.ndarray) -> int | None:
    """The largest value of an unsigned array when it does not fit int64 (it would wrap to a
    negative one in the cast every reader ends with), else None."""
    if arr.size and arr.dtype.kind == "u" and arr.max() > _INT64_MAX:
        return int(arr.max())
    return None


def as_array(values, name: str, what: str) -> np.ndarray:
    """``np.asarray``, with a message naming the argument for a ragged (inhomogeneous) input, a
    masked entry or Python integers beyond int64."""
    if isinstance(values, np.ma.MaskedArray):
        _refuse_masked(values, name)
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        raise InvalidArgumentError(
            f"{name} must be {what}, got a ragged sequence ({ragged_description(values)})") from None
    if arr.dtype == object:
        _refuse_huge_integers(arr, name)
    return arr


def _refuse_masked(values: np.ma.MaskedArray, name: str) -> None:
    """``np.asarray`` drops a mask and keeps the values under it, which would be read as if the
    caller had given them: a masked entry is named instead."""
    masked = np.ma.getmaskarray(values)
    if masked.any():
        where = ", ".join(str(int(i)) for i in np.argwhere(masked)[0])
        raise InvalidArgumentError(f"{name}[{where}] is masked; give every value (np.ma.filled, compressed)")


def _refuse_huge_integers(arr: np.ndarray, name: str) -> None:
    """NumPy keeps integers beyond int64 and uint64 (``[1, 2**64]``) as an object array, which
    the callers refuse as "got dtype object": where every entry is an integer, name the first
    one that does not fit instead."""
    entries = list(np.ndenumerate(arr))
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for _, v in entries):
        return
    for index, value in entries:
        if not -(1 << 63) <= value < (1 << 63):
            where = ", ".join(str(i) for i in index)
            raise InvalidArgumentError(f"{name}[{where}] = {value} is outside the int64 range")


def vertex_id(value, name: str, n: int) -> int:
    """A vertex id argument (``source``) as an int in [0, n): a Python or NumPy integer or a 0-D
    integer array, never a bool, a float or text (refused as not an integer, not as no vertex)."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        vertex = operator.index(value)
    except TypeError:
        plain = value.item() if isinstance(value, np.generic) else value
        raise InvalidArgumentError(
            f"{name} must be an integer vertex id, got {plain!r} ({type(value).__name__})") from None
    if not 0 <= vertex < n:
        raise InvalidArgumentError(f"{name} {vertex} is not a vertex of the graph (n = {n})")
    return vertex


def flag(value, name: str) -> bool:
    """A yes/no keyword (``symmetrize=``, ``canonicalize=``): a bool or a NumPy bool only. Truth
    testing would take ``"no"`` or ``"False"`` as yes, and an array as NumPy's ambiguous-truth
    error."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def shown(value) -> str:
    """An array element as the user wrote it: integers exactly, other floats as Python prints them."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, np.floating):  # a long double's item() is still one, with NumPy's repr
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def weight_matrix(values, name: str, rows: int, rows_text: str, shape_text: str = "(m, K) or (m,)") -> np.ndarray:
    """Weights ``(rows, K)`` or ``(rows,)`` (K = 1) as int64 ``(rows, K)``, every entry checked.

    Integral floats are accepted; booleans, non-integers, non-finite values and weights outside
    [1, 2^31 - 1] are refused naming the first one. ``rows_text`` completes "NAME has R rows but"
    when the row count is not ``rows`` ("there are 5 edges").
    """
    raw = as_array(values, name, f"an {shape_text} array of integers")
    flat = raw.ndim == 1
    if flat:
        raw = raw.reshape(-1, 1)
    if raw.ndim != 2:
        raise InvalidArgumentError(f"{name} must be {shape_text}, got shape {raw.shape}")
    if raw.shape[0] != rows:
        raise InvalidArgumentError(f"{name} has {raw.shape[0]} rows but {rows_text}")
    if raw.shape[1] < 1:
        raise InvalidArgumentError(f"{name} needs at least one column (K >= 1)")
    if not raw.size:
        return np.zeros(raw.shape, dtype=np.int64)
    floating = np.issubdtype(raw.dtype, np.floating)
    if not (integer_dtype(raw.dtype) or floating):
        raise InvalidArgumentError(f"{name} must be integers, got dtype {raw.dtype}")

    def first(bad: np.ndarray) -> tuple[str, object]:
        i, k = (int(x) for x in np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), bad.shape))
        return (f"[{i}]" if flat else f"[{i}, {k}]"), raw[i, k]

    if floating:
        not_integer = ~np.isfinite(raw) | (raw != np.trunc(raw))
        if not_integer.any():
            where, value = first(not_integer)
            kind = "an integer" if np.isfinite(value) else "a finite integer"
            raise InvalidArgumentError(f"{name}{where} = {shown(value)} is not {kind}")
    # floats are compared in float64: NumPy compares a float32 array with WEIGHT_MAX in float32,
    # where 2^31 - 1 rounds up to 2^31, so a weight of 2^31 passed and wrapped to -2^31 in the
    # int32 columns (float16 cannot hold the limit at all)
    values = raw.astype(np.float64) if floating else raw
    outside = (values < 1) | (values > WEIGHT_MAX)
    if outside.any():
        where, value = first(outside)
        raise InvalidArgumentError(f"{name}{where} = {shown(value)} is outside the weight range [1, {WEIGHT_MAX}]")
    return np.asarray(raw, dtype=np.int64)


__all__ = ["VERTEX_MAX", "WEIGHT_MAX", "article", "as_array", "beyond_int64", "flag", "integer_dtype", "ragged_description", "shown",
           "vertex_id", "weight_matrix"]
