"""A real CUDA campaign: fused against operators on a small graph, observed through NVML.

Observe mode only (never a lock on a lent GPU). Compares both engines through the runner's guard
(byte-identical trees) and checks the records carry device times and the engines' sync counts.
"""

from __future__ import annotations

import pytest

from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import RecordStore
from protocol.runner import CampaignRunner
from protocol.sides import parse_sides

from .helpers import host_config, small_graph_input

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def device():
    pytest.importorskip("cupy")
    from engines.sssp import cuda

    if not cuda.is_available():
        pytest.skip("no usable CUDA device")
    return cuda.current_device()


def _fused_or_skip(device):
    from engines.errors import NotSupportedError
    from engines.sssp import cuda

    try:
        cuda.select_engine("fused", device)
    except NotSupportedError as exc:
        pytest.skip(f"fused engine unavailable: {exc}")


def _run(tmp_path, device, sides, **overrides):
    from protocol.environment import cuda_device_info

    config = host_config(sides=parse_sides(sides), rounds=7, verify_host=True, **overrides)
    pci = cuda_device_info(device)["pci_bus_id"]
    with Instruments.open(gpu=True, pci_bus_id=pci, own_context=True) as inst:
        code = CampaignRunner(config, RecordStore(tmp_path), inst).run([small_graph_input(n=20000, m=80000)])
    return code, RecordStore(tmp_path)


def test_fused_against_operators(tmp_path, device):
    _fused_or_skip(device)
    code, store = _run(tmp_path, device, "cuda:fused,cuda:operators")
    cell = store.read_summary()["cells"][0]
    assert cell["status"] in ("done", "too_noisy"), cell["detail"]
    assert code in (ExitCode.OK, ExitCode.TOO_NOISY)
    rows = store.read_rounds()
    timed = rows[~rows["warmup"]]
    assert timed["engine_device_ms"].notna().all() and (timed["engine_device_ms"] > 0).all()
    a, b = timed[timed["role"] == "A"], timed[timed["role"] == "B"]
    assert (a["engine"] == "fused").all() and (a["host_syncs"] == 1).all()
    assert (b["engine"] == "operators").all()
    assert (b["host_syncs"] <= 3 + b["iterations"] + b["epochs"]).all()
    assert cell["primary_region"] == "engine_device"
    assert store.read_campaign()["clocks"]["mode"] in ("observe", "unknown")


def test_verify_syncs_agrees_with_engine_counts(tmp_path, device):
    from engines.errors import NotSupportedError
    from engines.sssp.cuda import syncs

    try:
        syncs.count_synchronizations()
    except NotSupportedError as exc:
        pytest.skip(f"CUPTI unavailable: {exc}")
    from protocol.environment import cuda_device_info

    config = host_config(sides=parse_sides("cuda:operators,cuda:operators"), rounds=5, verify_syncs=True)
    pci = cuda_device_info(device)["pci_bus_id"]
    with Instruments.open(gpu=True, pci_bus_id=pci, own_context=True) as inst:
        runner = CampaignRunner(config, RecordStore(tmp_path), inst,
                                sync_counter_factory=syncs.count_synchronizations)
        code = runner.run([small_graph_input(n=20000, m=80000)])
    rows = RecordStore(tmp_path).read_rounds()
    timed = rows[~rows["warmup"]]
    verified = rows[rows["verification"]]
    assert code != ExitCode.CORRECTNESS, RecordStore(tmp_path).read_summary()["cells"][0]["detail"]
    # counted in the untimed verification rounds only (protocol.md §6), and in agreement there
    assert sorted(verified["role"]) == ["A", "B"]
    assert (verified["cupti_syncs"] == verified["host_syncs"]).all()
    assert timed["cupti_syncs"].isna().all()
