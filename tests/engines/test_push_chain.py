"""Lane-local chain following without a GPU (kernels.cuh SSSP_PUSH_CHAIN, issues 27 and 34): the
switches ``ENGINES_PUSH_CHAIN`` and ``ENGINES_PUSH_CHAIN_DEGREE``, the push argument that carries
their limits to the kernels (and its decoding, as kernels.cuh take_chain_limits does it), the
module variant each engine's run loads, the refusals (without the block appends, with the
"batched" expansion) and the variants make cuda-check compiles. The GPU side (the same bytes as the
host reference, fewer push iterations on a path) is tests/gpu/test_push_chain.py; the CPU model
of the schedule, tests/bench/test_chain_model.py."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.sssp.plan import PUSH_EXPANSIONS
from engines.sssp.cuda import appends, chains, compile_check, fused, jumps, operators, passes, push, runtime
from tests.switch_env import set_switch

CHAIN = chains.DEFINES
APPEND = appends.DEFINES
#: A run of the plain push (the readers take the plan: its expansion and batch size).
GROUP = SimpleNamespace(push_expansion="group", batch_changes=0)
ENVS = (chains.CHAIN_ENV, chains.DEGREE_ENV, appends.APPEND_ENV, passes.WIDE_ENV, fused.SOLO_ENV)


@pytest.fixture
def clean_env(monkeypatch):
    """The chain switches unset, the other variants explicitly off whatever their defaults (the
    block appends too: a test turns them on where chains need them)."""
    for name in ENVS:
        monkeypatch.delenv(name, raising=False)
    for name in (appends.APPEND_ENV, passes.WIDE_ENV, jumps.JUMP_ENV, fused.SOLO_ENV):
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")  # the captured variant is tested on its own
    return monkeypatch


def _limits(plan, engine: str = "fused") -> tuple[int, int]:
    """chains.run_limits as a run of ``engine`` reads it (variants.run_choice): with the run's
    appends."""
    return chains.run_limits(plan, appends.block_append(plan, engine), engine)


def _decode(argument: int) -> tuple[int, int, int]:
    """kernels.cuh take_chain_limits, in Python: (group-shift cap, hops, widest vertex)."""
    mask = (1 << chains.FIELD_BITS) - 1
    return (argument & mask, (argument >> chains.FIELD_BITS) & mask,
            (argument >> 2 * chains.FIELD_BITS) & mask)


@pytest.mark.parametrize("text, hops", [(None, 0), ("", 0), ("0", 0), ("off", 0), (" OFF ", 0),
                                        ("1", 1), (" 3 ", 3), ("255", 255)])
def test_the_hops_switch(clean_env, text, hops):
    clean_env.setenv(appends.APPEND_ENV, "1")  # explicit chains need explicit appends
    if text is not None:
        clean_env.setenv(chains.CHAIN_ENV, text)
    assert chains.chain_hops(GROUP, appends.block_append(GROUP, "fused"), "fused") == hops


@pytest.mark.parametrize("text", ["on", "yes", "-1", "1.5", "256", "100000"])
def test_a_bad_hops_switch_is_an_error_naming_it(clean_env, text):
    clean_env.setenv(chains.CHAIN_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=chains.CHAIN_ENV):
        chains.chain_hops(GROUP, appends.block_append(GROUP, "fused"), "fused")


@pytest.mark.parametrize("text, degree", [(None, chains.DEFAULT_DEGREE), ("", chains.DEFAULT_DEGREE),
                                          ("1", 1), ("8", 8), (" 255 ", 255)])
def test_the_degree_switch(clean_env, text, degree):
    if text is not None:
        clean_env.setenv(chains.DEGREE_ENV, text)
    assert chains.chain_degree() == degree


@pytest.mark.parametrize("text", ["0", "off", "-2", "four", "256"])
def test_a_bad_degree_switch_is_an_error_naming_it(clean_env, text):
    """0 and off are errors here, not "off": no vertex could be followed (unset gives the
    default)."""
    clean_env.setenv(chains.DEGREE_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=chains.DEGREE_ENV):
        chains.chain_degree()


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_without_hops_the_push_argument_is_the_shift_cap(expansion):
    assert chains.push_argument(expansion, 0, chains.DEFAULT_DEGREE) == push.max_shift(expansion)
    assert chains.push_argument(expansion, 0, 77) == push.max_shift(expansion)


@pytest.mark.parametrize("hops, degree", [(1, 1), (2, 4), (17, 9), (255, 255)])
@pytest.mark.parametrize("expansion", ["group", "vertex"])
def test_the_push_argument_carries_the_limits_as_the_kernels_read_them(expansion, hops, degree):
    argument = chains.push_argument(expansion, hops, degree)
    assert _decode(argument) == (push.max_shift(expansion), hops, degree)
    assert 0 <= argument < 2 ** 32  # the kernels' u32


@pytest.mark.parametrize("hops, degree", [(0, chains.DEFAULT_DEGREE), (2, 4), (255, 255)])
@pytest.mark.parametrize("expansion", ["group", "vertex"])
def test_the_far_queue_rides_in_bit_31_above_every_field(expansion, hops, degree):
    """appends.far_queue's bit (kernels.cuh SSSP_FAR_QUEUE_BIT): the kernels take it off before
    they read the other fields, which stay as they were; still a u32."""
    plain = chains.push_argument(expansion, hops, degree)
    argument = chains.push_argument(expansion, hops, degree, far_queue=True)
    assert chains.FAR_QUEUE_BIT == 1 << 31 and argument == plain | chains.FAR_QUEUE_BIT
    assert _decode(argument & ~chains.FAR_QUEUE_BIT) == _decode(plain)
    assert 0 <= argument < 2 ** 32


@pytest.mark.parametrize("block_append, text, on", [(True, None, True), (True, "1", True), (False, "1", False),
                                                    (True, "off", False), (True, "0", False), (False, None, False)])
def test_the_far_queue_needs_the_block_appends(monkeypatch, block_append, text, on):
    """ENGINES_FAR_APPEND (appends.far_queue): on unless turned off, and never without the block
    appends; a bad value names the switch."""
    set_switch(monkeypatch, appends.FAR_ENV, text)
    assert appends.far_queue(block_append) is on
    monkeypatch.setenv(appends.FAR_ENV, "sometimes")
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_FAR_APPEND"):
        appends.far_queue(block_append)


@pytest.mark.parametrize("engine", [fused, operators])
def test_a_run_choice_carries_the_far_queue_only_with_the_appends(monkeypatch, engine):
    """The fused engine's run choice reads ENGINES_FAR_APPEND with the block appends' own reading,
    so a run's push argument (chains.push_argument) has the bit only where its module has the
    queue; the operators engine's never (its push has no far queue), though a bad value is refused
    there too."""
    plan = SimpleNamespace(push_expansion="group", batch_changes=0)
    monkeypatch.setenv(appends.FAR_ENV, "1")
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    on = engine.run_choice(plan)
    assert on.far_queue is (engine is fused) and "SSSP_BLOCK_APPEND" in on.defines
    monkeypatch.setenv(appends.APPEND_ENV, "0")
    off = engine.run_choice(plan)
    assert not off.far_queue and "SSSP_BLOCK_APPEND" not in off.defines
    monkeypatch.setenv(appends.FAR_ENV, "maybe")
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_FAR_APPEND"):
        engine.run_choice(plan)


@pytest.mark.parametrize("far", [False, True])
def test_the_fused_kernels_get_the_far_queue_in_their_push_argument(far):
    """fused._scalars (what _run_setup hands every fused launch from the run choice) puts the far
    queue's bit into the push argument exactly when the choice has it."""
    plan = SimpleNamespace(num_vertices=5, source=0, device_delta=10, push_expansion="group", batch_changes=0,
                           packing=SimpleNamespace(bits=3, no_parent=7, bound=100))
    argument = int(fused._scalars(plan, np.int32, (0, chains.DEFAULT_DEGREE), far)[6])
    assert bool(argument & chains.FAR_QUEUE_BIT) is far
    assert argument & ~chains.FAR_QUEUE_BIT == push.max_shift("group")


