"""Lane-local chain following in the push (issues 27, 34), a compile-time variant of both engines'
modules, behind ``ENGINES_PUSH_CHAIN``.

A push iteration lists every vertex it lowers below the threshold for the next iteration, so on a
road network, where a search front is a ring of long chains, the front advances one hop per
iteration, and every iteration costs a grid barrier (or a kernel boundary) and a dependent chain
of L2 round trips, whatever its size. In a module compiled with ``SSSP_PUSH_CHAIN``
(kernels.cuh follow_chain) a lane that lowers a vertex below the threshold relaxes that vertex's
out-edges itself, at once, follows the first vertex that relaxation lowers below the threshold the
same way, and lists the others; after ``hops`` vertices followed, or at a vertex wider than
``max_degree`` out-edges, it lists the vertex where it stopped. The result never depends on it
(algorithm.md §5.12; kernels.cuh says why the fixpoint is the same).

Chains run only in push iterations whose near list is short enough for every vertex to get the
widest group of lanes (kernels.cuh push_list): in a list that fills the grid the iteration is work,
not latency, and one lane's chain would only make the others wait.

Modelled on the CPU (``python bench/chain_model.py``: the near-far schedule with the kernel's
lanes, one legal order; every setting ends with the chain-free distances), with 0, 1, 2 and 4 hops
and ``max_degree`` 4, push iterations, relaxations and the model's critical-path cost (iterations
at a guessed 8 dependent L2 round trips each plus the longest chain's round trips): a stream of 400
batches of 100 changes on luxembourg_osm, median iterations per update 51 -> 26.5 -> 19.5 -> 15,
relaxations +0.2 %, +0.3 %, +1.0 %, cost 1.00 -> 0.77 -> 0.71 -> 0.71; roadNet-PA safe50k 83 -> 59
-> 58 -> 58 iterations, +0.5 %, 0 %, 0 %, cost 0.93, 1.07, 1.33; roadNet-PA local10k 173 -> 111
-> 103 -> 103, +0.4 %, +3 %, +5 %, cost 0.99, 1.20, 1.68.

Measured (H100, 170950f; the GPU tests, tests/gpu/test_push_chain.py, all passed there, and the
whole GPU suite with two-hop chains on by default passed but for two tests that counted the plain
push's lists, since pinned): whole ``update()`` per batch interleaved, ``bench/update_anatomy.py
--batch-size 100 --batches 1000 --ab-env ENGINES_PUSH_CHAIN=0,2`` with ``ENGINES_BLOCK_APPEND=1``,
median per-batch ratio: luxembourg_osm 0.908, 0.953, 0.965 (three runs; 0.961 and 0.958 with
``max_degree`` 2 and 3; 4 against 2 hops 1.002, 1 against 2 hops 1.012), but roadNet-PA 1.051
(1.042, 1.056 with ``max_degree`` 2, 3; one hop 1.008); the engine table's fused region on
roadNet-PA safe50k 1.23 -> 1.28 ms and local10k 1.12 -> 1.33 ms (105 instead of 177 push
iterations, each longer). Against the plain module (appends off) luxembourg_osm gains 1.7 %
(0.983 twice: the chains' gain less the appends' cost on short lists) and roadNet-PA loses 5.5 %
(1.055). The model's iteration counts hold, and so does its cost column on roadNet-PA (1.07 and
1.20 modelled, 1.04 and 1.19 measured): there the longest chain of an iteration costs more than the
iterations it saves. So chains stay off by default on the fused engine, a switch for road networks
of long degree-2 chains like luxembourg_osm.

On the operators engine each push iteration saved is a kernel phase, and there two hops gain on every
batch measured (H200, 55cf5ac, ``bench/update_anatomy.py --engine operators --ab-env
ENGINES_PUSH_CHAIN=0,2`` with ``ENGINES_BLOCK_APPEND=1``, median per-batch ratio): luxembourg_osm 100
changes 0.820, roadNet-PA 100, 10,000 and 50,000 changes 0.982, 0.988, 0.994. So that engine runs
them by default (``OPERATORS_DEFAULT_HOPS``) with the block appends it then has for every update
(appends.py); compute() keeps the plain module on both engines.

Unset, the engine's default (``default_hops``: DEFAULT_HOPS 0 on the fused engine,
OPERATORS_DEFAULT_HOPS 2 on the operators engine, wherever the appends' own default gives the run the
block appends: with ``ENGINES_BLOCK_APPEND`` unset, for every operators update, never compute()):
``ENGINES_PUSH_CHAIN=<hops>`` (1 to MAX_HOPS; 0 or ``off`` keeps the default kernels, which compile
from the same tokens as without the variant) selects it for every run of either engine; ``ENGINES_PUSH_CHAIN_DEGREE=<edges>`` sets ``max_degree``
(DEFAULT_DEGREE when unset). Both are read at every run, like ``ENGINES_BLOCK_APPEND``, which it needs
(``ENGINES_BLOCK_APPEND=1``: without the block appends, the warp-aggregated appends around the
chain made ptxas spill ops_push); it combines with the wide
passes and the fused solo push, and with the plain push module only (the "group" and "vertex"
expansions). A run that asks for it without the appends or with "batched" is an error naming the
switch. The limits reach the kernels in the push argument (``push_argument``), so each
setting runs the same compiled module.
"""

