"""Records and reports share one file mode (issue 28, item 4).

Records go through a temporary file and an atomic rename; ``tempfile.mkstemp`` creates it 0600,
so without care every record was private while the report beside it (a plain ``open``) was 0644.
"""

from __future__ import annotations

import os
import stat

import pytest

from protocol import records


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_json_and_parquet_records_get_the_mode_of_a_plain_file(tmp_path, umask):
    plain = tmp_path / "M7.md"
    plain.write_text("report\n")  # a plain open(), as a user's own file is written
    json_record = tmp_path / "campaign.json"
    records.write_json(json_record, {"a": 1})
    parquet_record = tmp_path / "rounds" / "cell.parquet"
    records._atomic_write_bytes(parquet_record, lambda h: h.write(b"PAR1"))
    assert _mode(plain) == 0o666 & ~umask
    assert _mode(json_record) == _mode(plain)
    assert _mode(parquet_record) == _mode(plain)


def test_a_replaced_record_takes_the_mode_again(tmp_path, umask):
    path = tmp_path / "summary.json"
    records.write_json(path, {"a": 1})
    os.chmod(path, 0o600)
    records.write_json(path, {"a": 2})
    assert _mode(path) == 0o666 & ~umask


def test_the_umask_is_read_without_being_changed(umask):
    assert records._umask() == umask
    assert records._umask() == umask