@pytest.mark.parametrize("hops, degree", [(256, 4), (-1, 4), (2, 0), (2, 256)])
def test_limits_outside_the_fields_are_refused(hops, degree):
    with pytest.raises(ValueError):
        chains.push_argument("group", hops, degree)


def test_the_fields_match_the_header():
    header = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert re.search(r"#define SSSP_CHAIN_FIELD_BITS (\d+)", header).group(1) == str(chains.FIELD_BITS)
    assert re.search(r"#define SSSP_CHAIN_FIELD_MASK 0x([0-9a-f]+)u", header).group(1) == \
        f"{(1 << chains.FIELD_BITS) - 1:x}"
    # the cap of the group shift fits below the chain's fields
    assert push.MAX_GROUP_SHIFT < 1 << chains.FIELD_BITS
    assert "#ifndef SSSP_PUSH_CHAIN\n#define SSSP_PUSH_CHAIN 0\n#endif" in header
    assert "#if SSSP_PUSH_CHAIN && (SSSP_PUSH_BATCHED || !SSSP_BLOCK_APPEND)\n#error" in header
    assert set(CHAIN) <= set(runtime.VARIANT_DEFINES)


def test_run_limits_reads_both_switches(clean_env):
    clean_env.setenv(appends.APPEND_ENV, "1")
    assert _limits(GROUP) == (0, chains.DEFAULT_DEGREE)
    clean_env.setenv(chains.DEGREE_ENV, "9")  # the degree alone changes nothing
    assert _limits(GROUP) == (0, chains.DEFAULT_DEGREE)
    assert chains.push_argument("group", *_limits(GROUP)) == push.max_shift("group")
    clean_env.setenv(chains.CHAIN_ENV, "3")
    assert _limits(GROUP) == (3, 9)
    assert _decode(chains.push_argument("vertex", *_limits(GROUP))) == (0, 3, 9)
    clean_env.delenv(chains.DEGREE_ENV)
    assert _decode(chains.push_argument("group", *_limits(GROUP))) == (
        push.MAX_GROUP_SHIFT, 3, chains.DEFAULT_DEGREE)


