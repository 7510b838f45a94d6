// The CUDA operators engine: one kernel per phase, driven by the host loop of operators.py
// (algorithm.md §5 [ops], §6, §10; ADR 0026 item 1).
//
// The semantics are the fused engine's, phase by phase; only the barriers differ: a grid barrier
// of the fused kernel is a kernel boundary here, and the decisions that need no host value
// (pointer-jumping early exit, the near-far threshold, the first frontier length) are taken on the
// device through the control block. None of MP1's simplifications (§14): every pointer-jumping
// round is enqueued and a vertex still jumping in the last one is a parent cycle, candidates above
// the bound are never packed, distance-only words recover their parents, and the unpack of an
// update writes only changed entries and counts them.
//
// Every kernel is grid-stride over blocks of SSSP_BLOCK threads (the host caps the grid, §10.2);
// one-thread kernels are launched as one block of one thread. Full-mask warp collectives are
// called by every lane, after the grid-stride loop.
//
// Template parameters: V is the vertex type (counters have its width), O the edge-offset type.
// Every kernel takes both, even where O is unused, so that runtime.py instantiates every kernel
// of the module at every (vertex, offset) pair the same way.

#include "kernels.cuh"

// Blocks per SM the device loop's grid holds (operators.py LOOP_BLOCKS_PER_SM): ops_loop is
// compiled for that residency, which also keeps ptxas from capping its registers so low that it
// spills (with the block size alone it spilled at 40 registers).
#define SSSP_LOOP_MIN_BLOCKS 2

namespace sssp {
namespace ops {

// Packing from the two kernel arguments every word-handling kernel receives.
__device__ __forceinline__ Packing make_packing(u32 bits, u64 no_parent) {
    Packing k;
    k.bits = bits;
    k.no_parent = no_parent;
    return k;
}

}  // namespace ops
}  // namespace sssp

// The kernels live at global scope so that CuPy's name expressions (runtime.instantiation_name,
// e.g. "ops_push<int, long long>") find them, as the fused engine's; the building blocks come
// from namespace sssp.
using namespace sssp;

// The phases of the operators engine's device-driven loop (OperatorsControl::phase), in the
// order of §5.8-5.9: an update's pull, the frontier's minimum (and first threshold) and split,
// then push iterations and epochs (minimum and threshold raise, re-split). A zeroed control block
// is done, so a stray launch does nothing.
enum LoopPhase : i32 {
    LOOP_DONE = 0,
    LOOP_PUSH = 1,
    LOOP_MIN = 2,
    LOOP_SPLIT = 3,
    LOOP_PULL = 4,
    LOOP_FIRST_MIN = 5,
    LOOP_FIRST_SPLIT = 6,
};

// The device-driven loop's state at its start: slots 0, counters 0, the run's generation base.
template <typename V>
__device__ __forceinline__ void reset_loop(OperatorsControl<V>* ctl, i32 generation) {
    ctl->phase = LOOP_DONE;
    ctl->loop_done_blocks = 0;
    ctl->loop_fault = 0;
    ctl->near_slot = 0;
    ctl->far_slot = 0;
    ctl->generation = generation;
    ctl->iterations = 0;
    ctl->epochs = 0;
    ctl->step_count = 0;
    ctl->pushes = 0;
}

// Every field zero, minimum empty, and the frontier count given (1 for compute(): the source).
template <typename V>
__device__ __forceinline__ void reset_control(OperatorsControl<V>* ctl, V frontier) {
    ctl->minimum = EMPTY_MIN;
    ctl->threshold = 0;
    ctl->affected = 0;
    ctl->candidates = 0;
    ctl->frontier = frontier;
    ctl->near[0] = 0;
    ctl->near[1] = 0;
    ctl->far[0] = 0;
    ctl->far[1] = 0;
    ctl->invalidated = 0;
    ctl->overflow = 0;
    for (int r = 0; r < 65; ++r) ctl->active[r] = 0;
    reset_loop(ctl, 0);
}

// ---------------------------------------------------------------------------------------------
// Control-block initialization (§5.2 [ops]): zero every field, minimum = empty.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK) ops_control_init(OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    reset_control(ctl, V(0));
}