from __future__ import annotations

from ... import errors
from . import appends, push, switches

#: The switch: the vertices a lane follows (relaxes itself), the one it kept included (0 / unset /
#: off: no chains).
CHAIN_ENV = "ENGINES_PUSH_CHAIN"
#: The widest vertex (out-edges) a lane follows; wider ones are listed.
DEGREE_ENV = "ENGINES_PUSH_CHAIN_DEGREE"
#: ``max_degree`` when ENGINES_PUSH_CHAIN_DEGREE is unset: a road network's vertices (the CPU model
#: found 8 no better on luxembourg_osm and costlier in relaxations on roadNet-PA).
DEFAULT_DEGREE = 4
#: The vertices a lane follows in a fused run that leaves ENGINES_PUSH_CHAIN unset (0: chains off),
#: where chains combine with the run's module.
DEFAULT_HOPS = 0
#: The same for the operators engine, whose every update has the block appends by default
#: (appends.OPERATORS_MIN_BATCH_CHANGES): two hops, measured there (appends.py gives the figures).
OPERATORS_DEFAULT_HOPS = 2
#: The module variant's defines (runtime.VARIANT_DEFINES).
DEFINES = ("SSSP_PUSH_CHAIN",)
#: Bits of each field of the push argument (kernels.cuh SSSP_CHAIN_FIELD_BITS): the group shift,
#: the hops, the widest vertex followed.
FIELD_BITS = 8
#: The largest hops and widest vertex a field holds.
MAX_HOPS = MAX_DEGREE = (1 << FIELD_BITS) - 1
#: The plain-push-only rule, the need for the block appends' module, the defines and make
#: cuda-check's twins (push.PlainPushVariant).
_VARIANT = push.PlainPushVariant(CHAIN_ENV, DEFINES, requires=appends.DEFINES)


def default_hops(engine: str) -> int:
    """The hops of a run of ``engine`` ("fused" or "operators") that leaves the switch unset."""
    if engine == "fused":
        return DEFAULT_HOPS
    if engine == "operators":
        return OPERATORS_DEFAULT_HOPS
    raise ValueError(f"default_hops: unknown CUDA engine {engine!r}")


def chain_hops(plan, block_append: bool, engine: str) -> int:
    """``ENGINES_PUSH_CHAIN``: the vertices a lane follows in a run of ``plan`` on ``engine`` whose
    block appends are ``block_append`` (appends.block_append) (0: off). Unset, ``default_hops``
    where the appends' own default gave the run the block appends (``ENGINES_BLOCK_APPEND`` unset)
    and chains combine with its module (the plain push), else 0: ``ENGINES_BLOCK_APPEND=1`` set by
    hand runs the appends alone, and a default never turns a run into a refusal. A bad value is an
    error naming it."""
    if switches.given(CHAIN_ENV):
        hops = switches.count(CHAIN_ENV, "a number of vertices to follow", minimum=1, maximum=MAX_HOPS)
        if hops and not switches.flag(appends.APPEND_ENV):
            # not the appends' batch-size default: a stream would then be refused for its small
            # batches and compute() only
            raise errors.InvalidArgumentError(
                f"{CHAIN_ENV} runs with the block appends only: set {appends.APPEND_ENV}=1 too, or "
                f"unset {CHAIN_ENV}")
        return hops
    hops = default_hops(engine)
    if not hops or not block_append or switches.given(appends.APPEND_ENV):
        return 0
    return hops if combines(push.module_defines(plan.push_expansion) + appends.DEFINES) else 0