def test_the_hops_and_degree_bounds_come_from_the_shared_count_switch(clean_env):
    """switches.count owns the bounds (its maximum): the message says both of them."""
    clean_env.setenv(appends.APPEND_ENV, "1")
    clean_env.setenv(chains.CHAIN_ENV, str(chains.MAX_HOPS + 1))
    with pytest.raises(errors.InvalidArgumentError, match=f"at least 1 and at most {chains.MAX_HOPS}"):
        chains.chain_hops(GROUP, appends.block_append(GROUP, "fused"), "fused")
    clean_env.setenv(chains.CHAIN_ENV, "2")
    clean_env.setenv(chains.DEGREE_ENV, str(chains.MAX_DEGREE + 1))
    with pytest.raises(errors.InvalidArgumentError, match=f"at most {chains.MAX_DEGREE}"):
        _limits(GROUP)


def test_the_chains_need_the_appends_and_the_plain_push():
    assert chains.module_defines(0, "batched", False) == ()
    for expansion in PUSH_EXPANSIONS:
        assert chains.module_defines(0, expansion, False) == ()
        if push.module_defines(expansion):
            with pytest.raises(errors.InvalidArgumentError, match=chains.CHAIN_ENV):
                chains.module_defines(2, expansion, True)
            continue
        with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
            chains.module_defines(2, expansion, False)
        assert chains.module_defines(2, expansion, True) == CHAIN
    assert chains.combines(APPEND) and chains.combines(APPEND + ("SSSP_FUSED_SOLO",))
    assert not chains.combines(()) and not chains.combines(("SSSP_FUSED_SOLO",))
    assert not chains.combines(("SSSP_PUSH_BATCHED",) + APPEND)