// ---------------------------------------------------------------------------------------------
// Pack the old tree (§5.3) and initialize the pointer-jumping ancestors with the input parents.
// An input distance below INF/2 that is negative or above the bound is invalid_input: it sets
// ctl->overflow (read at sync #1) and its word becomes INF; work in flight is not stopped.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pack(V n, const i64* __restrict__ distances, const V* __restrict__ parents,
             u64* __restrict__ words, V* __restrict__ ancestor, u64 bound, u32 bits,
             u64 no_parent, OperatorsControl<V>* ctl) {
    const Packing k = sssp::ops::make_packing(bits, no_parent);
    const GridStride g;
    bool overflow = false;
    for (i64 v = g.first; v < n; v += g.stride) {
        const i64 d = distances[v];
        const V p = parents[v];
        u64 word = INF_WORD;
        if (d < INF_HALF) {
            if (d < 0 || static_cast<u64>(d) > bound) {
                overflow = true;
            } else {
                word = pack(k, static_cast<u64>(d), static_cast<i64>(p));
            }
        }
        words[v] = word;
        ancestor[v] = p;
    }
    if (overflow) ctl->overflow = 1;
}

// ---------------------------------------------------------------------------------------------
// Roots (§5.4): the heads of changed edges that are tree edges of the input parents as given.
// Launched only when the batch could change an edge; the count itself is the device's (the apply
// knows the weight increases).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_roots(const V* __restrict__ changed_count, const V* __restrict__ changed_from,
              const V* __restrict__ changed_to, const V* __restrict__ parents, i32* __restrict__ flag) {
    const V num_changed = *changed_count;
    const GridStride g;
    for (i64 i = g.first; i < num_changed; i += g.stride) {
        const V to = changed_to[i];
        if (parents[to] == changed_from[i]) flag[to] = 1;
    }
}

// ---------------------------------------------------------------------------------------------
// One pointer-jumping round (§5.5). The host enqueues rounds 0 .. R without waiting; a round
// after one in which no vertex jumped returns at once (a uniform decision: the previous launch
// has finished), so the device stops exactly where the fused kernel does. Each round reports its
// own activity in ctl->active[round]; activity in round R is a parent cycle (checked at sync #1).
// With an empty changed list (known on the device only) round 0 returns at once, and so every
// later round: no pointer jumping, as §5.5 requires.
// Ancestors and flags are written by other blocks of the same launch: coherent loads.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pointer_jump(V n, i32 round, const V* __restrict__ changed_count, V* __restrict__ ancestor,
                     i32* __restrict__ flag, OperatorsControl<V>* ctl) {
    if (round == 0 && *changed_count == 0) return;
    if (round > 0 && load_cg(&ctl->active[round - 1]) == 0) return;
    const GridStride g;
    bool jumping = false;
    for (i64 v = g.first; v < n; v += g.stride) {
        const V a = load_cg(ancestor + v);
        if (a < 0 || load_cg(flag + v) != 0) continue;
        if (load_cg(flag + a) != 0) {
            flag[v] = 1;
            continue;
        }
        const V next = load_cg(ancestor + a);
        ancestor[v] = next;
        jumping = jumping || next >= 0;
    }
    if (__any_sync(SSSP_FULL_MASK, jumping) && lane_id() == 0) ctl->active[round] = 1;
}

// ---------------------------------------------------------------------------------------------
// Invalidate (§5.6): every flagged vertex gets the INF word, the invalidation generation and a
// candidates slot; its flag is cleared for the next run. `invalidated` is this exact count, summed
// per warp, never the candidates counter (which the heads kernel keeps incrementing).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_invalidate(V n, i32* __restrict__ flag, u64* __restrict__ words, i32* __restrict__ stamp,
                   i32 generation, V* __restrict__ candidates, OperatorsControl<V>* ctl) {
    const GridStride g;
    V local = 0;
    for (i64 v = g.first; v < n; v += g.stride) {
        if (flag[v] != 0) {
            flag[v] = 0;
            words[v] = INF_WORD;
            stamp[v] = generation;
            candidates[append(&ctl->candidates)] = static_cast<V>(v);
            ++local;
        }
    }
    warp_sum_into(local, &ctl->invalidated);
}

