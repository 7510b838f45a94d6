#!/usr/bin/env python3
"""The near-far push with lane-local chains, modelled on the CPU (issues 27, 34): how many push
iterations an update or compute() takes with ``ENGINES_PUSH_CHAIN=<hops>`` (kernels.cuh
follow_chain), and what the chains cost in relaxations, before any GPU time is spent on them.

On the GPU every push iteration costs a grid barrier (or a kernel boundary) and a dependent chain
of L2 round trips, whatever its size, and on a road network an update's search front advances one
hop per iteration. The model runs the engines' near-far schedule (algorithm.md §5.9: near list,
threshold, far pile, epochs) from the start the host reference reaches (the words and frontier an
update's pull leaves, or compute()'s source), pushing each near list sequentially in list order:
one legal order of the GPU's concurrent pushes (algorithm.md §5.12; the model checks that every
setting ends with the chain-free run's distances). A vertex lowered below the threshold starts a chain as a
lane's kept vertex does on the GPU: its out-edges are relaxed from the distance the lane gave it,
the first vertex that lowers below the threshold is followed the same way and the others are
listed, up to ``hops`` vertices; the vertex where it stops (out of hops, or wider than
``max_degree`` out-edges) is listed. Lanes as the kernel has them (``--threads``, by default the
fused engine's grid on an H200 for the graph; the group rule of push.py up to ``--max-shift``):
each lane keeps the first vertex it lowers below the threshold in its share and lists the others,
and the kept vertices' chains run after every share, in iterations whose list is short enough for
the widest group only (kernels.cuh push_list). ``--threads 0`` lets every lowering start its
own chain at once: the most the chains can save (optimistic by up to 2x above one or two hops on a
grid, review of f53eea2).

Per setting it reports the push iterations, epochs, relaxations (lowerings), the vertices pushed
from near lists, the vertices followed, the sum over iterations of the longest chain followed in
each, in vertices and in dependent L2 round trips (the lane that ends an iteration last: what the
chains add to the iterations' time), and a cost: the iterations' critical path in round trips
(ITERATION_ROUND_TRIPS an iteration, a guessed constant, plus the chains'), against no chains.
Distances only: a parent-only win (same distance, lower id) never lists a vertex, so it does not
change these counts.

    python bench/chain_model.py --graph luxembourg_osm --stream 200
    python bench/chain_model.py --graph roadNet-PA --batch safe50k --hops 0 1 2 4
    python bench/chain_model.py --graph roadNet-PA --compute --max-degree 8

Exit codes (engines/exitcodes.py): 0 done; 1 a setting ended with other distances than the
chain-free run (a defect of the model); 2 bad arguments or input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines.exitcodes import ExitCode  # noqa: E402
from protocol.errors import UsageError, run_command  # noqa: E402

#: A distance no finite word reaches (the model's INF; finite distances are at most the bound).
UNREACHED = np.int64(2**62)
DEFAULT_HOPS = (0, 1, 2, 4, 8)
#: ENGINES_PUSH_CHAIN_DEGREE's default (chains.DEFAULT_DEGREE).
DEFAULT_MAX_DEGREE = 4
#: What an offer did (_kernel's lower): nothing, lowered to the far pile's side, lowered below the
#: threshold.
NOT_LOWERED, FAR, NEAR = 0, 1, 2
#: One iteration's chains (_kernel's follow adds to them): vertices followed, lowered, and the
#: longest chain in vertices and in round trips.
TALLY_FOLLOWED, TALLY_LOWERED, TALLY_LONGEST, TALLY_LONGEST_TRIPS = 0, 1, 2, 3
#: Edges of a followed vertex a lane relaxes per step (kernels.cuh SSSP_CHAIN_EDGE_BATCH): a step
#: is two dependent L2 round trips (the edges' loads, their atomics).
CHAIN_EDGE_BATCH = 2
#: What a push iteration costs without chains, in dependent L2 round trips: its grid barrier and the
#: chain near list -> word and range -> edges -> atomic -> claim -> append -> count. About 4.5 us a
#: grid sync on the H200 (bench/update_anatomy.py, luxembourg_osm, 8ac346d) at about 0.6 us a round
#: trip: the cost column's one constant, a guess when it was set. Measured since (H100, 170950f,
#: engines/sssp/cuda/chains.py), two hops against none with the appends on: the iteration counts
#: hold (roadNet-PA safe50k 84 -> 59, local10k 177 -> 105; modelled 83 -> 58, 173 -> 103) and so
#: does the cost column on roadNet-PA, whose fused engine region moved 1.23 -> 1.28 ms (1.04x) and
#: 1.12 -> 1.33 ms (1.19x) where it said 1.07 and 1.20; luxembourg_osm's whole update() moved
#: 0.91-0.97x where the column says 0.71 of the push's critical path (the whole call also holds the
#: apply and the fixed phases, which chains do not shorten).
ITERATION_ROUND_TRIPS = 8
#: The widest push group's shift (push.MAX_GROUP_SHIFT: the "group" expansion; 0 is "vertex").
MAX_SHIFT = 5
#: The H200's multiprocessors, the fused kernel's co-resident blocks per multiprocessor
#: (fused.cu SSSP_FUSED_MIN_BLOCKS) and threads per block (kernels.cuh SSSP_BLOCK): fused_threads.
H200_SMS = 132
H200_BLOCKS_PER_SM = 4
BLOCK_THREADS = 256


@dataclass(frozen=True)
class Start:
    """Where a near-far run starts: the distances (UNREACHED for the INF word) after the pull (an
    update) or compute()'s seed, the frontier, the graph's CSR and weights, and the run's delta
    and bound."""

    distances: np.ndarray
    frontier: np.ndarray
    row_ptr: np.ndarray
    col_ind: np.ndarray
    weight: np.ndarray
    source: int
    bound: int
    delta: int


@dataclass
class Counts:
    """One run of the model (the fields of the table)."""

    iterations: int = 0
    epochs: int = 0
    relaxations: int = 0
    pushed: int = 0
    followed: int = 0
    longest_chains: int = 0
    chain_round_trips: int = 0

    def add(self, other: "Counts") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


def _kernel():
    import numba as nb

    @nb.njit(cache=True)
    def lower(dist, x, nd, source, bound, threshold, in_far, pile, pile_count):
        """An offer of distance nd to x (push_edge's rule): (NOT_LOWERED, FAR: lowered to the
        threshold or above, onto the far pile on its in_far 0 -> 1 transition, or NEAR: lowered
        below it), and the pile's new length."""
        if x == source or nd > bound or nd >= dist[x]:
            return NOT_LOWERED, pile_count
        dist[x] = nd
        if nd < threshold:
            return NEAR, pile_count
        if not in_far[x]:
            in_far[x] = True
            pile[pile_count] = x
            pile_count += 1
        return FAR, pile_count

    @nb.njit(cache=True)
    def follow(dist, cur, dcur, hops, max_degree, row_ptr, col_ind, weight, source, bound, threshold,
               stamp, generation, in_far, listed, listed_count, pile, pile_count, tally):
        """kernels.cuh follow_chain from cur (lowered to dcur): (listed_count, pile_count); adds
        to ``tally`` (TALLY_*) the vertices it followed and lowered, and raises the iteration's
        longest chain in vertices and in round trips."""
        left = hops
        chain = 0
        lowered = 0
        trips = 0
        while True:
            if left == 0 or row_ptr[cur + 1] - row_ptr[cur] > max_degree:
                if stamp[cur] != generation:
                    stamp[cur] = generation
                    listed[listed_count] = cur
                    listed_count += 1
                break
            left -= 1
            chain += 1
            # the edge range, then a load and an atomic round per CHAIN_EDGE_BATCH edges
            width = row_ptr[cur + 1] - row_ptr[cur]
            trips += 1 + 2 * ((width + CHAIN_EDGE_BATCH - 1) // CHAIN_EDGE_BATCH)
            nxt = -1
            dnxt = 0
            for f in range(row_ptr[cur], row_ptr[cur + 1]):
                x = col_ind[f]
                ndx = dcur + weight[f]
                state, pile_count = lower(dist, x, ndx, source, bound, threshold, in_far, pile, pile_count)
                if state == NOT_LOWERED:
                    continue
                lowered += 1
                if state == FAR:
                    continue
                if nxt < 0:
                    nxt = x
                    dnxt = ndx
                elif stamp[x] != generation:
                    stamp[x] = generation
                    listed[listed_count] = x
                    listed_count += 1
            if nxt < 0:
                break
            cur = nxt
            dcur = dnxt
        tally[TALLY_FOLLOWED] += chain
        tally[TALLY_LOWERED] += lowered
        tally[TALLY_LONGEST] = max(tally[TALLY_LONGEST], chain)
        tally[TALLY_LONGEST_TRIPS] = max(tally[TALLY_LONGEST_TRIPS], trips)
        return listed_count, pile_count

    @nb.njit(cache=True)
    def run(dist, frontier, row_ptr, col_ind, weight, source, bound, delta, hops, max_degree,
            threads, max_shift):
        n = dist.size
        stamp = np.zeros(n, np.int64)
        in_far = np.zeros(n, np.bool_)
        near = np.empty(n + 1, np.int64)
        listed = np.empty(n + 1, np.int64)
        pile = np.empty(n + 1, np.int64)  # in_far keeps each vertex in it once
        lanes = max(threads, 1)
        kept_vertex = np.full(lanes, -1, np.int64)  # per lane: the vertex it keeps, or -1
        kept_distance = np.zeros(lanes, np.int64)
        kept_lane = np.empty(lanes, np.int64)  # the lanes that keep one, in the order they did
        kept_count = 0
        tally = np.zeros(4, np.int64)  # one iteration's chains (TALLY_*)
        generation = 1
        first = UNREACHED
        for v in frontier:
            first = min(first, dist[v])
        threshold = (0 if first == UNREACHED else first) + delta
        near_count = 0
        pile_count = 0
        for v in frontier:
            if dist[v] < threshold:
                if stamp[v] != generation:
                    stamp[v] = generation
                    near[near_count] = v
                    near_count += 1
            elif not in_far[v]:
                in_far[v] = True
                pile[pile_count] = v
                pile_count += 1
        iterations = epochs = relaxations = pushed = followed = longest_chains = chain_trips = 0
        while True:
            if near_count > 0:
                iterations += 1
                generation += 1
                pushed += near_count
                listed_count = 0
                tally[:] = 0
                # Lanes as the kernel has them (push_list; threads > 0): the group shift's rule,
                # lane t of group g = t >> shift takes items g, g + groups, ... and their edges lane,
                # lane + width, ...; it keeps the first vertex it lowers below the threshold and
                # follows it after every lane's share (one legal order), and only in lists short
                # enough for the widest group. threads 0: every such lowering is followed at once.
                chain_hops = hops
                width = groups = 1
                if threads > 0:
                    shift = max_shift
                    while shift > 0 and (near_count << shift) > threads:
                        shift -= 1
                    width = 1 << shift
                    groups = max(threads >> shift, 1)
                    chain_hops = hops if shift == max_shift else 0
                for t in range(kept_count):
                    kept_vertex[kept_lane[t]] = -1
                kept_count = 0
                for i in range(near_count):
                    u = near[i]
                    du = dist[u]
                    begin = row_ptr[u]
                    for e in range(begin, row_ptr[u + 1]):
                        w = col_ind[e]
                        nd = du + weight[e]
                        state, pile_count = lower(dist, w, nd, source, bound, threshold, in_far, pile,
                                                  pile_count)
                        relaxations += state != NOT_LOWERED
                        if state != NEAR:
                            continue
                        if threads == 0:
                            listed_count, pile_count = follow(
                                dist, w, nd, chain_hops, max_degree, row_ptr, col_ind, weight, source,
                                bound, threshold, stamp, generation, in_far, listed, listed_count, pile,
                                pile_count, tally)
                            continue
                        lane = (i % groups) * width + (e - begin) % width
                        if kept_vertex[lane] < 0:
                            kept_lane[kept_count] = lane
                            kept_count += 1
                            kept_vertex[lane] = w
                            kept_distance[lane] = nd
                        elif kept_vertex[lane] == w:
                            kept_distance[lane] = nd
                        elif stamp[w] != generation:
                            stamp[w] = generation
                            listed[listed_count] = w
                            listed_count += 1
                for t in range(kept_count):  # the lanes' kept vertices (none when threads is 0)
                    lane = kept_lane[t]
                    listed_count, pile_count = follow(
                        dist, kept_vertex[lane], kept_distance[lane], chain_hops, max_degree, row_ptr,
                        col_ind, weight, source, bound, threshold, stamp, generation, in_far, listed,
                        listed_count, pile, pile_count, tally)
                relaxations += tally[TALLY_LOWERED]
                followed += tally[TALLY_FOLLOWED]
                longest_chains += tally[TALLY_LONGEST]
                chain_trips += tally[TALLY_LONGEST_TRIPS]
                for i in range(listed_count):
                    near[i] = listed[i]
                near_count = listed_count
                continue
            if pile_count == 0:
                break
            epochs += 1  # raise the threshold past the pile (algorithm.md §5.9 (c))
            smallest = UNREACHED
            for i in range(pile_count):
                smallest = min(smallest, dist[pile[i]])
            threshold = max(threshold, smallest) + delta
            generation += 1
            kept = 0
            for i in range(pile_count):
                v = pile[i]
                if dist[v] < threshold:
                    in_far[v] = False
                    if stamp[v] != generation:
                        stamp[v] = generation
                        near[near_count] = v
                        near_count += 1
                else:
                    pile[kept] = v
                    kept += 1
            pile_count = kept
        return iterations, epochs, relaxations, pushed, followed, longest_chains, chain_trips

    return run


_RUN = None


def simulate(start: Start, hops: int, max_degree: int = DEFAULT_MAX_DEGREE, *, threads: int = 0,
             max_shift: int = MAX_SHIFT) -> tuple[Counts, np.ndarray]:
    """One near-far run from ``start`` with chains of ``hops`` vertices (0: none): its counts and
    final distances (``start`` is not changed). ``threads`` > 0: the kernel's lanes (a push over
    that many threads, groups up to 2^``max_shift`` lanes, one kept vertex per lane, chains after
    every share); 0: every lowering below the threshold starts its own chain at once (the most the
    chains can save)."""
    global _RUN
    if hops < 0 or max_degree < 1 or threads < 0 or not 0 <= max_shift <= MAX_SHIFT:
        raise ValueError(f"hops {hops} and threads {threads} must be >= 0, max_degree {max_degree} >= 1, "
                         f"max_shift {max_shift} in [0, {MAX_SHIFT}]")
    if _RUN is None:
        _RUN = _kernel()
    dist = start.distances.astype(np.int64, copy=True)
    counts = _RUN(dist, start.frontier.astype(np.int64), start.row_ptr.astype(np.int64),
                  start.col_ind.astype(np.int64), start.weight.astype(np.int64), int(start.source),
                  int(start.bound), max(int(start.delta), 1), int(hops), int(max_degree), int(threads),
                  int(max_shift))
    return Counts(*(int(c) for c in counts)), dist


def fused_threads(num_vertices: int) -> int:
    """The threads of the fused engine's push on an H200 (fused.work_blocks: one block per
    VERTICES_PER_BLOCK vertices, at least one per multiprocessor, at most the co-resident ones)."""
    from engines.sssp.cuda import fused

    blocks = fused.work_blocks(num_vertices, H200_SMS * H200_BLOCKS_PER_SM, H200_SMS)
    return blocks * BLOCK_THREADS


def _distances_of(words: np.ndarray, bits: int) -> np.ndarray:
    inf = words == np.uint64(2**64 - 1)
    return np.where(inf, UNREACHED, (words >> np.uint64(bits)).astype(np.int64))


@contextlib.contextmanager
def captured_starts():
    """The host reference's near-far starts while the block runs: a list that fills with one
    Start per propagation (the host engine's NumPy schedule is chosen meanwhile, whose entry point
    receives exactly the words and frontier it starts from; the Numba heap receives the same)."""
    from engines.sssp import host

    starts: list[Start] = []
    propagate, choice = host.propagate_near_far, host.PROPAGATION

    def capture(words, frontier, row_ptr, col_ind, weight, source, packing, delta):
        starts.append(Start(_distances_of(words, packing.bits), np.array(frontier, dtype=np.int64),
                            row_ptr, col_ind, weight, int(source), int(packing.bound), int(delta)))
        return propagate(words, frontier, row_ptr, col_ind, weight, source, packing, delta)

    host.propagate_near_far, host.PROPAGATION = capture, "numpy"
    try:
        yield starts
    finally:
        host.propagate_near_far, host.PROPAGATION = propagate, choice


def model(starts, hops_list, max_degree: int = DEFAULT_MAX_DEGREE, *, threads: int = 0,
          max_shift: int = MAX_SHIFT) -> tuple[dict, dict, bool]:
    """Every start run under each hops setting (``simulate``'s lanes): ``({hops: Counts summed over
    the starts}, {hops: each run's push iterations}, whether every setting ended with the
    chain-free run's distances)``."""
    totals = {h: Counts() for h in hops_list}
    iterations = {h: [] for h in hops_list}
    same = True
    for start in starts:
        reference = None
        for h in hops_list:
            counts, dist = simulate(start, h, max_degree, threads=threads, max_shift=max_shift)
            totals[h].add(counts)
            iterations[h].append(counts.iterations)
            if reference is None:
                reference = simulate(start, 0, max_degree)[1] if h else dist
            same = same and bool(np.array_equal(dist, reference))
    return totals, iterations, same


# -- the command ---------------------------------------------------------------------------------
def _starts_for(args) -> list[Start]:
    from engines import sssp

    if args.stream:
        from bench import stream as stream_mod

        data = stream_mod.load_input(graph=args.graph, data_dir=args.data_dir, cache_dir=args.cache_dir,
                                     progress=False)
        batches = stream_mod.stream_batches(data.num_vertices, data.arc_sources(), data.col_ind,
                                            data.weights.shape[1], count=args.stream,
                                            size=args.batch_size, seed=args.seed)
        graph, result = stream_mod.open_engine("host", data, 0)
        with captured_starts() as starts:
            for item in batches:
                sssp.update(graph, item.batch, result)
        return starts
    from bench.prepare import prepare_gate

    prepared = prepare_gate(args.graph, data_dir=args.data_dir, cache_dir=args.cache_dir, progress=False,
                            with_batches=args.batch is not None)
    if args.compute:
        with captured_starts() as starts:
            sssp.compute(prepared.graph, prepared.source, backend="host")
        return starts
    if args.batch not in prepared.batches:
        raise UsageError(f"--batch {args.batch}: {args.graph} has no such batch "
                         f"(it has {', '.join(sorted(prepared.batches))})")
    distances, parents = prepared.trees[0]
    result = sssp.Result.from_arrays(prepared.graph, prepared.source, distances.copy(), parents.copy(),
                                     backend="host")
    with captured_starts() as starts:
        sssp.update(prepared.graph, prepared.batches[args.batch].batch, result)
    return starts


def cost(counts: Counts) -> int:
    """The push iterations' critical path in dependent L2 round trips: ITERATION_ROUND_TRIPS an
    iteration, plus each iteration's longest chain (a model, with one guessed constant)."""
    return counts.iterations * ITERATION_ROUND_TRIPS + counts.chain_round_trips


def table(totals: dict, iterations: dict, runs: int) -> str:
    """The counts per run (the mean over the starts; the push iterations' median too, what
    bench/update_anatomy.py prints of a GPU stream), one row per hops setting; the last column is
    ``cost`` against the first row's."""
    head = f"{'hops':>5} {'iterations':>11} {'median':>7} {'epochs':>7} {'relaxations':>12} " \
           f"{'pushed':>10} {'followed':>10} {'longest chains':>15} {'chain trips':>12} {'cost':>6}"
    rows = [head]
    base = None
    for h, c in totals.items():
        k = max(runs, 1)
        median = float(np.median(iterations[h])) if iterations[h] else 0.0
        base = cost(c) if base is None else base
        rows.append(f"{h:>5} {c.iterations / k:>11.1f} {median:>7.1f} {c.epochs / k:>7.1f} "
                    f"{c.relaxations / k:>12.0f} {c.pushed / k:>10.0f} {c.followed / k:>10.0f} "
                    f"{c.longest_chains / k:>15.1f} {c.chain_round_trips / k:>12.1f} "
                    f"{cost(c) / max(base, 1):>6.2f}")
    return "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="chain_model.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", required=True, help="a gate (bench/gates.py), e.g. luxembourg_osm, roadNet-PA")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--stream", type=int, metavar="N", help="N batches of bench/stream.py's random mix")
    what.add_argument("--batch", metavar="NAME", help="one of the gate's batches (safe50k, unsafe50k, local10k)")
    what.add_argument("--compute", action="store_true", help="compute() from the gate's source")
    ap.add_argument("--batch-size", type=int, default=100, help="changes per stream batch (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="the stream's seed (default 1)")
    ap.add_argument("--hops", type=int, nargs="+", default=list(DEFAULT_HOPS),
                    help=f"ENGINES_PUSH_CHAIN settings (default {' '.join(map(str, DEFAULT_HOPS))})")
    ap.add_argument("--max-degree", type=int, default=DEFAULT_MAX_DEGREE,
                    help=f"ENGINES_PUSH_CHAIN_DEGREE (default {DEFAULT_MAX_DEGREE})")
    ap.add_argument("--threads", type=int, default=None,
                    help="the push's threads, each lane keeping one vertex as the kernel does (default: "
                         "the fused engine's grid on an H200 for the graph); 0: every lowering starts "
                         "its own chain (the most chains can save)")
    ap.add_argument("--max-shift", type=int, default=MAX_SHIFT,
                    help=f"the widest group of lanes per vertex, as a shift (default {MAX_SHIFT}, the "
                         "\"group\" expansion; 0: \"vertex\")")
    ap.add_argument("--json", type=Path, help="also write the counts here")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--cache-dir", type=Path, default=None)
    return ap


def main(argv=None) -> int:
    return run_command(lambda: _main(argv), prefix="chain_model.py: ")


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    if any(h < 0 for h in args.hops) or args.max_degree < 1 or (args.stream is not None and args.stream < 1):
        raise UsageError("--hops must be >= 0, --max-degree and --stream >= 1")
    if (args.threads is not None and args.threads < 0) or not 0 <= args.max_shift <= MAX_SHIFT:
        raise UsageError(f"--threads must be >= 0 and --max-shift in [0, {MAX_SHIFT}]")
    if args.stream and (args.batch_size < 4 or args.batch_size % 4):
        raise UsageError("--batch-size must be a positive multiple of 4 (bench/stream.py)")
    if args.json:
        from protocol.records import writable_folder

        # before the model runs: a file that cannot be written costs nothing
        writable_folder(Path(args.json).parent, f"--json {args.json}")
    hops = list(dict.fromkeys([0] + args.hops))  # the chain-free run first: the reference
    starts = _starts_for(args)
    threads = args.threads
    if threads is None:
        threads = fused_threads(starts[0].distances.size) if starts else 0
    totals, iterations, same = model(starts, hops, args.max_degree, threads=threads,
                                     max_shift=args.max_shift)
    what = f"{args.stream} stream batches of {args.batch_size}" if args.stream else (
        "compute()" if args.compute else f"batch {args.batch}")
    lanes = (f"{threads:,} threads, groups up to {1 << args.max_shift} lanes" if threads
             else "every lowering its own chain")
    print(f"{args.graph}, {what}: {len(starts)} near-far runs, max_degree {args.max_degree}, {lanes}, "
          "per run:")
    print(table(totals, iterations, len(starts)))
    print("every setting ends with the chain-free distances" if same else
          "DEFECT: a setting ended with other distances than the chain-free run")
    if args.json:
        from protocol.records import write_or_say

        record = {"graph": args.graph, "what": what, "runs": len(starts), "max_degree": args.max_degree,
                  "threads": threads, "max_shift": args.max_shift, "same_distances": same,
                  "counts": {str(h): asdict(c) for h, c in totals.items()},
                  "iterations": {str(h): v for h, v in iterations.items()}}
        # the table is printed above: a failed write is one line and its status (a defect's first)
        failed = write_or_say("chain_model.py", [(args.json, record)], wrong_answer=not same)
        if failed is not None:
            return int(failed)
    return int(ExitCode.OK if same else ExitCode.CORRECTNESS)


if __name__ == "__main__":
    sys.exit(main())