def test_with_chains_adds_the_twin_of_each_variant_with_the_appends():
    assert chains.with_chains(((),)) == ((),)
    assert chains.with_chains(((), APPEND, ("SSSP_PUSH_BATCHED",))) == (
        (), APPEND, runtime.variant_defines(APPEND + CHAIN), ("SSSP_PUSH_BATCHED",))


def test_the_engines_compile_the_chains_beside_every_module_with_the_appends():
    for variants in (fused.VARIANTS, operators.VARIANTS):
        with_appends = [v for v in variants if set(APPEND) <= set(v) and "SSSP_PUSH_CHAIN" not in v]
        with_chains = [v for v in variants if "SSSP_PUSH_CHAIN" in v]
        assert with_appends and sorted(with_chains) == sorted(
            runtime.variant_defines(v + CHAIN) for v in with_appends)
        assert all(set(APPEND) <= set(v) and "SSSP_PUSH_BATCHED" not in v for v in with_chains)
        assert len(set(variants)) == len(variants)
    # fused: the four plain-push modules with the appends (plain, wide, solo, solo + wide), each
    # also captured; operators: plain and wide; each of those also with multi-hop pointer jumping
    assert len([v for v in fused.VARIANTS if "SSSP_PUSH_CHAIN" in v]) == 8 * 2
    assert len([v for v in operators.VARIANTS if "SSSP_PUSH_CHAIN" in v]) == 2 * 2
    cuda_dir = runtime.SOURCE_DIR
    assert compile_check.variants_of(cuda_dir / fused.SOURCE) == fused.CHECKED_VARIANTS
    assert compile_check.variants_of(cuda_dir / operators.SOURCE_FILE) == operators.VARIANTS
    assert compile_check.variants_of(Path("/elsewhere") / fused.SOURCE) == ((),)


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_a_run_loads_the_chain_variant_when_switched_on(clean_env, expansion):
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    default = push.module_defines(expansion)
    assert fused.run_defines(plan) == default and operators.run_defines(plan) == default
    clean_env.setenv(chains.CHAIN_ENV, "2")
    if expansion == "batched":
        # refused before anything runs: run_defines is what both engines read first
        for run_defines in (fused.run_defines, operators.run_defines):
            with pytest.raises(errors.InvalidArgumentError, match=chains.CHAIN_ENV):
                run_defines(plan)
        return
    for run_defines in (fused.run_defines, operators.run_defines):
        with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
            run_defines(plan)  # the appends are not on
    clean_env.setenv(appends.APPEND_ENV, "1")
    assert fused.run_defines(plan) == APPEND + CHAIN
    assert operators.run_defines(plan) == APPEND + CHAIN
    clean_env.setenv(passes.WIDE_ENV, "1")
    clean_env.setenv(fused.SOLO_ENV, "1024")
    assert runtime.variant_defines(fused.run_defines(plan)) == runtime.variant_defines(
        APPEND + CHAIN + passes.DEFINES + ("SSSP_FUSED_SOLO",))
    clean_env.delenv(fused.CAPTURE_ENV)
    assert runtime.variant_defines(fused.run_defines(plan)) in fused.VARIANTS
    assert runtime.variant_defines(operators.run_defines(plan)) in operators.VARIANTS
    clean_env.setenv(chains.CHAIN_ENV, "off")
    assert "SSSP_PUSH_CHAIN" not in fused.run_defines(plan)


@pytest.mark.parametrize("hops", [0, 1, 6])
def test_the_fused_kernels_get_the_limits_in_their_push_argument(clean_env, hops):
    """fused._scalars, the arguments both fused kernels take: the push argument carries the
    chain's limits only with hops (and the degree switch then)."""
    clean_env.setenv(chains.DEGREE_ENV, "7")
    clean_env.setenv(appends.APPEND_ENV, "1")
    if hops:
        clean_env.setenv(chains.CHAIN_ENV, str(hops))
    plan = SimpleNamespace(num_vertices=5, source=0, device_delta=10, push_expansion="group", batch_changes=0,
                           packing=SimpleNamespace(bits=3, no_parent=7, bound=100))
    argument = fused._scalars(plan, np.int32, _limits(GROUP) if hops else (0, 7))[6]
    assert argument.dtype == np.uint32
    expected = (push.MAX_GROUP_SHIFT, hops, 7) if hops else (push.MAX_GROUP_SHIFT, 0, 0)
    assert _decode(int(argument)) == expected


