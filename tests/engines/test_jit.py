"""A read-only install works (issue 28, item 4): engines/jit.py owns the Numba cache rule.

The install is simulated without relying on permissions (tests may run as root, whom ``chmod``
does not stop): the package is copied to a temporary folder where every ``__pycache__`` is a
regular file, and ``HOME`` / ``XDG_CACHE_HOME`` lie below a regular file, so no folder Numba
looks for can be created by anyone. Before engines/jit.py such an import died with
``RuntimeError: cannot cache function '_transpose_kernel': no locator available``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engines import jit

REPO = Path(__file__).resolve().parents[2]

# a compute() through the Numba propagation and an update() through the Numba applier
SCRIPT = """
import numpy as np
from engines import Batch, Graph, sssp
import engines.sssp.host as host
host.PROPAGATION = "numba"
g = Graph.from_edges([0, 1, 0], [1, 2, 2], np.array([[1], [1], [5]]))
tree = sssp.compute(g, 0)
computed = tree.distances.tolist()
sssp.update(g, Batch([2], [0], [[1]], [0], [1]), tree)  # insert (2, 0), delete (0, 1)
import engines
print(engines.__file__)
print(computed, tree.distances.tolist()[2])
"""


def _read_only_install(tmp_path) -> tuple[Path, dict]:
    install = tmp_path / "install"
    shutil.copytree(REPO / "engines", install / "engines", ignore=shutil.ignore_patterns("__pycache__"))
    for package in [install / "engines", *(p.parent for p in (install / "engines").rglob("__init__.py"))]:
        (package / "__pycache__").write_text("")  # Numba's in-tree locator cannot make its folder
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # a regular file: nothing can be created below it
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=str(install), PYTHONDONTWRITEBYTECODE="1", HOME=str(blocker / "home"),
               XDG_CACHE_HOME=str(blocker / "cache"), TMPDIR=str(temp))
    return install, env


def _run(env, cwd):
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_read_only_install_caches_in_a_private_temporary_folder(tmp_path):
    install, env = _read_only_install(tmp_path)
    for attempt in ("compiles", "loads from the cache"):
        proc = _run(env, tmp_path)
        assert proc.returncode == 0, (attempt, proc.stderr)
        assert proc.stderr == "", attempt  # the fallback is silent: the cache still works
        path, distances = proc.stdout.splitlines()
        assert Path(path).is_relative_to(install)
        assert distances == "[0, 1, 2] 5"
    folder = tmp_path / "temp" / jit._folder_name()
    assert (os.stat(folder).st_mode & 0o077) == 0  # private: cache files are pickles
    assert list(folder.rglob("*.nbi")), "no Numba cache index was written to the fallback folder"


@pytest.mark.slow
def test_without_any_writable_folder_the_cache_is_disabled_with_one_line(tmp_path):
    _, env = _read_only_install(tmp_path)
    (tmp_path / "temp" / jit._folder_name()).write_text("")  # the fallback folder cannot be made
    proc = _run(env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == "[0, 1, 2] 5"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Numba's on-disk cache is disabled" in lines[0]


def test_a_temporary_folder_another_account_may_write_is_not_trusted(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert jit._private_folder(str(shared)) is None
    os.chmod(shared, 0o700)
    assert jit._private_folder(str(shared)) == str(shared)
    link = tmp_path / "link"
    link.symlink_to(shared)
    assert jit._private_folder(str(link)) is None


def test_a_writable_checkout_keeps_numbas_own_cache():
    from engines.sssp import host_kernels

    cache = host_kernels._heap_search._cache
    assert type(cache).__name__ == "FunctionCache"
    assert not Path(cache._cache_path).is_relative_to(Path(jit.tempfile.gettempdir()) / jit._folder_name())


@pytest.mark.parametrize("message", ["something else"])
def test_other_numba_errors_are_not_hidden(monkeypatch, message):
    def failing(**options):
        raise RuntimeError(message)

    monkeypatch.setattr(jit.numba, "njit", failing)
    with pytest.raises(RuntimeError, match=message):
        jit.njit(nogil=True)(lambda: 0)
