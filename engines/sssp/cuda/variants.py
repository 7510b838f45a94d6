"""The module variant of a run that both CUDA engines share: the push expansion's module with the
plain-push variants on top (the wide passes, passes.py; the block appends, appends.py; the chains,
chains.py; multi-hop pointer jumping, jumps.py), and the chains' limits that reach the kernels in
the push argument, from one reading of their switches. The fused engine adds its own (the solo push,
the captured update, fused.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kept import Kept
from . import appends, chains, jumps, passes, push, switches


@dataclass(frozen=True)
class RunChoice:
    """What one run of an engine loads and passes, from one reading of the switches: the module
    variant (``defines``), the chains' ``(hops, max_degree)`` that reach the kernels in the push
    argument, the fused engine's solo-push edges (0 on the operators engine), whether an operators
    update runs the captured start (operators.CAPTURED_START_ENV), whether an operators device
    loop waits for its read-ahead replay at the end (operators.WAIT_READ_AHEAD_ENV), and whether a
    fused update maps its control records (mapped.py; a captured update only) and polls for the
    commit's record while it runs (fused.POLL_RECORD_ENV), and the percent of the vertices a fused
    update's candidates must exceed for its pull by offers (fused.OFFERS_ENV; 0: never), and whether
    the fused push's far-pile entries go through a block queue (appends.FAR_ENV), and how a captured
    fused update uses its launch memo ("off", "on" or "check"; fused.MEMO_ENV). prepare() takes
    it before the commit and hands it to the run (engines/sssp/cuda/__init__.py), so an update reads
    the switches once (a bad value is refused before anything changes) and the module it compiled is
    the one it loads."""

    defines: tuple[str, ...]
    chain_limits: tuple[int, int]
    solo_edges: int = 0
    captured_start: bool = False
    wait_read_ahead: bool = False
    mapped_records: bool = False
    poll_record: bool = False
    offers_percent: int = 0
    far_queue: bool = False
    precheck: bool = True
    launch_memo: str = "off"


def defines(expansion: str, wide: bool = False, block_append: bool = False,
            chain_hops: int = 0, multi_hop: bool = False) -> tuple[str, ...]:
    """The defines of a module running ``expansion``'s push with the wide passes when ``wide``,
    the block appends when ``block_append``, the chains when ``chain_hops`` and multi-hop pointer
    jumping when ``multi_hop``; InvalidArgumentError (naming the switch) for a variant the
    expansion's module does not combine with."""
    return (push.module_defines(expansion) + passes.module_defines(wide, expansion)
            + appends.module_defines(block_append, expansion)
            + chains.module_defines(chain_hops, expansion, block_append)
            + jumps.module_defines(multi_hop, expansion))


#: The switches a shared RunChoice reads (their raw values key ``_choices``).
SWITCHES = (passes.WIDE_ENV, appends.APPEND_ENV, appends.FAR_ENV, chains.CHAIN_ENV, chains.DEGREE_ENV,
            jumps.JUMP_ENV, push.PRECHECK_ENV)
#: Choices already made, by everything they depend on (``_choice_key``): a stream of updates asks
#: the same question each time, and working it out again (a dozen calls through the switch
#: parsers) cost about 30 µs of an update's host time on a slow CPU (cProfile of 600 luxembourg_osm
#: updates, H100 machine). Only valid choices are kept: a bad switch value raises every time.
_choices = Kept()


def _choice_key(plan, engine: str) -> tuple:
    """Every input of ``run_choice``: the engine, the push expansion, the appends' and the chains'
    defaults for this run (hops and degree, read where they are defined, so a changed default
    changes the key) and the raw values of the switches."""
    return (engine, plan.push_expansion, appends.by_default(plan.batch_changes, engine),
            jumps.by_default(plan.batch_changes), chains.default_hops(engine), chains.DEFAULT_DEGREE,
            switches.raw_values(SWITCHES))


def run_choice(plan, engine: str) -> RunChoice:
    """The RunChoice both engines share for a run of ``plan`` on ``engine`` ("fused" or
    "operators"; no solo edges: the fused engine adds its own variants):
    ENGINES_WIDE_PASSES, ENGINES_BLOCK_APPEND (unset: by the plan's batch size and the engine),
    ENGINES_PUSH_CHAIN(_DEGREE) (unset: by the engine) and ENGINES_MULTI_HOP_JUMP (unset: by the
    plan's batch size) read once, so the module a run loads and the
    limits its push argument carries agree."""
    def make() -> RunChoice:
        block_append = appends.block_append(plan, engine)
        limits = chains.run_limits(plan, block_append, engine)
        return RunChoice(defines(plan.push_expansion, passes.wide_passes(plan), block_append, limits[0],
                                 jumps.multi_hop(plan)), limits,
                         # read (and checked) for both engines; the fused engine's push only has
                         # the far queue (kernels.cuh push_list's FarQueue)
                         far_queue=appends.far_queue(block_append) and engine == "fused",
                         precheck=push.precheck())

    return _choices.get(_choice_key(plan, engine), make)


__all__ = ["RunChoice", "SWITCHES", "defines", "run_choice"]