def test_the_default_kernels_do_not_see_the_variant():
    """Every change of the chains sits under #if SSSP_PUSH_CHAIN, defined 0 unless the variant is
    (the default modules compile from the same tokens as without it; make cuda-check reports their
    registers)."""
    header = (runtime.SOURCE_DIR / runtime.HEADER_NAME).read_text()
    assert header.count("#if SSSP_PUSH_CHAIN\n") >= 5
    code = runtime.variant_code(runtime.read_source(operators.SOURCE_FILE), ())
    assert "#define SSSP_PUSH_CHAIN 1" not in code
    assert runtime.variant_code("", APPEND + CHAIN) == (
        "#define SSSP_BLOCK_APPEND 1\n#define SSSP_PUSH_CHAIN 1\n")


@pytest.mark.parametrize("expansion", ["group", "vertex"])
def test_a_bad_degree_is_refused_when_the_run_is_prepared(clean_env, expansion):
    """run_defines (what prepare() reads before update()'s commit) checks the degree switch too,
    but only when chains are on: hops off leave a bad degree unread."""
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    clean_env.setenv(appends.APPEND_ENV, "1")
    clean_env.setenv(chains.DEGREE_ENV, "0")
    clean_env.setenv(chains.CHAIN_ENV, "0")  # off, whatever the default
    assert fused.run_defines(plan) == APPEND and operators.run_defines(plan) == APPEND
    clean_env.setenv(chains.CHAIN_ENV, "2")
    for run_defines in (fused.run_defines, operators.run_defines):
        with pytest.raises(errors.InvalidArgumentError, match=chains.DEGREE_ENV):
            run_defines(plan)


def test_the_shipped_defaults():
    """Measured on the GPU (appends.py, chains.py): on the fused engine the appends for large
    batches only and no chains; on the operators engine both for every update; compute() (no
    batch) neither; an engine without a module has no defaults."""
    assert chains.default_hops("fused") == chains.DEFAULT_HOPS == 0
    assert chains.default_hops("operators") == chains.OPERATORS_DEFAULT_HOPS == 2
    assert not appends.by_default(0, "fused") and not appends.by_default(100, "fused")
    assert not appends.by_default(appends.MIN_BATCH_CHANGES - 1, "fused")
    assert appends.by_default(appends.MIN_BATCH_CHANGES, "fused") and appends.by_default(50_000, "fused")
    assert 10_000 < appends.MIN_BATCH_CHANGES <= 50_000  # between local10k and safe50k
    assert not appends.by_default(0, "operators")
    assert all(appends.by_default(changes, "operators") for changes in (1, 100, 10_000, 50_000))
    for read in (appends.min_batch_changes, chains.default_hops):
        with pytest.raises(ValueError, match="host"):
            read("host")


