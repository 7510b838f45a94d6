"""Every NVML function the adapter calls exists in the real nvidia-ml-py module.

The fake NVML of the other tests answers whatever it is asked, so a misspelt or retired name
passes there and fails only on a GPU machine (it did once: nvmlDeviceGetComputeProcesses).
"""

import ast
from pathlib import Path

import pytest

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")

ADAPTER = Path(__file__).resolve().parents[2] / "protocol" / "nvml.py"
OPTIONAL = {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}


def _called_names():
    names = set()
    for node in ast.walk(ast.parse(ADAPTER.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("nvml"):
            names.add(node.attr)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("nvml"):
            names.add(node.value)
    return names


def test_adapter_names_exist_in_pynvml():
    names = _called_names()
    assert "nvmlDeviceGetComputeRunningProcesses" in names
    missing = sorted(n for n in names - OPTIONAL if not hasattr(pynvml, n))
    assert not missing, f"protocol/nvml.py calls NVML functions pynvml does not have: {missing}"
    assert any(hasattr(pynvml, n) for n in OPTIONAL)


def test_fake_nvml_offers_only_real_names():
    from tests.protocol import fake_nvml

    fake_names = {n for n in dir(fake_nvml.FakeNvml) if n.startswith("nvml")}
    assert fake_names
    bogus = sorted(n for n in fake_names if not hasattr(pynvml, n))
    assert not bogus, f"the fake NVML offers functions the real module lacks: {bogus}"
