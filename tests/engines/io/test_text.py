"""engines.io._text's integer tables (the MOSP files): a value beyond int64 is named with its
line and in words, not with pandas' message ("cannot safely convert passed user dtype of int64
for uint64 dtyped data in column 0", "Overflow") and no line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engines.errors import FileFormatError
from engines.io import mosp, read_edge_list

INT64_MAX = (1 << 63) - 1
BEYOND = st.one_of(st.integers(INT64_MAX + 1, 10 ** 40), st.integers(-(10 ** 40), -INT64_MAX - 2))


@settings(max_examples=30, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.lists(st.integers(0, 1000), max_size=5), huge=BEYOND)
def test_a_value_beyond_int64_names_its_line(tmp_path, before, huge):
    path = tmp_path / "distances.txt"
    path.write_text("".join(f"{v}\n" for v in before) + f"{huge}\n7\n")
    with pytest.raises(FileFormatError) as info:
        mosp.read_vertex_values(path)
    assert str(info.value).startswith(f"{path}, line {len(before) + 1}: the integer {huge} does not fit 64 bits")


def test_graph_weights_and_batches_beyond_int64(tmp_path):
    (tmp_path / mosp.ROW_PTR_FILE).write_text("0\n1\n2\n")
    (tmp_path / mosp.COL_IND_FILE).write_text("1\n0\n")
    (tmp_path / mosp.VALUES_FILE).write_text("5\n9223372036854775808\n")
    with pytest.raises(FileFormatError, match=r"graphCsrValues\.txt, line 2: the integer 9223372036854775808 "):
        mosp.read_csr(tmp_path)
    (tmp_path / mosp.INSERT_FILE).write_text("0 1 3\n1 0 -9223372036854775809\n")
    with pytest.raises(FileFormatError, match=r"insert\.txt, line 2: the integer -9223372036854775809 "):
        mosp.read_batch(tmp_path)


def test_int64_limits_still_read(tmp_path):
    path = tmp_path / "values.txt"
    path.write_text(f"{INT64_MAX}\n{-INT64_MAX - 1}\n")
    assert mosp.read_vertex_values(path).tolist() == [INT64_MAX, -INT64_MAX - 1]


# white space that str.split() splits at and pandas' C parser does not (fields are split at blanks
# and tabs): the scan that names the bad line must split as pandas does, or it finds no bad line
ODD_SPACE = ["\f", "\v", "\x1c", "\x1f", "\xa0", "\u2003"]


@settings(max_examples=30, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(good=st.integers(0, 5), space=st.sampled_from(ODD_SPACE), alone=st.booleans())
def test_odd_white_space_is_named_with_its_line(tmp_path, good, space, alone):
    path = tmp_path / "g.edges"
    bad = space if alone else f"1{space}2"
    path.write_text("".join(f"{i + 1} {i + 2}\n" for i in range(good)) + bad + "\n3 4\n", encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        read_edge_list(path)
    assert str(info.value).startswith(f"{path}, line {good + 1}: expected 2 to 64 integers, found 1 fields: "
                                      f"{bad!r}")