@pytest.mark.parametrize("engine", ["fused", "operators"])
@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_defaults_apply_only_where_the_variants_combine(clean_env, engine, expansion):
    """With both switches unset, an update that gets the appends by default gets the chains' default
    too with the plain push and neither with "batched", without an error (a smaller one and compute()
    get neither); an explicit value wins either way, and an explicit 1 with "batched" is still
    refused. The operators engine as shipped (two hops from the first change); the fused engine with
    two hops patched in (its appends from MIN_BATCH_CHANGES)."""
    clean_env.setattr(chains, "DEFAULT_HOPS", 2)
    clean_env.delenv(appends.APPEND_ENV)
    run_defines = {"fused": fused.run_defines, "operators": operators.run_defines}[engine]
    base = push.module_defines(expansion)
    least = appends.min_batch_changes(engine)
    for changes in (0, least - 1):  # compute(), and the largest batch below the engine's default
        small = SimpleNamespace(push_expansion=expansion, batch_changes=changes)
        assert run_defines(small) == base, changes
        assert _limits(small, engine) == (0, chains.DEFAULT_DEGREE)
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=least)
    if expansion == "batched":
        assert run_defines(plan) == base
        assert _limits(plan, engine) == (0, chains.DEFAULT_DEGREE)
        clean_env.setenv(appends.APPEND_ENV, "1")
        with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
            run_defines(plan)
        return
    assert run_defines(plan) == APPEND + CHAIN
    assert _limits(plan, engine) == (2, chains.DEFAULT_DEGREE)
    clean_env.setenv(chains.CHAIN_ENV, "off")
    assert run_defines(plan) == APPEND
    clean_env.setenv(chains.CHAIN_ENV, "3")  # explicit chains: the appends' default is not enough
    with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
        _limits(plan, engine)
    clean_env.setenv(appends.APPEND_ENV, "1")
    assert _limits(plan, engine) == (3, chains.DEFAULT_DEGREE)
    clean_env.setenv(appends.APPEND_ENV, "0")  # chains asked for without the appends: refused
    with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
        run_defines(plan)
    clean_env.delenv(chains.CHAIN_ENV)  # the chains' default follows the appends off
    assert run_defines(plan) == base
    assert _limits(plan, engine) == (0, chains.DEFAULT_DEGREE)


def test_the_operators_engine_chains_every_update_the_fused_engine_none(clean_env):
    """The shipped defaults through both engines' run_defines, both switches unset: a 100-change
    update runs the appends and the chains on the operators engine and the plain module on the
    fused one, a 50,000-change update the appends on both and the chains on the operators engine
    only, compute() the plain module on both."""
    clean_env.delenv(appends.APPEND_ENV)
    for changes, fused_defines, operators_defines in ((0, (), ()), (100, (), APPEND + CHAIN),
                                                      (50_000, APPEND, APPEND + CHAIN)):
        plan = SimpleNamespace(push_expansion="group", batch_changes=changes)
        assert fused.run_defines(plan, update=changes > 0) == fused_defines, changes
        assert operators.run_defines(plan, update=changes > 0) == operators_defines, changes
        assert _limits(plan, "operators")[0] == (2 if changes else 0)
        assert _limits(plan, "fused")[0] == 0
    # the appends forced on by hand run alone, compute() included: the chains' default rides on the
    # appends' own default only
    clean_env.setenv(appends.APPEND_ENV, "1")
    for changes in (0, 100, 50_000):
        plan = SimpleNamespace(push_expansion="group", batch_changes=changes)
        for run_defines in (fused.run_defines, operators.run_defines):
            assert run_defines(plan, update=changes > 0) == APPEND, (run_defines, changes)
        assert _limits(plan, "operators")[0] == 0
    clean_env.setenv(chains.CHAIN_ENV, "2")  # and chains asked for by hand run on both engines
    assert _limits(plan, "operators")[0] == _limits(plan, "fused")[0] == 2


@pytest.mark.parametrize("changes", [0, 100, 10 ** 6])
def test_explicit_chains_need_explicit_appends_whatever_the_batch(clean_env, changes):
    """ENGINES_PUSH_CHAIN with the appends unset is refused for every batch size and compute(),
    though a large update gets the appends by default: a stream is not refused batch by batch."""
    clean_env.delenv(appends.APPEND_ENV)
    clean_env.setenv(chains.CHAIN_ENV, "2")
    plan = SimpleNamespace(push_expansion="group", batch_changes=changes)
    for read in (_limits, fused.run_defines, operators.run_defines):
        with pytest.raises(errors.InvalidArgumentError, match=appends.APPEND_ENV):
            read(plan)
    clean_env.setenv(appends.APPEND_ENV, "1")
    assert _limits(plan)[0] == 2 and "SSSP_PUSH_CHAIN" in fused.run_defines(plan)
