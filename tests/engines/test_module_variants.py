"""The engines' module variants reach the compiler without a GPU (runtime.get_module, issue 34):
CuPy's RawModule is replaced by a recorder of what NVRTC would be handed (the real source, header
inlined, with the variant's defines), so the wiring from an option or switch to the module a run
loads is checked here, not first on a device. What the kernels compute is the GPU tests' part.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from engines.sssp.cuda import appends, chains, fused, operators, passes, push, runtime
from engines.sssp.plan import PUSH_EXPANSIONS

from tests.switch_env import set_switch


class _Function:
    kernel = object()  # what CompiledModule.load_all touches


class _RecordingRawModule:
    """Stands in for cupy.RawModule: keeps the arguments it was built with."""

    built: list = []

    def __init__(self, *, code, options, name_expressions, enable_cooperative_groups):
        self.code, self.names = code, list(name_expressions)
        self.cooperative = enable_cooperative_groups
        _RecordingRawModule.built.append(self)

    def get_function(self, name):
        assert name in self.names, name
        return _Function()


@pytest.fixture
def recorder(monkeypatch):
    fake_cupy = SimpleNamespace(RawModule=_RecordingRawModule,
                                cuda=SimpleNamespace(Device=lambda _d: contextlib.nullcontext()))
    monkeypatch.setattr(runtime, "cupy_module", lambda: fake_cupy)
    monkeypatch.setattr(runtime, "_modules", {})
    _RecordingRawModule.built = []
    return _RecordingRawModule


def _defines_of(code: str) -> list[str]:
    head = code.split("// ", 1)[0]  # the defines come before the source's first comment
    return [line.split()[1] for line in head.splitlines() if line.startswith("#define ")]


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
@pytest.mark.parametrize("solo", ["0", "1024"])
@pytest.mark.parametrize("capture", [None, "0"])
def test_a_fused_run_loads_the_module_of_its_expansion_and_switch(recorder, monkeypatch,
                                                                  expansion, solo, capture):
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    for name in (passes.WIDE_ENV, appends.APPEND_ENV, chains.CHAIN_ENV):  # whatever their defaults
        monkeypatch.setenv(name, "0")
    set_switch(monkeypatch, fused.CAPTURE_ENV, capture)  # unset: captured, the default
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    module = fused.load_module(0, fused.run_defines(plan))
    (raw,) = recorder.built
    expected = sorted(push.module_defines(expansion) + (("SSSP_FUSED_SOLO",) if solo != "0" else ())
                      + (("SSSP_FUSED_CAPTURED",) if capture is None else ()))
    assert list(module.defines) == expected == _defines_of(raw.code)
    assert raw.cooperative and "fused_update<int, long long>" in raw.names
    assert '#include "kernels.cuh"' not in raw.code and "struct FusedControl" in raw.code


def test_each_variant_is_compiled_once_and_kept_apart(recorder):
    plain = fused.load_module(0)
    assert fused.load_module(0, ()) is plain  # cached
    solo = fused.load_module(0, ["SSSP_FUSED_SOLO"])
    assert solo is not plain and fused.load_module(0, ("SSSP_FUSED_SOLO",)) is solo
    both = fused.load_module(0, ("SSSP_PUSH_BATCHED", "SSSP_FUSED_SOLO"))
    assert both is fused.load_module(0, ("SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED"))  # any order
    ops = operators.load_module(0, operators.run_defines(SimpleNamespace(push_expansion="batched", batch_changes=0)))
    assert ops.defines == ("SSSP_PUSH_BATCHED",) and not recorder.built[-1].cooperative
    assert len(recorder.built) == 4
    assert [_defines_of(r.code) for r in recorder.built] == [
        [], ["SSSP_FUSED_SOLO"], ["SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED"], ["SSSP_PUSH_BATCHED"]]
    with pytest.raises(ValueError, match="unknown module variant"):
        fused.load_module(0, ("SSSP_TYPO",))
