"""The wide O(n) passes without a GPU (kernels.cuh SSSP_WIDE_PASSES, issue 34 step 2): the switch
``ENGINES_WIDE_PASSES``, the module variant each engine's run loads, the refusal with the "batched"
push expansion (whose module they do not combine with), and the variants make cuda-check compiles.
The GPU side (the same bytes as the host reference) is tests/gpu/test_wide_passes.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from engines import errors
from engines.sssp.plan import PUSH_EXPANSIONS
from engines.sssp.cuda import appends, compile_check, fused, jumps, operators, passes, push, runtime

from tests.switch_env import set_switch

WIDE = passes.DEFINES


#: The plain-push-only variants (push.PlainPushVariant): each module's switch reader, switch and
#: defines. Their switch and combine rule are one mechanism, tested here for both.
PLAIN_PUSH_VARIANTS = {
    "wide": (passes, passes.wide_passes, passes.WIDE_ENV, passes.DEFINES),
    # the fused engine's reading (the operators engine's default: test_block_append.py)
    "appends": (appends, lambda plan: appends.block_append(plan, "fused"), appends.APPEND_ENV, appends.DEFINES),
    "jumps": (jumps, jumps.multi_hop, jumps.JUMP_ENV, jumps.DEFINES),
}


@pytest.mark.parametrize("variant", sorted(PLAIN_PUSH_VARIANTS))
@pytest.mark.parametrize("text, on", [(None, None), ("", None), ("0", False), ("off", False),
                                      (" OFF ", False), ("1", True), ("on", True), ("On", True)])
def test_the_switch(monkeypatch, variant, text, on):
    """Unset or empty is the variant's default (on None here: off for a small update, and the
    appends and the multi-hop jumps on for a large one) with the plain push, off with "batched" whatever the default."""
    module, read, env, _ = PLAIN_PUSH_VARIANTS[variant]
    set_switch(monkeypatch, env, text)
    large = 10 ** 6  # changes: past appends.MIN_BATCH_CHANGES
    for changes, default in ((0, False), (100, False), (large, variant in ("appends", "jumps"))):
        plan = SimpleNamespace(push_expansion="group", batch_changes=changes)
        assert read(plan) is (default if on is None else on), changes
        assert read(SimpleNamespace(push_expansion="vertex", batch_changes=changes)) is read(plan)
        if on is None:
            assert read(SimpleNamespace(push_expansion="batched", batch_changes=changes)) is False


@pytest.mark.parametrize("variant", sorted(PLAIN_PUSH_VARIANTS))
@pytest.mark.parametrize("text", ["2", "yes", "wide", "block", "-1"])
def test_a_bad_switch_is_an_error_naming_it(monkeypatch, variant, text):
    _, read, env, _ = PLAIN_PUSH_VARIANTS[variant]
    monkeypatch.setenv(env, text)
    with pytest.raises(errors.InvalidArgumentError, match=env):
        read(SimpleNamespace(push_expansion="group", batch_changes=0))


def test_the_define_is_a_known_variant():
    assert WIDE == ("SSSP_WIDE_PASSES",)
    assert set(WIDE) <= set(runtime.VARIANT_DEFINES)
    source = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert "#ifndef SSSP_WIDE_PASSES\n#define SSSP_WIDE_PASSES 0\n#endif" in source


@pytest.mark.parametrize("variant", sorted(PLAIN_PUSH_VARIANTS))
def test_the_variant_combines_with_the_plain_push_only(variant):
    module, _, env, defines = PLAIN_PUSH_VARIANTS[variant]
    assert module.module_defines(False, "batched") == ()
    for expansion in PUSH_EXPANSIONS:
        assert module.module_defines(False, expansion) == ()
        if push.module_defines(expansion):
            with pytest.raises(errors.InvalidArgumentError, match=env):
                module.module_defines(True, expansion)
        else:
            assert module.module_defines(True, expansion) == defines
    assert module.combines(()) and module.combines(("SSSP_FUSED_SOLO",))
    assert not module.combines(("SSSP_PUSH_BATCHED",))


def test_the_engines_compile_the_wide_variant_beside_every_plain_push_module():
    # fused: plain and solo, each also wide; batched and batched + solo without (they spill); each
    # of those also as the captured update (test_fused_capture) and the plain-push ones also with
    # the block appends (test_block_append) and with multi-hop pointer jumping (test_multi_hop_jump)
    uncaptured = tuple(v for v in fused.VARIANTS if "SSSP_FUSED_CAPTURED" not in v
                       and "SSSP_BLOCK_APPEND" not in v and "SSSP_MULTI_HOP_JUMP" not in v)
    assert uncaptured == ((), WIDE, ("SSSP_FUSED_SOLO",), ("SSSP_FUSED_SOLO",) + WIDE,
                          ("SSSP_PUSH_BATCHED",), ("SSSP_FUSED_SOLO", "SSSP_PUSH_BATCHED"))
    assert tuple(v for v in operators.VARIANTS
                 if "SSSP_BLOCK_APPEND" not in v and "SSSP_MULTI_HOP_JUMP" not in v) == (
        (), WIDE, ("SSSP_PUSH_BATCHED",))
    assert passes.with_wide(((),)) == ((), WIDE)
    for variants in (fused.VARIANTS, operators.VARIANTS):
        assert len(set(variants)) == len(variants)
        assert all(runtime.variant_defines(v) == v for v in variants)
    cuda_dir = runtime.SOURCE_DIR
    assert compile_check.variants_of(cuda_dir / fused.SOURCE) == fused.CHECKED_VARIANTS
    assert compile_check.variants_of(cuda_dir / operators.SOURCE_FILE) == operators.VARIANTS
    assert compile_check.variants_of(Path("/elsewhere") / fused.SOURCE) == ((),)


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_a_run_loads_the_wide_variant_when_switched_on(monkeypatch, expansion):
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    monkeypatch.delenv(passes.WIDE_ENV, raising=False)
    for name in (fused.SOLO_ENV, "ENGINES_BLOCK_APPEND", "ENGINES_PUSH_CHAIN", jumps.JUMP_ENV):
        monkeypatch.setenv(name, "0")  # off, whatever their defaults
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")  # the captured variant is tested on its own
    assert fused.run_defines(plan) == push.module_defines(expansion)  # the default is unchanged
    assert operators.run_defines(plan) == push.module_defines(expansion)
    assert fused.module_defines(plan, 0) == fused.module_defines(plan, 0, False)
    monkeypatch.setenv(passes.WIDE_ENV, "1")
    if expansion == "batched":
        for run_defines in (fused.run_defines, operators.run_defines):
            with pytest.raises(errors.InvalidArgumentError, match=passes.WIDE_ENV):
                run_defines(plan)
        return
    assert fused.run_defines(plan) == WIDE
    assert operators.run_defines(plan) == WIDE
    monkeypatch.setenv(fused.SOLO_ENV, "1024")
    assert fused.run_defines(plan) == WIDE + ("SSSP_FUSED_SOLO",)
    for edges in (0, 512):
        for wide in (False, True):
            assert runtime.variant_defines(fused.module_defines(plan, edges, wide)) in fused.VARIANTS
    assert runtime.variant_defines(operators.run_defines(plan)) in operators.VARIANTS


def test_the_default_kernels_do_not_see_the_variant():
    """The restrict qualifier of the wide passes is a macro that is empty unless the variant is
    defined, and every other change sits under #if SSSP_WIDE_PASSES: the default modules compile
    from the same tokens as before the variant (make cuda-check reports their registers)."""
    header = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert ("#if SSSP_WIDE_PASSES\n#define SSSP_WIDE_RESTRICT __restrict__\n#else\n"
            "#define SSSP_WIDE_RESTRICT\n#endif") in header
    code = runtime.variant_code(runtime.read_source(fused.SOURCE), ())
    assert "#define SSSP_WIDE_PASSES 1" not in code
    assert runtime.variant_code("", WIDE) == "#define SSSP_WIDE_PASSES 1\n"
