"""Shared fixtures for the engine tests: the shared real-graph folder and hypothesis profiles."""

from __future__ import annotations

import builtins
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Bounded example counts keep the CPU suite inside its time budget (COMMON.md); the "thorough"
# profile (HYPOTHESIS_PROFILE=thorough) runs more examples.
settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``$SSSPAB_DATA_DIR`` (the deprecated ``$SSSPAB_SHARED_DATA`` read too) or
    ``<repo>/../shared/data``, the one holding ``graphs/``; None when absent."""
    from bench.gates import data_dir_from_environment

    env = data_dir_from_environment()
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT / ".." / "shared" / "data")
    for c in candidates:
        if (c / "graphs").is_dir():
            return c.resolve()
    return None


@pytest.fixture(scope="session")
def shared_graphs_dir() -> Path:
    d = shared_data_dir()
    if d is None:
        pytest.skip("shared real graphs not found (set SSSPAB_DATA_DIR or place them at "
                    "<repo>/../shared/data/graphs)")
    return d / "graphs"


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


@pytest.fixture
def unreadable(monkeypatch):
    """``unreadable(path)``: from then on, opening ``path`` fails as a file without read permission
    does (root, who runs CI, reads any file, so the permission is simulated); others open as usual."""
    refused = set()
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):
        if str(file) in refused:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    return lambda path: refused.add(str(path))


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handler for the test, whatever pytest inherited (run in the background
    without job control, SIGINT arrives ignored), and the inherited one back after it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class InterruptedWrites:
    """Files whose next atomic write is stopped at its last step (see :func:`interrupted_write`)."""

    PREVIOUS = "an earlier run's file, whole\n"

    def __init__(self):
        self.paths: list[Path] = []

    def of(self, path) -> Path:
        """``path`` holds an earlier run's file, and the next write of it is stopped before the
        file is put in place."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.PREVIOUS)
        self.paths.append(path)
        return path

    def refuses(self, target) -> bool:
        return any(str(path) == str(target) for path in self.paths)

    def check_kept(self) -> None:
        """Every such file is still the earlier one, whole, and no temporary file is left beside it."""
        for path in self.paths:
            assert path.read_text() == self.PREVIOUS, f"{path} was written in place, not atomically"
            left = [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
            assert not left, f"temporary files left beside {path}: {left}"


@pytest.fixture
def interrupted_write(monkeypatch):
    """``interrupted_write.of(path)``: ``path`` holds an earlier file, and the ``os.replace`` that
    would put a new one in its place (the last step of protocol.records.write_text, the records'
    atomic write) fails as a full disk would; other replaces go ahead. A write through that path
    then leaves the earlier file whole (``check_kept()``); a plain ``open().write`` or
    ``Path.write_text`` never calls ``os.replace`` and has already overwritten it."""
    writes = InterruptedWrites()
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if writes.refuses(dst):
            raise OSError(28, "No space left on device", os.fspath(src), None, os.fspath(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return writes
