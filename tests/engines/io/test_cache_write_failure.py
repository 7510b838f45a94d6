"""A cache entry that cannot be written does not fail the read: the parsed graph comes back
with one warning naming the cache path and the OS error; read errors stay errors."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from engines.errors import FileFormatError
from engines.io import cache as cache_mod
from engines.io import read_graph, read_graph_cached

EDGES = "1 2\n2 3\n3 1\n3 4\n"


def _same(a, b):
    assert a.num_vertices == b.num_vertices
    np.testing.assert_array_equal(a.src, b.src)
    np.testing.assert_array_equal(a.dst, b.dst)
    assert a.weights is None and b.weights is None


def test_a_failing_cache_write_warns_and_returns_the_graph(tmp_path, monkeypatch):
    path = tmp_path / "g.edges"
    path.write_text(EDGES)
    cache = tmp_path / "cache"

    def full_disk(target, **arrays):
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(cache_mod, "save_arrays", full_disk)
    with pytest.warns(UserWarning) as caught:
        graph, sha = read_graph_cached(path, cache_dir=cache)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert str(cache / "parsed") in message and "No space left on device" in message
    assert "without caching" in message and str(path) in message
    assert caught[0].filename == __file__  # points at the caller, not at the cache module
    _same(graph, read_graph(path))
    assert sha == cache_mod.file_sha256(path)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_folder_warns_and_returns_the_graph(tmp_path):
    path = tmp_path / "g.edges"
    path.write_text(EDGES)
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        with pytest.warns(UserWarning, match="without caching"):
            graph, _ = read_graph_cached(path, cache_dir=cache)
    finally:
        cache.chmod(0o700)
    _same(graph, read_graph(path))


def test_a_graph_file_that_cannot_be_read_is_still_an_error(tmp_path):
    path = tmp_path / "g.edges"
    path.write_text("1 2\n2 x\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FileFormatError):
            read_graph_cached(path, cache_dir=tmp_path / "cache")
        with pytest.raises(FileFormatError, match="no such file"):
            read_graph_cached(tmp_path / "missing.edges", cache_dir=tmp_path / "cache")
