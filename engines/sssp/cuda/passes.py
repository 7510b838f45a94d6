"""The wide O(n) passes (issue 34, step 2), a compile-time variant of both engines' modules.

Every update runs the same fixed phases whatever its size: pack, pointer jumping over
ceil(log2 n) + 1 rounds, invalidation, unpack (and compute() its unpack, distance-only runs the
parent recovery). In a module compiled with ``SSSP_WIDE_PASSES`` (kernels.cuh) the passes that
still loaded one item per trip (compute()'s unpack, the recovery's distances and count) load
SSSP_PASS_ILP items before using any, the passes' arrays are ``__restrict__`` where no other
pointer of the function reaches them (each use says why), the push skips its racy pre-check
where one block pushes alone (the fused solo push), where the pre-check only adds a load to each
edge's chain, and a push iteration's new near-list entries are gathered per block in shared memory
and reserved with one atomic per block (kernels.cuh SSSP_BLOCK_APPEND) instead of one per group of
lanes on the one near-count word. The same writes happen in either module, the list order aside
(schedule-dependent in both): the result never depends on it.

Off by default until the GPU measurements say otherwise: ``ENGINES_WIDE_PASSES=1`` (or ``on``)
selects it for every run of either engine; unset, ``0`` or ``off`` keeps the default kernels, which
compile from the same tokens as before the variant. Read at every run, like ``ENGINES_FUSED_SOLO``.
Measured on the H200 (48c2bca, tests/gpu/test_wide_passes.py all passing): the block appends make
roadNet-PA safe50k's push iterations 17.28 -> 12.01 us each (ops_push, bench/phase_breakdown.py)
and its fused engine region 1.44 -> 1.12 ms (bench/engine_table.py; the whole update() call 2.47 ->
1.97 ms, the operators engine region 1.80 -> 1.59 ms), while the
whole module costs small updates 2.7 % (luxembourg_osm, 100 changes a batch, update_anatomy.py
--ab-env, median per-batch ratio 1.027; the passes alone cost 1.4 % there in an earlier session).
So the block appends are worth a default of their own and the passes are not: the next step gives
the appends their own switch and flips it once the whole GPU suite passes with it.

The wide passes combine with the plain push module only (the "group" and "vertex" expansions, with
and without the fused solo push): that spares make cuda-check the batched modules' wide copies (its
time on CI's two cores), and the fused engine's batched + solo + wide module spills (64 registers).
A run that asks for them with the "batched" expansion is an error naming the switch.
"""

from __future__ import annotations

from ... import errors
from . import switches

#: The switch: ENGINES_WIDE_PASSES=1 runs both engines' wide-pass module.
WIDE_ENV = "ENGINES_WIDE_PASSES"
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_WIDE_PASSES",)
def wide_passes() -> bool:
    """``ENGINES_WIDE_PASSES``: whether runs load the wide-pass module; a bad value is an error
    naming it."""
    return switches.flag(WIDE_ENV)


def combines(defines) -> bool:
    """Whether the wide passes combine with a module variant: one without the push expansions'
    own defines (push.VARIANTS)."""
    from . import push

    return not set(defines) & {d for variant in push.VARIANTS for d in variant}


def module_defines(wide: bool, push_expansion: str) -> tuple[str, ...]:
    """The defines the wide passes add to the module variant of a run whose push expansion is
    ``push_expansion`` (none when off); InvalidArgumentError for one they do not combine with."""
    from . import push

    if not wide:
        return ()
    if not combines(push.module_defines(push_expansion)):
        raise errors.InvalidArgumentError(
            f"{WIDE_ENV}=1 runs with the plain push module only (push_expansion "
            f"{push_expansion!r} has its own); unset it or choose another expansion")
    return DEFINES


def with_wide(variants) -> tuple[tuple[str, ...], ...]:
    """Each of ``variants`` (normalized defines), followed by it with the wide passes where they
    combine (``combines``)."""
    from . import runtime

    return tuple(runtime.variant_defines(v + extra) for v in variants
                 for extra in (((), DEFINES) if combines(v) else ((),)))


__all__ = ["DEFINES", "WIDE_ENV", "combines", "module_defines", "wide_passes", "with_wide"]
