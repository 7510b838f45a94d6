"""GPU test configuration: every test under tests/gpu carries the ``gpu`` marker and is skipped
cleanly (with a reason) where CuPy or a CUDA device is missing, so the CPU suite collects this
folder without importing CuPy. Real graphs come from ``$SSSPAB_DATA_DIR`` (on the GPU machine
``<repo>/.devdata``) or ``<repo>/../shared/data``, through the root conftest's ``shared_graphs_dir``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _gpu_status() -> tuple[bool, str]:
    try:
        from engines.sssp import cuda
    except Exception as exc:  # pragma: no cover - the package imports without CuPy
        return False, f"engines.sssp.cuda does not import: {exc}"
    if not cuda.is_available():
        return False, "needs CuPy and a CUDA GPU"
    return True, ""


GPU_AVAILABLE, GPU_SKIP_REASON = _gpu_status()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        item.add_marker(pytest.mark.gpu)
        if not GPU_AVAILABLE:
            item.add_marker(skip)



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item (``item.rep_call``), so that a fixture's teardown can
    tell a test that skipped in its body (test_fused_capture's check of the captures)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)

@pytest.fixture(scope="session")
def cuda_device() -> int:
    """The CuPy device the CUDA results live on."""
    from engines.sssp import cuda

    return cuda.current_device()


@pytest.fixture(scope="session")
def fused_engine(cuda_device) -> str:
    """"fused", or a skip where the device cannot run the persistent kernel
    (docs/algorithm.md §10.1)."""
    from engines.sssp import cuda

    reason = cuda.fused_unavailable_reason(cuda_device)
    if reason is not None:
        pytest.skip(f"the fused engine cannot run here: {reason}")
    return "fused"


@pytest.fixture(scope="session")
def real_graphs_dir(shared_graphs_dir) -> Path:
    """The folder of the small real graphs (``$SSSPAB_DATA_DIR/graphs``), or a skip."""
    return shared_graphs_dir
