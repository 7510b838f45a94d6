"""How a push iteration spreads a near-list vertex's out-edges over lanes (algorithm.md §5.9 (c)).

Under the ``"vertex"`` expansion one lane walks all the out-edges of a vertex one after another, so
an iteration lasts as long as the longest adjacency list it holds, while most of the grid idles
when the list is short (the usual case). Under ``"group"`` a vertex's out-edges are spread over a
group of ``2^shift`` lanes of one warp, the widest group up to a warp such that the list still
fits the grid (``group_shift``). ``"batched"`` is ``"group"`` with each lane relaxing its edges
``EDGE_BATCH`` at a time: the neighbours, the filter's words and the atomic minima of a step are
loaded together before any is used (kernels.cuh push_edges_batched), so a lane that walks a whole
vertex (a list that fills the grid) waits for one memory latency per step instead of one per edge.
The result never depends on the width or the order (algorithm.md §5.12).

``kernels.cuh push_group_shift`` is the device twin of ``group_shift`` (every thread of a push
computes it from the list's length and the launch's threads); the operators host loop sizes its
push launch with ``launch_threads`` so that the kernel finds the width this module chose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..plan import PUSH_EXPANSIONS
# the log's size is the workspace's (it owns the buffer); named here for the profile's readers
from . import workspace
from .workspace import NEAR_LOG_CAPACITY

#: The widest group: a warp, 2^5 lanes (kernels.cuh SSSP_PUSH_GROUP_SHIFT).
MAX_GROUP_SHIFT = 5
_MAX_SHIFT = {"vertex": 0, "group": MAX_GROUP_SHIFT, "batched": MAX_GROUP_SHIFT}
assert set(_MAX_SHIFT) == set(PUSH_EXPANSIONS)
#: Edges a lane relaxes per step under "batched" (kernels.cuh SSSP_PUSH_EDGE_BATCH).
EDGE_BATCH = 4
#: The compile-time variant of each expansion's module (runtime.VARIANT_DEFINES): "batched" is
#: its own module, so the other expansions' kernels compile without its code and registers.
_DEFINES = {"vertex": (), "group": (), "batched": ("SSSP_PUSH_BATCHED",)}
assert set(_DEFINES) == set(PUSH_EXPANSIONS)
#: The distinct module variants of the expansions, the plain one first.
VARIANTS = tuple(sorted(set(_DEFINES.values())))


#: The switch of the racy pre-check (issue 34): before its atomic minimum, a grid push may load the
#: neighbour's word and skip an offer that is not below it (kernels.cuh push_list's ``filter``:
#: fewer atomics where words contend, one more L2 round trip in each edge's dependent chain).
#: Dropped by default, both engines, update() and compute() alike (the push argument's
#: NO_PRECHECK_BIT, chains.push_argument): the A/B below never found it ahead.
#: ``ENGINES_PUSH_PRECHECK=1`` (or ``on``) puts it back; unset, empty, ``0`` or ``off`` drops it.
#: No write changes either way: a filtered offer is not below the word, so its atomicMin would
#: leave the word and list nothing. Measured (H100 80GB HBM3, ``bench/gpu_session.sh phases``:
#: ``bench/fused_phases.py`` with 1 and 0 alternated three times): roadNet-PA safe50k's fused
#: launch 849 -> 810 us (-4.6 %), roadNet-PA local10k 896 -> 888 us (-0.8 %), the 4,039-vertex
#: random graph's 1 % batch (43 arcs a vertex, contended words) 49.7 us on both sides.
PRECHECK_ENV = "ENGINES_PUSH_PRECHECK"


def precheck() -> bool:
    """``ENGINES_PUSH_PRECHECK``: whether the runs' pushes keep the racy pre-check (only when 1 /
    on); a bad value is an error naming it."""
    from . import switches

    return switches.flag(PRECHECK_ENV, default=False)


def max_shift(expansion: str) -> int:
    """The cap of ``group_shift`` under ``expansion`` (the kernels' ``push_shift`` argument)."""
    try:
        return _MAX_SHIFT[expansion]
    except KeyError:
        raise ValueError(f"unknown push expansion {expansion!r}: expected one of "
                         f"{', '.join(PUSH_EXPANSIONS)}") from None


def module_defines(expansion: str) -> tuple[str, ...]:
    """The defines of the module variant that runs ``expansion``'s push."""
    max_shift(expansion)  # the same error for an unknown expansion
    return _DEFINES[expansion]


class PlainPushVariant:
    """A module variant behind an environment switch that combines with the plain push module only
    (the "group" and "vertex" expansions, not "batched", whose module relaxes edges in its own
    loop): the wide passes (passes.py), the block appends (appends.py) and the chains (chains.py,
    which also ``requires`` the appends' defines). One place for how a run reads the switch, which
    defines it adds, the refusal with "batched" and the variants make cuda-check compiles."""

    def __init__(self, env: str, defines: tuple[str, ...], requires: tuple[str, ...] = ()):
        self.env, self.defines, self.requires = env, tuple(defines), tuple(requires)

    def on(self, expansion: str, default: bool = False) -> bool:
        """The switch for a run whose push expansion is ``expansion``: on for 1 / on, off for 0 /
        off; unset, the run's ``default``, but only where the variant combines with the
        expansion's module, so a default never turns a run into the refusal that an explicit 1
        with "batched" gets. A bad value is an error naming the switch."""
        from . import switches

        if switches.given(self.env):
            return switches.flag(self.env)
        return bool(default) and self._plain(module_defines(expansion))

    @staticmethod
    def _plain(defines) -> bool:
        """Whether a module variant is the plain push's: none of the expansions' own defines."""
        return not set(defines) & {d for variant in VARIANTS for d in variant}

    def combines(self, defines) -> bool:
        """Whether the variant combines with a module variant: a plain-push one (``_plain``) with
        every define it ``requires``."""
        return self._plain(defines) and set(self.requires) <= set(defines)

    def module_defines(self, on: bool, expansion: str) -> tuple[str, ...]:
        """The defines the variant adds to a run whose push expansion is ``expansion`` (none when
        off); InvalidArgumentError for one it does not combine with."""
        if not on:
            return ()
        if not self._plain(module_defines(expansion)):
            from ... import errors

            raise errors.InvalidArgumentError(
                f"{self.env}=1 runs with the plain push module only (push_expansion {expansion!r} "
                "has its own); unset it or choose another expansion")
        return self.defines

    def with_variant(self, variants) -> tuple[tuple[str, ...], ...]:
        """Each of ``variants`` (normalized defines), followed by it with this variant where it
        combines."""
        from . import runtime

        return tuple(runtime.variant_defines(v + extra) for v in variants
                     for extra in (((), self.defines) if self.combines(v) else ((),)))


def group_shift(count: int, threads: int, cap: int) -> int:
    """log2 of the lanes per near-list vertex: the largest shift <= ``cap`` with
    ``count << shift <= threads``, and 0 when even one lane per vertex overfills the grid."""
    count, threads, shift = int(count), int(threads), int(cap)
    if count < 0 or threads < 1 or not 0 <= shift <= MAX_GROUP_SHIFT:
        raise ValueError(f"group_shift({count}, {threads}, {cap}): count >= 0, threads >= 1 and "
                         f"0 <= cap <= {MAX_GROUP_SHIFT} expected")
    while shift > 0 and (count << shift) > threads:
        shift -= 1
    return shift


def launch_threads(count: int, max_threads: int, cap: int) -> int:
    """The threads a push launch over ``count`` near-list vertices asks for when at most
    ``max_threads`` can run: each vertex's group, as wide as ``group_shift`` allows."""
    return int(count) << group_shift(count, max_threads, cap)


@dataclass(frozen=True)
class PushProfile:
    """The push iterations of one CUDA run: how many, the near-list length of each (as logged on
    the device, at most NEAR_LOG_CAPACITY), and their median (None without iterations, or when
    the log is incomplete: an exact median needs every length)."""

    iterations: int
    near_lengths: np.ndarray
    complete: bool

    @property
    def median(self) -> float | None:
        if not self.complete or self.iterations == 0:
            return None
        return float(np.median(self.near_lengths))


def profile_from_log(iterations: int, log: np.ndarray) -> PushProfile:
    """The profile of a run of ``iterations`` push iterations whose device log is ``log``."""
    iterations = int(iterations)
    kept = min(iterations, NEAR_LOG_CAPACITY)
    lengths = np.asarray(log[:kept]).astype(np.int64, copy=True)
    return PushProfile(iterations, lengths, complete=kept == iterations)


def push_profile(result) -> PushProfile:
    """The push profile of the last run of the CUDA ``result`` (its update() or compute()).

    A diagnostic: it reads the log of the result's device workspace, which the next CUDA run on
    that device overwrites, so call it right after the run; the read waits for the device (its
    own synchronization, outside the run's)."""
    from ...errors import InvalidArgumentError
    from . import runtime

    stats = result.stats
    if result.backend != "cuda" or stats is None:
        raise InvalidArgumentError("push_profile needs a CUDA result that ran compute() or update()")
    ws = workspace.get(result.device, np.dtype(result._p.dtype))  # the graph's vertex type
    if ws.near_log is None:
        raise InvalidArgumentError("no CUDA run on this device has logged its push iterations")
    with runtime.cuda_errors("reading the push log"):
        log = ws.near_log[: min(int(stats.iterations), NEAR_LOG_CAPACITY)].get()
    return profile_from_log(stats.iterations, log)


__all__ = ["EDGE_BATCH", "MAX_GROUP_SHIFT", "NEAR_LOG_CAPACITY", "PlainPushVariant", "PushProfile",
           "group_shift",
           "launch_threads", "max_shift", "precheck", "PRECHECK_ENV", "module_defines", "VARIANTS", "profile_from_log", "push_profile"]
