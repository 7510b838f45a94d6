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
