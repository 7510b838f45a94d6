"""The wide O(n) passes (issue 34, step 2), a compile-time variant of both engines' modules.

Every update runs the same fixed phases whatever its size: pack, pointer jumping over
ceil(log2 n) + 1 rounds, invalidation, unpack (and compute() its unpack, distance-only runs the
parent recovery). In a module compiled with ``SSSP_WIDE_PASSES`` (kernels.cuh) the passes that
still loaded one item per trip (compute()'s unpack, the recovery's distances and count) load
SSSP_PASS_ILP items before using any, the passes' arrays are ``__restrict__`` where no other
pointer of the function reaches them (each use says why), and the push skips its racy pre-check
where one block pushes alone (the fused solo push), where the pre-check only adds a load to each
edge's chain. The same writes happen in either module: the result never depends on it.

Off by default until the GPU measurements say otherwise: ``ENGINES_WIDE_PASSES=1`` (or ``on``)
selects it for every run of either engine; unset, ``0`` or ``off`` keeps the default kernels, which
compile from the same tokens as before the variant. Read at every run, like ``ENGINES_FUSED_SOLO``.
The block-aggregated appends, measured inside this module at 48c2bca, have their own switch
since (appends.py, ENGINES_BLOCK_APPEND): the module as a whole cost small updates 2.7 %
(luxembourg_osm, 100 changes a batch, update_anatomy.py --ab-env, median per-batch ratio 1.027;
the passes alone 1.4 % in an earlier session), so the passes stay off.

The wide passes combine with the plain push module only (the "group" and "vertex" expansions, with
and without the fused solo push): that spares make cuda-check the batched modules' wide copies (its
time on CI's two cores), and the fused engine's batched + solo + wide module spills (64 registers).
A run that asks for them with the "batched" expansion is an error naming the switch.
"""

from __future__ import annotations

from . import push

#: The switch: ENGINES_WIDE_PASSES=1 runs both engines' wide-pass module.
WIDE_ENV = "ENGINES_WIDE_PASSES"
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_WIDE_PASSES",)
#: The switch, its defines and the plain-push-only rule (push.PlainPushVariant owns them).
_VARIANT = push.PlainPushVariant(WIDE_ENV, DEFINES)


def wide_passes(plan) -> bool:
    """``ENGINES_WIDE_PASSES``: whether a run of ``plan`` (its push expansion) loads the wide-pass
    module; a bad value is an error naming it."""
    return _VARIANT.on(plan.push_expansion)


#: Whether the wide passes combine with a module variant (push.PlainPushVariant.combines).
combines = _VARIANT.combines
#: The defines the wide passes add to a run's module variant, or the refusal with "batched".
module_defines = _VARIANT.module_defines
#: Each variant followed by its twin with the wide passes where they combine (make
#: cuda-check's list).
with_wide = _VARIANT.with_variant


__all__ = ["DEFINES", "WIDE_ENV", "combines", "module_defines", "wide_passes", "with_wide"]