def chain_degree() -> int:
    """``ENGINES_PUSH_CHAIN_DEGREE``: the widest vertex followed (DEFAULT_DEGREE when unset); a
    bad value (0 and off included: a chain follows vertices of at least one edge) is an error
    naming it."""
    what = "the widest vertex to follow, in out-edges"
    if not switches.given(DEGREE_ENV):
        return DEFAULT_DEGREE
    value = switches.count(DEGREE_ENV, what, minimum=1, maximum=MAX_DEGREE)
    if value == 0:  # 0 or off: no vertex could be followed
        raise errors.InvalidArgumentError(
            f"{DEGREE_ENV}={switches.given(DEGREE_ENV)!r}: expected {what} (an integer of at least 1 "
            f"and at most {MAX_DEGREE}); unset it for {DEFAULT_DEGREE}")
    return value


def module_defines(hops: int, expansion: str, block_append: bool) -> tuple[str, ...]:
    """The defines chains add to a run whose push expansion is ``expansion`` (none for 0 hops);
    InvalidArgumentError with "batched", and without the block appends (``block_append``)."""
    if int(hops) <= 0:
        return ()
    _VARIANT.module_defines(True, expansion)  # the refusal with "batched"
    if not block_append:  # what _VARIANT.requires, said with the switch that gives it
        raise errors.InvalidArgumentError(
            f"{CHAIN_ENV} runs with the block appends only: set {appends.APPEND_ENV}=1 too, or "
            f"unset {CHAIN_ENV}")
    return DEFINES


#: The push argument's bit for the far pile's block queue (kernels.cuh SSSP_FAR_QUEUE_BIT,
#: appends.far_queue).
FAR_QUEUE_BIT = 1 << 31
#: The push argument's bit that drops the racy pre-check (kernels.cuh SSSP_NO_PRECHECK_BIT,
#: push.PRECHECK_ENV).
NO_PRECHECK_BIT = 1 << 30


def push_argument(expansion: str, hops: int, max_degree: int, far_queue: bool = False,
                  precheck: bool = True) -> int:
    """The kernels' push argument (``push_shift``): the expansion's group-shift cap, with
    ``hops`` > 0 the chain's limits above it (kernels.cuh take_chain_limits), FAR_QUEUE_BIT
    when the far pile's entries go through the block queue (appends.far_queue) and NO_PRECHECK_BIT
    when the pushes drop the racy pre-check (push.precheck)."""
    shift = (push.max_shift(expansion) | (FAR_QUEUE_BIT if far_queue else 0)
             | (0 if precheck else NO_PRECHECK_BIT))
    hops, max_degree = int(hops), int(max_degree)
    if hops == 0:
        return shift
    if not (1 <= hops <= MAX_HOPS and 1 <= max_degree <= MAX_DEGREE):
        raise ValueError(f"push_argument: hops {hops} and max_degree {max_degree} must be in "
                         f"[1, {MAX_HOPS}]")
    return shift | hops << FIELD_BITS | max_degree << (2 * FIELD_BITS)


def run_limits(plan, block_append: bool, engine: str) -> tuple[int, int]:
    """Both switches for a run of ``engine``, read once: ``(hops, max_degree)``, hops 0 when chains
    are off (the degree is then neither read nor checked). The engines' run_defines read it, so a
    bad value of either is refused when the run is prepared, before update()'s commit."""
    hops = chain_hops(plan, block_append, engine)
    return hops, (chain_degree() if hops else DEFAULT_DEGREE)


#: Whether chains combine with a module variant: a plain-push one with the block appends (without
#: them, the warp-aggregated appends around the chain made ptxas spill ops_push).
combines = _VARIANT.combines
#: Each variant followed by its twin with chains where they combine (make cuda-check's list).
with_chains = _VARIANT.with_variant


__all__ = ["CHAIN_ENV", "DEFAULT_DEGREE", "DEFAULT_HOPS", "DEFINES", "DEGREE_ENV", "FAR_QUEUE_BIT", "FIELD_BITS", "NO_PRECHECK_BIT",
           "MAX_DEGREE", "MAX_HOPS", "OPERATORS_DEFAULT_HOPS", "chain_degree", "chain_hops", "combines",
           "default_hops", "module_defines", "push_argument", "run_limits", "with_chains"]