// ---------------------------------------------------------------------------------------------
// Insertion heads (§5.7), with the invalidation's generation: a just-invalidated head is not
// listed twice, duplicates once, the source never. Launched only when the head list is non-empty.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_heads(V num_heads, const V* __restrict__ heads, V source, i32* __restrict__ stamp,
              i32 generation, V* __restrict__ candidates, OperatorsControl<V>* ctl) {
    const GridStride g;
    for (i64 i = g.first; i < num_heads; i += g.stride) {
        const V v = heads[i];
        if (v != source && claim(stamp, v, generation)) {
            candidates[append(&ctl->candidates)] = v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pull (§5.8): each candidate takes the key-minimum of its own word and every in-neighbour offer
// (u's current distance + w, parent u), dropping offers above the bound. A strictly smaller
// distance lists it in the frontier, once per pull generation. The candidate count comes by value
// (the host read it at sync #1). Words of other candidates may be lowered concurrently: coherent
// loads; the result does not depend on it (§5.12).
template <typename V, typename O>
__device__ __forceinline__ void pull_phase(V count, const V* __restrict__ candidates,
                                           const CsrView<V, O>& in, u64* __restrict__ words,
                                           u64 bound, const Packing k, i32* __restrict__ stamp,
                                           i32 generation, V* __restrict__ frontier,
                                           OperatorsControl<V>* ctl) {
    const GridStride g;
    for (i64 i = g.first; i < count; i += g.stride) {
        const V v = candidates[i];
        const u64 current = load_cg(words + v);
        u64 best = current;
        const O end = in.end(v);
        for (O e = in.begin(v); e < end; ++e) {
            const V u = in.neighbour(e);
            const u64 x = load_cg(words + u);
            if (x == INF_WORD) continue;
            const u64 nd = (x >> k.bits) + in.weight_of(e);
            if (nd > bound) continue;
            const u64 offer = pack(k, nd, static_cast<i64>(u));
            if (offer < best) best = offer;
        }
        if (best < current) {
            const u64 old = atomicMin(words + v, best);
            if (word_distance(k, best) < word_distance(k, old) && claim(stamp, v, generation)) {
                frontier[append(&ctl->frontier)] = v;
            }
        }
    }
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pull(V count, const V* __restrict__ candidates, const O* __restrict__ in_ptr,
             const V* __restrict__ in_src, const i32* __restrict__ in_weight,
             u64* __restrict__ words, u64 bound, u32 bits, u64 no_parent, i32* __restrict__ stamp,
             i32 generation, V* __restrict__ frontier, OperatorsControl<V>* ctl) {
    const CsrView<V, O> in{in_ptr, in_src, in_weight};
    pull_phase<V, O>(count, candidates, in, words, bound, sssp::ops::make_packing(bits, no_parent),
                     stamp, generation, frontier, ctl);
}

// ---------------------------------------------------------------------------------------------
// Minimum distance over the finite words of a list (§5.9 (a) and the epoch minimum) into
// ctl->minimum. The first minimum reads the list length from ctl->frontier (`from_frontier`; the
// frontier length stays on the device); an epoch's minimum gets the pile size by value.
template <typename V>
__device__ __forceinline__ void min_phase(V length, const V* __restrict__ list,
                                          const u64* __restrict__ words, u32 bits,
                                          OperatorsControl<V>* ctl) {
    const GridStride g;
    u64 minimum = EMPTY_MIN;
    for (i64 i = g.first; i < length; i += g.stride) {
        const u64 x = load_cg(words + list[i]);
        if (x == INF_WORD) continue;
        const u64 d = x >> bits;
        if (d < minimum) minimum = d;
    }
    warp_min_into(minimum, &ctl->minimum);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_min(V count, i32 from_frontier, const V* __restrict__ list, const u64* __restrict__ words,
            u32 bits, OperatorsControl<V>* ctl) {
    min_phase<V>(from_frontier != 0 ? load_cg(&ctl->frontier) : count, list, words, bits, ctl);
}

// ---------------------------------------------------------------------------------------------
// The near-far threshold, one thread (§5.9). First mode: (minimum, or 0 when empty) + delta.
// Raise mode: max(threshold, minimum) + delta. Both reset the minimum slot to empty for the next
// minimum kernel. In raise mode the minimum is over the far pile, always finite (§5.9 "Progress").
template <typename V>
__device__ __forceinline__ void threshold_phase(i32 raise, u64 delta, OperatorsControl<V>* ctl) {
    const u64 minimum = load_cg(&ctl->minimum);
    const u64 threshold = load_cg(&ctl->threshold);
    if (raise != 0) {
        const u64 base = minimum == EMPTY_MIN || minimum < threshold ? threshold : minimum;
        ctl->threshold = base + delta;
    } else {
        ctl->threshold = (minimum == EMPTY_MIN ? 0ull : minimum) + delta;
    }
    ctl->minimum = EMPTY_MIN;
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_threshold(i32 raise, u64 delta, OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    threshold_phase<V>(raise, delta, ctl);
}

// ---------------------------------------------------------------------------------------------
// The first split (§5.9 (b)): frontier entries below the threshold go to near list 0 (claimed
// with a fresh generation), the others to far pile 0 on their in_far 0 -> 1 transition. The
// frontier length is read from the control block.
template <typename V>
__device__ __forceinline__ void split_frontier_phase(V length, const V* __restrict__ frontier,
                                                     const u64* __restrict__ words,
                                                     const Packing k, i32* __restrict__ stamp,
                                                     i32 generation, i32* __restrict__ in_far,
                                                     V* __restrict__ near_list,
                                                     V* __restrict__ far_list,
                                                     OperatorsControl<V>* ctl) {
    const u64 threshold = load_cg(&ctl->threshold);
    const GridStride g;
    for (i64 i = g.first; i < length; i += g.stride) {
        const V v = frontier[i];
        const u64 d = word_distance(k, load_cg(words + v));
        if (d < threshold) {
            if (claim(stamp, v, generation)) near_list[append(&ctl->near[0])] = v;
        } else if (atomicExch(in_far + v, 1) == 0) {
            far_list[append(&ctl->far[0])] = v;
        }
    }
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_split_frontier(const V* __restrict__ frontier, const u64* __restrict__ words, u32 bits,
                       u64 no_parent, i32* __restrict__ stamp, i32 generation,
                       i32* __restrict__ in_far, V* __restrict__ near_list,
                       V* __restrict__ far_list, OperatorsControl<V>* ctl) {
    split_frontier_phase<V>(load_cg(&ctl->frontier), frontier, words,
                            sssp::ops::make_packing(bits, no_parent), stamp, generation, in_far,
                            near_list, far_list, ctl);
}

// ---------------------------------------------------------------------------------------------
// An epoch's re-split of the far pile (§5.9 (c)), after the threshold was raised: entries now
// below the threshold leave the pile (in_far cleared) for near list `near_slot`, which is empty;
// the others stay, copied to pile 1 - far_slot. The pile size comes by value, so thread 0 may zero
// far[far_slot], the pile being read, for its next use.
template <typename V>
__device__ __forceinline__ void split_pile_phase(V count, const V* __restrict__ pile,
                                                 const u64* __restrict__ words, u32 bits,
                                                 u64 no_parent, i32* __restrict__ stamp,
                                                 i32 generation, i32* __restrict__ in_far,
                                                 V* __restrict__ near_list, V* __restrict__ kept_pile,
                                                 i32 near_slot, i32 far_slot,
                                                 OperatorsControl<V>* ctl) {
    const Packing k = sssp::ops::make_packing(bits, no_parent);
    const u64 threshold = load_cg(&ctl->threshold);
    const GridStride g;
    if (g.first == 0) ctl->far[far_slot] = 0;
    for (i64 i = g.first; i < count; i += g.stride) {
        const V v = pile[i];
        const u64 d = word_distance(k, load_cg(words + v));
        if (d < threshold) {
            in_far[v] = 0;
            if (claim(stamp, v, generation)) near_list[append(&ctl->near[near_slot])] = v;
        } else {
            kept_pile[append(&ctl->far[1 - far_slot])] = v;
        }
    }
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_split_pile(V count, const V* __restrict__ pile, const u64* __restrict__ words, u32 bits,
                   u64 no_parent, i32* __restrict__ stamp, i32 generation, i32* __restrict__ in_far,
                   V* __restrict__ near_list, V* __restrict__ kept_pile, i32 near_slot,
                   i32 far_slot, OperatorsControl<V>* ctl) {
    split_pile_phase<V>(count, pile, words, bits, no_parent, stamp, generation, in_far, near_list,
                        kept_pile, near_slot, far_slot, ctl);
}

// ---------------------------------------------------------------------------------------------
// One push iteration (§5.9 (c)): every near vertex offers (its distance + w, itself) to each
// out-neighbour except the source, dropping offers above the bound. A thread that lowers a
// neighbour's distance queues it: near list 1 - near_slot (claimed with this iteration's
// generation) below the threshold, else the far pile far_slot on its in_far 0 -> 1 transition.
// The near count comes by value, so thread 0 zeroes near[near_slot] for the iteration after next.
template <typename V, typename O>
__device__ __forceinline__ void push_phase(V count, const V* __restrict__ near_list,
                                           const CsrView<V, O>& out, u64* __restrict__ words,
                                           V source, u64 bound, const Packing& k,
                                           i32* __restrict__ stamp, i32 generation,
                                           i32* __restrict__ in_far, V* __restrict__ next_list,
                                           V* __restrict__ far_list, i32 near_slot, i32 far_slot,
                                           OperatorsControl<V>* ctl) {
    const u64 threshold = load_cg(&ctl->threshold);
    const GridStride g;
    if (g.first == 0) ctl->near[near_slot] = 0;
    for (i64 i = g.first; i < count; i += g.stride) {
        push_vertex<V, O>(out, k, near_list[i], source, bound, threshold, generation, words, stamp,
                          in_far, next_list, &ctl->near[1 - near_slot], far_list, &ctl->far[far_slot]);
    }
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_push(V count, const V* __restrict__ near_list, const O* __restrict__ out_ptr,
             const V* __restrict__ out_dst, const i32* __restrict__ out_weight,
             u64* __restrict__ words, V source, u64 bound, u32 bits, u64 no_parent,
             i32* __restrict__ stamp, i32 generation, i32* __restrict__ in_far,
             V* __restrict__ next_list, V* __restrict__ far_list, i32 near_slot, i32 far_slot,
             OperatorsControl<V>* ctl) {
    const CsrView<V, O> out{out_ptr, out_dst, out_weight};
    push_phase<V, O>(count, near_list, out, words, source, bound, sssp::ops::make_packing(bits, no_parent),
                     stamp, generation, in_far, next_list, far_list, near_slot, far_slot, ctl);
}

// ---------------------------------------------------------------------------------------------
// The device-driven loop (operators_loop "device"): everything the host loop launches after
// sync #1 (an update's pull, the frontier's minimum, threshold and split, then the push
// iterations and epochs), with the loop state and the run's constants in the control block, so
// that one launch of ops_loop, with the same arguments every time, is one phase: the pull, a
// minimum, a split or a push iteration. Its last block to finish decides the next phase (§5.9:
// push while the near list is non-empty, else an epoch while the far pile is, else done), so the
// host replays S captured launches and reads the control block back once per replay; launches
// after the end return at once. The decisions read the same counts, in the same order, as the
// host loop's, so the phases, lists and thresholds are the host loop's.

// The loop at its start, after the first split, with the run's constants.
template <typename V>
__device__ __forceinline__ void start_loop(OperatorsControl<V>* ctl, i32 generation, u64 delta,
                                           u64 bound, u32 bits, u64 no_parent, V source, V n) {
    reset_loop(ctl, generation);
    ctl->loop_delta = delta;
    ctl->loop_bound = bound;
    ctl->loop_no_parent = no_parent;
    ctl->loop_bits = bits;
    ctl->loop_source = source;
    ctl->loop_n = n;
}


// Whether this block is the last of the launch to finish (then every other block's atomics on
// the control block and the words are visible to it), as a grid barrier's arrival: the block's
// threads meet, thread 0 fences and counts the block in. Called by every thread of every block.
template <typename V>
__device__ __forceinline__ bool last_block_done(OperatorsControl<V>* ctl) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(&ctl->loop_done_blocks, 1) == static_cast<i32>(gridDim.x) - 1;
        if (last) {
            __threadfence();
            ctl->loop_done_blocks = 0;  // for the next launch (a kernel boundary orders it)
        }
    }
    __syncthreads();
    return last;
}

// A list count outside [0, n] stops the loop with loop_fault set (the host raises); true then.
template <typename V>
__device__ __forceinline__ bool list_fault(OperatorsControl<V>* ctl, V count) {
    if (count >= 0 && count <= ctl->loop_n) return false;
    ctl->loop_fault = 1;
    ctl->phase = LOOP_DONE;
    ctl->step_count = 0;
    return true;
}

// The next phase reads a list of `count` entries (checked).
template <typename V>
__device__ __forceinline__ void begin_phase(OperatorsControl<V>* ctl, i32 phase, V count) {
    if (list_fault(ctl, count)) return;
    ctl->phase = phase;
    ctl->step_count = count;
}

// The next phase from the current near list and far pile (one thread; every block of the phase
// that filled them has finished): a push of the near list, else an epoch over the pile, else
// done. Both counts are checked, as the host loop checks both. A push takes a fresh generation
// (it claims vertices; an epoch's re-split takes its own after the minimum).
template <typename V>
__device__ __forceinline__ void decide_next(OperatorsControl<V>* ctl) {
    const V near = load_cg(&ctl->near[ctl->near_slot]);
    const V far = load_cg(&ctl->far[ctl->far_slot]);
    if (list_fault(ctl, near) || list_fault(ctl, far)) return;
    if (near > 0) {
        ctl->iterations += 1;
        ctl->pushes += static_cast<i64>(near);
        ctl->generation += 1;
        begin_phase(ctl, LOOP_PUSH, near);
    } else if (far > 0) {
        ctl->epochs += 1;
        begin_phase(ctl, LOOP_MIN, far);
    } else {
        begin_phase(ctl, LOOP_DONE, V(0));
    }
}

// Start of the loop, one thread: state and constants, then the first phase: an update's pull
// over the candidates (LOOP_PULL), or compute()'s minimum over the one-entry frontier.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_loop_init(i32 start, i32 generation, u64 delta, u64 bound, u32 bits, u64 no_parent,
                  V source, V n, OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    start_loop(ctl, generation, delta, bound, bits, no_parent, source, n);
    if (start == LOOP_PULL) {
        ctl->generation += 1;  // the pull claims frontier entries
        begin_phase(ctl, LOOP_PULL, load_cg(&ctl->candidates));
    } else {
        begin_phase(ctl, LOOP_FIRST_MIN, load_cg(&ctl->frontier));
    }
}

// Restart the generations at 1 after the host zeroed the stamps (a run that would pass
// workspace.GENERATION_LIMIT; claims compare stamps only with the current generation). Between
// two replays the next phase may already hold its generation (a push or split decided by the
// last block): it now claims with 1, which no zeroed stamp equals; 0 would claim nothing.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK) ops_loop_rebase(OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    ctl->generation = 1;
}

// After the last block of a phase finished (one thread): the next phase. The phase and slots are
// re-read from the block (only this thread writes them, and only here) rather than kept live
// through the phase bodies.
template <typename V>
__device__ __forceinline__ void finish_phase(OperatorsControl<V>* ctl) {
    const i32 phase = ctl->phase;
    switch (phase) {
        case LOOP_PULL:  // the frontier is complete
            begin_phase(ctl, LOOP_FIRST_MIN, load_cg(&ctl->frontier));
            return;
        case LOOP_FIRST_MIN:  // the frontier's minimum is complete: the first threshold
            threshold_phase<V>(0, ctl->loop_delta, ctl);
            ctl->generation += 1;
            ctl->phase = LOOP_FIRST_SPLIT;
            return;
        case LOOP_MIN:  // the pile's minimum is complete: raise the threshold, then re-split
            threshold_phase<V>(1, ctl->loop_delta, ctl);
            ctl->generation += 1;
            ctl->phase = LOOP_SPLIT;
            return;
        case LOOP_PUSH:
            ctl->near_slot = 1 - ctl->near_slot;  // the list just filled
            break;
        case LOOP_SPLIT:
            ctl->far_slot = 1 - ctl->far_slot;  // the pile just kept
            break;
        default:  // LOOP_FIRST_SPLIT: near list 0 and far pile 0 are filled
            break;
    }
    decide_next(ctl);
}

// One phase of the loop, the one ctl->phase names (uniform: written before this launch). The
// near lists and far piles come as both buffers of each pair; the slots pick them.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_LOOP_MIN_BLOCKS)
    ops_loop(V* __restrict__ near_a, V* __restrict__ near_b, V* __restrict__ far_a,
             V* __restrict__ far_b, const O* __restrict__ out_ptr, const V* __restrict__ out_dst,
             const i32* __restrict__ out_weight, const V* __restrict__ candidates,
             const O* __restrict__ in_ptr, const V* __restrict__ in_src,
             const i32* __restrict__ in_weight, V* __restrict__ frontier, u64* __restrict__ words,
             i32* __restrict__ stamp, i32* __restrict__ in_far, OperatorsControl<V>* ctl) {
    const i32 phase = ctl->phase;
    if (phase == LOOP_DONE) return;
    const i32 near_slot = ctl->near_slot;
    const i32 far_slot = ctl->far_slot;
    const V count = ctl->step_count;
    const u32 bits = ctl->loop_bits;
    const Packing k = sssp::ops::make_packing(bits, ctl->loop_no_parent);
    if (phase == LOOP_PUSH) {
        const CsrView<V, O> out{out_ptr, out_dst, out_weight};
        push_phase<V, O>(count, near_slot ? near_b : near_a, out, words, ctl->loop_source,
                         ctl->loop_bound, k, stamp, ctl->generation, in_far,
                         near_slot ? near_a : near_b, far_slot ? far_b : far_a, near_slot, far_slot,
                         ctl);
    } else if (phase == LOOP_MIN) {
        min_phase<V>(count, far_slot ? far_b : far_a, words, bits, ctl);
    } else if (phase == LOOP_SPLIT) {
        split_pile_phase<V>(count, far_slot ? far_b : far_a, words, bits, k.no_parent, stamp,
                            ctl->generation, in_far, near_slot ? near_b : near_a,
                            far_slot ? far_a : far_b, near_slot, far_slot, ctl);
    } else if (phase == LOOP_PULL) {
        const CsrView<V, O> in{in_ptr, in_src, in_weight};
        pull_phase<V, O>(count, candidates, in, words, ctl->loop_bound, k, stamp, ctl->generation,
                         frontier, ctl);
    } else if (phase == LOOP_FIRST_MIN) {
        min_phase<V>(count, frontier, words, bits, ctl);
    } else {  // LOOP_FIRST_SPLIT: into near list 0 and far pile 0 (the slots are 0)
        split_frontier_phase<V>(count, frontier, words, k, stamp, ctl->generation, in_far, near_a,
                                far_a, ctl);
    }
    if (last_block_done(ctl) && threadIdx.x == 0) finish_phase(ctl);
}

// ---------------------------------------------------------------------------------------------
// Unpack of an update in packed mode (§5.10): only entries whose (distance, parent) differ from
// the input are written; `affected` counts them, summed per warp.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_unpack_update(V n, const u64* __restrict__ words, u32 bits, u64 no_parent,
                      i64* __restrict__ distances, V* __restrict__ parents,
                      OperatorsControl<V>* ctl) {
    const Packing k = sssp::ops::make_packing(bits, no_parent);
    const GridStride g;
    u64 changed = 0;
    for (i64 v = g.first; v < n; v += g.stride) {
        i64 d;
        V p;
        unpack(k, words[v], d, p);
        if (d != distances[v] || p != parents[v]) {
            distances[v] = d;
            parents[v] = p;
            ++changed;
        }
    }
    warp_sum_into(changed, &ctl->affected);
}

// Unpack of compute() in packed mode: every entry written, nothing counted.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_unpack_all(V n, const u64* __restrict__ words, u32 bits, u64 no_parent,
                   i64* __restrict__ distances, V* __restrict__ parents) {
    const Packing k = sssp::ops::make_packing(bits, no_parent);
    const GridStride g;
    for (i64 v = g.first; v < n; v += g.stride) {
        i64 d;
        V p;
        unpack(k, words[v], d, p);
        distances[v] = d;
        parents[v] = p;
    }
}

// ---------------------------------------------------------------------------------------------
// Distance-only parent recovery (§4.4), step 1: distances from the words; parent -1 for the
// source and unreachable vertices, VMAX (no tight in-edge seen yet) for the others. For an update
// (`count_affected`) the input parent is first saved in `saved_parents` and `distance_changed[v]`
// marks a distance that differs from the input, for the affected count after step 2.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_init(V n, const u64* __restrict__ words, V source, i64* __restrict__ distances,
                     V* __restrict__ parents, i32 count_affected, V* __restrict__ saved_parents,
                     V* __restrict__ distance_changed) {
    const GridStride g;
    for (i64 v = g.first; v < n; v += g.stride) {
        const u64 x = words[v];
        const i64 d = x == INF_WORD ? INF_DISTANCE : static_cast<i64>(x);
        if (count_affected != 0) {
            saved_parents[v] = parents[v];
            distance_changed[v] = d != distances[v] ? V(1) : V(0);
        }
        distances[v] = d;
        parents[v] = (x == INF_WORD || v == source) ? V(-1) : VertexMax<V>::value;
    }
}

// Step 2: every reachable u offers itself to each out-neighbour x != s it reaches tightly; the
// atomic minimum keeps the lowest-id tight in-neighbour, so the recovered tree is canonical.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_parents(V n, const O* __restrict__ out_ptr, const V* __restrict__ out_dst,
                        const i32* __restrict__ out_weight, V source,
                        const i64* __restrict__ distances, V* __restrict__ parents) {
    const CsrView<V, O> out{out_ptr, out_dst, out_weight};
    const GridStride g;
    for (i64 u = g.first; u < n; u += g.stride) {
        const i64 du = distances[u];
        if (du >= INF_HALF) continue;
        const O end = out.end(u);
        for (O e = out.begin(u); e < end; ++e) {
            const V x = out.neighbour(e);
            if (x == source) continue;
            if (du + static_cast<i64>(out.weight_of(e)) == distances[x]) {
                atomic_min(parents + x, static_cast<V>(u));
            }
        }
    }
}

// Step 3 (update only): affected = vertices whose distance changed or whose recovered parent
// differs from the saved input parent.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_count(V n, const V* __restrict__ parents, const V* __restrict__ saved_parents,
                      const V* __restrict__ distance_changed, OperatorsControl<V>* ctl) {
    const GridStride g;
    u64 changed = 0;
    for (i64 v = g.first; v < n; v += g.stride) {
        if (distance_changed[v] != 0 || parents[v] != saved_parents[v]) ++changed;
    }
    warp_sum_into(changed, &ctl->affected);
}

