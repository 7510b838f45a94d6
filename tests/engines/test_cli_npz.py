"""``python -m engines.cli`` on ``.npz`` arrays of unsigned integers beyond int64: refused naming
the array and the value as stored, never wrapped (a uint64 2^64 - 1 parent read as -1, "none";
a weight 2^63 reported as -9223372036854775808)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engines.test_cli import _run

U64_MAX = np.iinfo(np.uint64).max


@pytest.mark.parametrize("key, value", [("weights", 1 << 63), ("parents", U64_MAX), ("source", U64_MAX)])
def test_unsigned_arrays_beyond_int64_are_refused_not_wrapped(tmp_path, capsys, key, value):
    arrays = dict(row_ptr=np.array([0, 1, 2]), col_ind=np.array([1, 0]), weights=np.array([5, 7]),
                  distances=np.array([0, 5]), parents=np.array([-1, 0]), source=np.int64(0))
    arrays[key] = np.array(arrays[key]).astype(np.uint64) if key != "parents" else np.array([0, 0], np.uint64)
    arrays[key].reshape(-1)[0] = value
    path = tmp_path / "state.npz"
    np.savez(path, **arrays)
    code, _, err = _run(capsys, "compute", "--graph", path, "--out", tmp_path / "o")
    assert code == 2
    assert f"{path}: array {key} holds {value} (dtype uint64), beyond the int64 values read" in err
    assert "-9223372036854775808" not in err and "Traceback" not in err


def test_unsigned_arrays_within_int64_still_read(tmp_path, capsys):
    path = tmp_path / "state.npz"
    np.savez(path, row_ptr=np.array([0, 1, 2], np.uint64), col_ind=np.array([1, 0], np.uint32),
             weights=np.array([5, 7], np.uint64))
    code, out, err = _run(capsys, "compute", "--graph", path, "--source", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    assert (tmp_path / "o" / "distances.txt").read_text().split() == ["0", "5"]


def test_timedelta_arrays_are_not_integers(tmp_path, capsys):
    # NumPy files timedelta64 under the signed integers; the API refuses them (arguments.integer_dtype)
    path = tmp_path / "state.npz"
    np.savez(path, row_ptr=np.array([0, 1, 2]), col_ind=np.array([1, 0]).astype("m8[s]"), weights=np.array([5, 7]))
    code, _, err = _run(capsys, "compute", "--graph", path, "--source", 0, "--out", tmp_path / "o")
    assert code == 2
    assert f"{path}: array col_ind must hold integers, got dtype timedelta64[s]" in err and "Traceback" not in err
