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

On by default for a fused update whose batch has at least ``MIN_BATCH_CHANGES`` changes, off for
smaller batches and for compute(), from these measurements (H100, 170950f, whole ``update()`` per
batch interleaved off/on, ``bench/update_anatomy.py --batch-size 100 --batches 1000 --ab-env
ENGINES_BLOCK_APPEND=0,1``, median per-batch ratio on/off; ``bench/engine_table.py`` engine region):
luxembourg_osm, 100 changes a batch, 1.024 and 1.029 (a short near list gains nothing from fewer
atomics and pays for the block queue); roadNet-PA, 100 changes, 1.017; roadNet-PA local10k (10,000
changes) fused 1.09 -> 1.12 ms; roadNet-PA safe50k (50,000) fused 1.59 -> 1.23 ms, operators 1.92
-> 1.69 ms. The whole GPU suite passed with the appends on for every run (718 of 720; the other
two counted a broom's pushes under the chains, since pinned), so the choice between the two
modules is the measurements', not a question of the bytes. compute() was not measured with them
and keeps the plain module.

The operators engine gets them for every update (``OPERATORS_MIN_BATCH_CHANGES``), with the chains
(chains.py), from these measurements (H200, 55cf5ac, the operators engine's whole ``update()`` per
batch interleaved, ``bench/update_anatomy.py --engine operators --ab-env``, median per-batch ratio):
the appends alone cost it 100-change batches as they cost the fused engine (luxembourg_osm 1.024,
roadNet-PA 1.016) and gain on larger ones (roadNet-PA 10,000 changes 0.994, 50,000 0.979), but the
chains they carry gain more on every batch measured (with the appends on, two hops against none:
luxembourg_osm 100 changes 0.820, roadNet-PA 100, 10,000 and 50,000 changes 0.982, 0.988, 0.994),
because each push iteration they save is a kernel phase of that engine.

``ENGINES_BLOCK_APPEND=1`` (or ``on``) selects it for every run of either engine, alone (the
operators engine's default chains come with the appends' default only, chains.chain_hops), ``0`` or
``off`` for none; unset, the engine and the batch size decide (``block_append``). Read at every run, like
``ENGINES_WIDE_PASSES``. It combines with the wide passes and the fused solo push, and with the
plain push module only (the "group" and "vertex" expansions): the "batched" expansion relaxes edges
in its own loop (push_edges_batched), and a run that asks for the appends with it is an error
naming the switch; the default never applies to it.
"""

from __future__ import annotations

from . import push, switches

#: The switch: ENGINES_BLOCK_APPEND=1 runs both engines' block-append module.
APPEND_ENV = "ENGINES_BLOCK_APPEND"
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_BLOCK_APPEND",)
#: The smallest batch (in changes) whose fused update gets the block appends when the switch is
#: unset: between the measured 10,000 (local10k, 3 % slower with them) and 50,000 (safe50k, 23 %
#: faster).
MIN_BATCH_CHANGES = 20_000
#: The same for the operators engine: every update (the chains' gain needs the appends; above).
OPERATORS_MIN_BATCH_CHANGES = 1
#: The switch, its defines and the plain-push-only rule (push.PlainPushVariant owns them).
_VARIANT = push.PlainPushVariant(APPEND_ENV, DEFINES)
#: The far pile's block queue (issue 34): in a fused run with the block appends, a push iteration's
#: far-pile entries gather per block too (kernels.cuh push_list, the push argument's
#: SSSP_FAR_QUEUE_BIT), one atomic per block on the pile's count word instead of one per group of
#: lanes. On by default (``ENGINES_FAR_APPEND=0`` or ``off`` turns it off). A run without the
#: block appends has no block queue and ignores it, and so does the operators engine (its ops_push
#: has 32 registers, and the queue's code made ptxas spill). The same entries either way, the
#: pile's order aside: the result never depends on it. Measured on an H100 at 00df368
#: (bench/fused_phases.py --graph roadNet-PA --batch safe50k --repeats 15, off and on alternated
#: four times): the launch 990.8 / 987.9 / 988.7 / 989.5 us off, 866.1 / 866.7 / 863.8 / 867.2 on
#: (-12.4 %), its push iterations 740 -> 615 us (10.50 -> 8.72 us each; the iterations over near
#: lists of 10,000-99,999 vertices 17.7 -> 13.3 us, of 100,000 or more 37.8 -> 29.8); the 4,039-vertex
#: graph's 1,760-change update has no block appends (MIN_BATCH_CHANGES) and is unchanged (launch
#: 51.9 / 51.6 us). Verified there with the switch on: tests/gpu/test_far_append.py and
#: test_pull_offers.py 53 passed; the GPU suite none failed (989 passed, 30 skipped up to a 440 s
#: cap at 91 %, then its last four files 66 passed, 4 skipped).
FAR_ENV = "ENGINES_FAR_APPEND"
FAR_DEFAULT = True


def min_batch_changes(engine: str) -> int:
    """The smallest update (in changes) that gets the appends by default on ``engine`` ("fused" or
    "operators")."""
    if engine == "fused":
        return MIN_BATCH_CHANGES
    if engine == "operators":
        return OPERATORS_MIN_BATCH_CHANGES
    raise ValueError(f"min_batch_changes: unknown CUDA engine {engine!r}")


def by_default(batch_changes: int, engine: str) -> bool:
    """Whether a run of ``engine`` that leaves the switch unset gets the appends (where its push
    expansion combines with them): an update of at least ``min_batch_changes(engine)`` changes;
    compute() (0) never."""
    return int(batch_changes) >= min_batch_changes(engine) > 0


def far_queue(block_append: bool) -> bool:
    """``ENGINES_FAR_APPEND`` for a run whose block appends are ``block_append``: whether its
    far-pile entries go through the block's far queue (never without the block appends); a bad
    value is an error naming the switch."""
    on = switches.flag(FAR_ENV, default=FAR_DEFAULT)
    return bool(on and block_append)


def block_append(plan, engine: str) -> bool:
    """``ENGINES_BLOCK_APPEND`` for a run of ``plan`` (its push expansion and batch size) on
    ``engine``: whether it loads the block-append module (unset: ``by_default``, never with
    "batched"); a bad value is an error naming it."""
    return _VARIANT.on(plan.push_expansion, by_default(plan.batch_changes, engine))


#: Whether the block appends combine with a module variant (push.PlainPushVariant.combines).
combines = _VARIANT.combines
#: The defines the block appends add to a run's module variant, or the refusal with "batched".
module_defines = _VARIANT.module_defines
#: Each variant followed by its twin with the block appends where they combine (make
#: cuda-check's list).
with_appends = _VARIANT.with_variant


__all__ = ["APPEND_ENV", "DEFINES", "FAR_DEFAULT", "FAR_ENV", "MIN_BATCH_CHANGES", "OPERATORS_MIN_BATCH_CHANGES",
           "block_append", "by_default", "combines", "far_queue", "min_batch_changes", "module_defines",
           "with_appends"]