// ---------------------------------------------------------------------------------------------
// compute() initialization (§6): the control block zeroed with an empty minimum, every word INF
// but the source's (0, no parent), and the frontier {s} with ctl->frontier = 1. No pack, roots,
// invalidation, heads or pull follow.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_compute_init(V n, V source, u64* __restrict__ words, u32 bits, u64 no_parent,
                     V* __restrict__ frontier, OperatorsControl<V>* ctl) {
    const Packing k = sssp::ops::make_packing(bits, no_parent);
    const GridStride g;
    for (i64 v = g.first; v < n; v += g.stride) {
        words[v] = v == source ? pack(k, 0ull, -1ll) : INF_WORD;
    }
    if (g.first == 0) {
        reset_control(ctl, V(1));
        frontier[0] = source;
    }
}

// ---------------------------------------------------------------------------------------------
// The control block's layout as the compiler sees it, for the test that checks the NumPy mirror:
// the byte offset of every field of the block at `ctl` (never written), then its size.
template <typename V, typename O>
__global__ void ops_control_layout(const OperatorsControl<V>* ctl, i64* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const char* base = reinterpret_cast<const char*>(ctl);
    out[0] = reinterpret_cast<const char*>(&ctl->minimum) - base;
    out[1] = reinterpret_cast<const char*>(&ctl->threshold) - base;
    out[2] = reinterpret_cast<const char*>(&ctl->affected) - base;
    out[3] = reinterpret_cast<const char*>(&ctl->candidates) - base;
    out[4] = reinterpret_cast<const char*>(&ctl->frontier) - base;
    out[5] = reinterpret_cast<const char*>(&ctl->near[0]) - base;
    out[6] = reinterpret_cast<const char*>(&ctl->far[0]) - base;
    out[7] = reinterpret_cast<const char*>(&ctl->invalidated) - base;
    out[8] = reinterpret_cast<const char*>(&ctl->overflow) - base;
    out[9] = reinterpret_cast<const char*>(&ctl->active[0]) - base;
    out[10] = static_cast<i64>(sizeof(OperatorsControl<V>));
    out[11] = reinterpret_cast<const char*>(&ctl->phase) - base;
    out[12] = reinterpret_cast<const char*>(&ctl->near_slot) - base;
    out[13] = reinterpret_cast<const char*>(&ctl->far_slot) - base;
    out[14] = reinterpret_cast<const char*>(&ctl->generation) - base;
    out[15] = reinterpret_cast<const char*>(&ctl->iterations) - base;
    out[16] = reinterpret_cast<const char*>(&ctl->epochs) - base;
    out[17] = reinterpret_cast<const char*>(&ctl->step_count) - base;
    out[18] = reinterpret_cast<const char*>(&ctl->pushes) - base;
    out[19] = reinterpret_cast<const char*>(&ctl->loop_done_blocks) - base;
    out[20] = reinterpret_cast<const char*>(&ctl->loop_fault) - base;
    out[21] = reinterpret_cast<const char*>(&ctl->loop_delta) - base;
    out[22] = reinterpret_cast<const char*>(&ctl->loop_bound) - base;
    out[23] = reinterpret_cast<const char*>(&ctl->loop_no_parent) - base;
    out[24] = reinterpret_cast<const char*>(&ctl->loop_bits) - base;
    out[25] = reinterpret_cast<const char*>(&ctl->loop_source) - base;
    out[26] = reinterpret_cast<const char*>(&ctl->loop_n) - base;
}

