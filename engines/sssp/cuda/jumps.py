"""Multi-hop pointer jumping (issues 27, 34), a compile-time variant of both engines' modules.

An update with changed edges finds the old subtrees of its roots by pointer jumping
(algorithm.md §5.5): round after round, every vertex with an unflagged ancestor jumps to that
ancestor's ancestor, until no vertex jumps, and every round is a grid barrier on the fused engine
and a launch on the operators engine. The rounds follow the depth of the whole tree, not the size
of the batch: about log2 of it (luxembourg_osm's 100-change batches run a dozen), a fixed share of
every small update. In a module compiled with ``SSSP_MULTI_HOP_JUMP`` (kernels.cuh) a vertex
follows up to ``SSSP_JUMP_HOPS`` (3) ancestors a round, so the jump distance grows about fourfold
a round and a tree settles in about half the rounds, each round's items making two more dependent
loads. The flagged set, the parent-cycle test of the last round and so the results are the
default module's (kernels.cuh pointer_jump_round says why); the rounds, a statistic free by
algorithm.md §5.5, are fewer.

Off by default for smaller updates: its GPU tests pass, and 1,000 interleaved 100-change updates
measured it within 2 % of the default kernels (bench/update_anatomy.py --ab-env ENGINES_MULTI_HOP_JUMP=0,1, H100 at
9514757: per-batch ratio 1.002 fused and 0.995 operators on luxembourg_osm, 0.984 fused on
roadNet-PA), where the rounds are a small share of the update. On by default for updates of at
least ``MIN_BATCH_CHANGES`` changes (``by_default``), where the rounds cross the whole tree:
roadNet-PA safe50k's 10 jump rounds become 5 and its fused launch 869.5 / 868.5 -> 849.3 / 851.4 us
(-2.2 %; jump rounds 97.3 / 94.7 -> 77.1 / 77.8 us; H100 at 24967cd, ``ENGINES_MULTI_HOP_JUMP=0/1
bench/fused_phases.py --graph roadNet-PA --batch safe50k --repeats 15`` alternated twice; 86 -> 70
us of jump rounds on the H200 earlier). Verified there with the switch on: tests/gpu/
test_multi_hop_jump.py and test_far_append.py (the block appends and the far queue with it) 61
passed; with this default (H100, 1d80fc0 plus the flip): test_pull_offers, test_fused_solo,
test_programmatic, test_poll_record, test_operators_read_ahead, test_fused_capture and
test_conformance 340 passed; test_block_append, test_far_append, test_fused, test_snapshot_owner
and test_operators 178 passed; test_syncs 17 passed; test_multi_hop_jump, test_mapped_records and
test_host_path 68 passed, 5 skipped. ``ENGINES_MULTI_HOP_JUMP=1`` (or ``on``) selects it for every run of either engine; ``0`` or
``off`` keeps the default kernels, which compile from the same tokens as before the variant. Like the other plain-push
variants it combines with the plain push module only (a run with the "batched" expansion that asks
for it is an error naming the switch), which spares make cuda-check the batched modules' copies.
"""

from __future__ import annotations

from . import appends, push

#: The switch: ENGINES_MULTI_HOP_JUMP=1 runs both engines' multi-hop pointer jumping.
JUMP_ENV = "ENGINES_MULTI_HOP_JUMP"
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_MULTI_HOP_JUMP",)
#: The switch, its defines and the plain-push-only rule (push.PlainPushVariant owns them).
_VARIANT = push.PlainPushVariant(JUMP_ENV, DEFINES)
#: Unset, whether an update of at least ``MIN_BATCH_CHANGES`` changes loads the multi-hop module
#: (where its push expansion combines with it). compute() never jumps, so it keeps the plain module
#: whatever this says.
DEFAULT_ON = True
#: The smallest update (in changes) the default applies to: the block appends' (one threshold for
#: the large batches, whose jump rounds cross the whole tree: roadNet-PA safe50k's 10 rounds).
MIN_BATCH_CHANGES = appends.MIN_BATCH_CHANGES


def by_default(batch_changes: int) -> bool:
    """Whether a run that leaves the switch unset gets multi-hop jumping: ``DEFAULT_ON`` and an
    update of at least ``MIN_BATCH_CHANGES`` changes (compute(), 0 changes, never)."""
    return DEFAULT_ON and int(batch_changes) >= MIN_BATCH_CHANGES


def multi_hop(plan) -> bool:
    """``ENGINES_MULTI_HOP_JUMP``: whether a run of ``plan`` (its push expansion and batch size)
    loads the multi-hop module (unset: ``by_default``, never with "batched"); a bad value is an
    error naming it."""
    return _VARIANT.on(plan.push_expansion, by_default(plan.batch_changes))


#: Whether the multi-hop jumping combines with a module variant (push.PlainPushVariant.combines).
combines = _VARIANT.combines
#: The defines it adds to a run's module variant, or the refusal with "batched".
module_defines = _VARIANT.module_defines
#: Each variant followed by its twin with multi-hop jumping where it combines (make cuda-check's
#: list).
with_jumps = _VARIANT.with_variant


__all__ = ["DEFAULT_ON", "DEFINES", "JUMP_ENV", "MIN_BATCH_CHANGES", "by_default", "combines", "module_defines",
           "multi_hop", "with_jumps"]
