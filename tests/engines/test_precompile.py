"""engines.sssp.cuda.precompile without a GPU: the module list is exactly what the engines load,
each item reaches its engine's loader, and the command refuses cleanly where no GPU is usable."""

from __future__ import annotations

import pytest

from engines.exitcodes import ExitCode
from engines.graph import device_apply, key_sort
from engines.sssp.cuda import fused, operators, precompile, runtime


def test_modules_are_the_apply_and_every_variant_of_both_engines_once():
    items = precompile.modules()
    assert items[:2] == [(precompile.APPLY, ()), (precompile.KEY_SORT, ())]
    assert precompile.KEY_SORT == key_sort.ENGINE
    assert len(items) == len(set(items)) == 2 + len(fused.VARIANTS) + len(operators.VARIANTS)
    assert {d for e, d in items if e == fused.ENGINE} == {tuple(v) for v in fused.VARIANTS}
    assert {d for e, d in items if e == operators.ENGINE} == {tuple(v) for v in operators.VARIANTS}


def test_each_item_reaches_its_own_loader(monkeypatch):
    calls = []
    monkeypatch.setattr(fused, "load_module", lambda device, defines=(): calls.append(("f", device, defines)))
    monkeypatch.setattr(operators, "load_module",
                        lambda device, defines=(): calls.append(("o", device, defines)))
    monkeypatch.setattr(device_apply, "load_module", lambda device: calls.append(("a", device)))
    monkeypatch.setattr(key_sort, "load_module", lambda device: calls.append(("k", device)))
    variant = tuple(fused.VARIANTS[-1])
    precompile.compile_module(fused.ENGINE, variant, 1)
    precompile.compile_module(operators.ENGINE, tuple(operators.VARIANTS[1]), 0)
    precompile.compile_module(precompile.APPLY, (), 2)
    precompile.compile_module(precompile.KEY_SORT, (), 3)
    assert calls == [("f", 1, variant), ("o", 0, tuple(operators.VARIANTS[1])), ("a", 2), ("k", 3)]


def test_without_a_gpu_it_says_so_and_exits_environment(monkeypatch, capsys):
    monkeypatch.setattr(runtime, "is_available", lambda: False)
    assert precompile.main([]) == ExitCode.ENVIRONMENT
    err = capsys.readouterr().err
    assert "needs CuPy and a CUDA GPU" in err and "Traceback" not in err


def test_jobs_below_one_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        precompile.main(["--jobs", "0"])
    assert exc.value.code == ExitCode.USAGE
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_a_module_that_fails_is_named_with_its_variant(monkeypatch):
    """Among 65 variants, the one that did not compile must be identifiable from the message."""
    from engines import errors

    def fail(device, defines=()):
        raise errors.CudaError("compiling the fused engine: NVRTC_ERROR_COMPILATION", code=6)

    monkeypatch.setattr(fused, "load_module", fail)
    variant = tuple(fused.VARIANTS[-1])
    with pytest.raises(errors.Error, match=r"the fused module \[" + " ".join(variant) + r"\]: compiling"):
        precompile._compile_item((fused.ENGINE, variant, 0))
