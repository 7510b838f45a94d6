"""The block-aggregated near-list appends (issue 34), a compile-time variant of both engines'
modules.

A push iteration appends each vertex it lowers below the threshold to the next near list. In a
module compiled with ``SSSP_BLOCK_APPEND`` (kernels.cuh BlockQueue, queue_entry, flush_queue) the
new entries are gathered per block in shared memory and the block reserves its slots of the list
with one atomic at the end of its share of the iteration, instead of one atomic per group of lanes
on the one near-count word (same-address atomics that serialize in one L2 slice). A full queue
sends the rest straight to the list. The same entries are written in either module, the list order
aside (schedule-dependent in both): the result never depends on it.

Measured on the H200 at 48c2bca, where the appends were still part of the wide-pass module
(passes.py): roadNet-PA safe50k's push iterations 17.28 -> 12.01 us each (ops_push,
bench/phase_breakdown.py), its fused engine region 1.44 -> 1.12 ms and whole update() call 2.47 ->
1.97 ms, the operators engine region 1.80 -> 1.59 ms (bench/engine_table.py);
tests/gpu/test_wide_passes.py 32 passed. The wide passes themselves cost small updates 1.4-2.7 %,
so the appends get this switch of their own.

Off by default until the whole GPU suite passes with it on (as its own variant it is not yet
verified on a GPU; the kernel code is the one verified inside the wide module at 48c2bca, but for
a full queue's overflow, now a plain atomicAdd instead of the warp-aggregated append, which made
ptxas spill ops_push<int, long long> in this variant):
``ENGINES_BLOCK_APPEND=1`` (or ``on``) selects it for every run of either engine; unset, ``0`` or
``off`` keeps the default kernels, which compile from the same tokens as without the variant. Read
at every run, like ``ENGINES_WIDE_PASSES``. It combines with the wide passes and the fused solo
push, and with the plain push module only (the "group" and "vertex" expansions): the "batched"
expansion relaxes edges in its own loop (push_edges_batched), and a run that asks for the appends
with it is an error naming the switch.
"""

from __future__ import annotations

from . import push

#: The switch: ENGINES_BLOCK_APPEND=1 runs both engines' block-append module.
APPEND_ENV = "ENGINES_BLOCK_APPEND"
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_BLOCK_APPEND",)
#: Whether a run that leaves the switch unset gets the block appends (where its push expansion
#: combines with them: the plain push's).
DEFAULT_ON = False
#: The switch, its defines, its default and the plain-push-only rule (push.PlainPushVariant owns
#: them).
_VARIANT = push.PlainPushVariant(APPEND_ENV, DEFINES, default=DEFAULT_ON)


def block_append(expansion: str) -> bool:
    """``ENGINES_BLOCK_APPEND``: whether a run whose push expansion is ``expansion`` loads the
    block-append module (unset: DEFAULT_ON where the expansion combines with it); a bad value is an
    error naming it."""
    return _VARIANT.on(expansion)


#: Whether the block appends combine with a module variant (push.PlainPushVariant.combines).
combines = _VARIANT.combines
#: The defines the block appends add to a run's module variant, or the refusal with "batched".
module_defines = _VARIANT.module_defines
#: Each variant followed by its twin with the block appends where they combine (make
#: cuda-check's list).
with_appends = _VARIANT.with_variant


__all__ = ["APPEND_ENV", "DEFAULT_ON", "DEFINES", "block_append", "combines", "module_defines", "with_appends"]
