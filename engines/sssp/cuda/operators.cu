// The CUDA operators engine: one kernel per phase, driven by the host loop of operators.py
// (docs/algorithm.md §6, §10 and §5 [ops]; ADR 0026 item 1).
//
// The semantics are the fused engine's, phase by phase; only the barriers differ: a grid barrier
// of the fused kernel is a kernel boundary here, and the decisions that need no host value
// (pointer-jumping early exit, the near-far threshold, the first frontier length) are taken on the
// device through the control block. None of MP1's simplifications (algorithm.md §14): every
// pointer-jumping round is enqueued and a vertex still jumping in the last one is a parent cycle,
// candidates above the bound are never packed, distance-only words recover their parents, and the
// unpack of an update writes only changed entries and counts them.
//
// Every kernel is grid-stride over blocks of SSSP_BLOCK threads (the host caps the grid,
// algorithm.md §10.2); one-thread kernels are launched as one block of one thread. Full-mask warp
// collectives are called by every lane, after the grid-stride loop.
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
// order of algorithm.md §5.8-5.10: an update's pull, the frontier's minimum (and first threshold)
// and split, then push iterations and epochs (minimum and threshold raise, re-split), then the
// unpack or the distance-only parent recovery in its three steps. A zeroed control block is done,
// so a stray launch does nothing.
enum LoopPhase : i32 {
    LOOP_DONE = 0,
    LOOP_PUSH = 1,
    LOOP_MIN = 2,
    LOOP_SPLIT = 3,
    LOOP_PULL = 4,
    LOOP_FIRST_MIN = 5,
    LOOP_FIRST_SPLIT = 6,
    LOOP_UNPACK_CHANGED = 7,  // an update, packed words (algorithm.md §5.10)
    LOOP_UNPACK_ALL = 8,  // compute(), packed words
    LOOP_RECOVER_DISTANCES = 9,  // distance-only words (algorithm.md §4.4), steps 1-3
    LOOP_RECOVER_PARENTS = 10,
    LOOP_RECOVER_COUNT = 11,
};

// The post-commit input check of an update (algorithm.md §8.3) as the device loop takes it
// (loop_input_error).
enum LoopInputError : i32 {
    INPUT_OK = 0,
    INPUT_INVALID = 1,  // invalid_input: an input distance negative or above the bound
    INPUT_CYCLE = 2,  // parent_cycle: still jumping in the last pointer-jumping round
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
    ctl->loop_finish = LOOP_DONE;
    ctl->loop_count_affected = 0;
    ctl->loop_input_error = INPUT_OK;
    ctl->loop_distances = nullptr;
    ctl->loop_parents = nullptr;
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
    ctl->update_generation = 0;
    ctl->update_loop_generation = 0;
    ctl->update_heads = 0;
    ctl->update_delta = 0;
}

// ---------------------------------------------------------------------------------------------
// Control-block initialization (algorithm.md §5.2 [ops]): zero every field, minimum = empty.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK) ops_control_init(OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    reset_control(ctl, V(0));
}

// ---------------------------------------------------------------------------------------------
// Pack the old tree (algorithm.md §5.3) and start the pointer-jumping ancestors at the input
// parents; an invalid input distance sets ctl->overflow (read at sync #1).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pack(V n, const i64* __restrict__ distances, const V* __restrict__ parents,
             u64* __restrict__ words, V* __restrict__ ancestor, u64 bound, u32 bits,
             u64 no_parent, OperatorsControl<V>* ctl) {
    pack_tree<V>(n, distances, parents, words, ancestor, sssp::ops::make_packing(bits, no_parent),
                 bound, &ctl->overflow);
}

// ---------------------------------------------------------------------------------------------
// Roots (algorithm.md §5.4). Launched only when the batch could change an edge; the count itself is
// the device's (the apply knows the weight increases).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_roots(const V* __restrict__ changed_count, const V* __restrict__ changed_from,
              const V* __restrict__ changed_to, const V* __restrict__ parents, i32* __restrict__ flag) {
    mark_roots<V>(*changed_count, changed_from, changed_to, parents, flag);
}

// ---------------------------------------------------------------------------------------------
// One pointer-jumping round (algorithm.md §5.5). The host enqueues rounds 0 .. R without waiting; a
// round after one in which no vertex jumped returns at once (a uniform decision: the previous
// launch has finished), so the device stops exactly where the fused kernel does. Each round reports
// its own activity in ctl->active[round]; activity in round R is a parent cycle (checked at sync
// #1). With an empty changed list (known on the device only) round 0 returns at once, and so every
// later round: no pointer jumping, as algorithm.md §5.5 requires.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pointer_jump(V n, i32 round, const V* __restrict__ changed_count, V* __restrict__ ancestor,
                     i32* __restrict__ flag, OperatorsControl<V>* ctl) {
    if (round == 0 && *changed_count == 0) return;
    if (round > 0 && load_cg(&ctl->active[round - 1]) == 0) return;
    pointer_jump_round<V>(n, ancestor, flag, &ctl->active[round]);
}

// ---------------------------------------------------------------------------------------------
// Invalidate (algorithm.md §5.6) into the candidates list; ctl->invalidated gets the exact count.
// A negative `generation` stands for the update's uploaded one (ctl->update_generation: the
// captured start, algorithm.md §10.2).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_invalidate(V n, i32* __restrict__ flag, u64* __restrict__ words, i32* __restrict__ stamp,
                   i32 generation, V* __restrict__ candidates, OperatorsControl<V>* ctl) {
    if (generation < 0) generation = ctl->update_generation;
    invalidate_flagged<V>(n, flag, words, stamp, generation, candidates, &ctl->candidates,
                          &ctl->invalidated);
}

// ---------------------------------------------------------------------------------------------
// Insertion heads (algorithm.md §5.7), with the invalidation's generation. Launched from Python only
// when the head list is non-empty; in the captured start (negative `num_heads` and `generation`:
// the update's uploaded ones, ctl->update_heads and ctl->update_generation) over a grid for the
// change capacity, an empty list returning at once.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_heads(V num_heads, const V* __restrict__ heads, V source, i32* __restrict__ stamp,
              i32 generation, V* __restrict__ candidates, OperatorsControl<V>* ctl) {
    if (num_heads < 0) num_heads = ctl->update_heads;
    if (generation < 0) generation = ctl->update_generation;
    list_heads<V>(num_heads, heads, source, stamp, generation, candidates, &ctl->candidates);
}

// ---------------------------------------------------------------------------------------------
// Pull (algorithm.md §5.8) over the candidates; the count comes by value (the host read it at sync
// #1).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_pull(V count, const V* __restrict__ candidates, const O* __restrict__ in_ptr,
             const O* __restrict__ in_end, const V* __restrict__ in_src, const i32* __restrict__ in_weight,
             u64* __restrict__ words, u64 bound, u32 bits, u64 no_parent, i32* __restrict__ stamp,
             i32 generation, V* __restrict__ frontier, OperatorsControl<V>* ctl) {
    const CsrView<V, O> in{in_ptr, in_end, in_src, in_weight};
    pull_candidates<V, O>(count, candidates, in, sssp::ops::make_packing(bits, no_parent), bound,
                          words, stamp, generation, frontier, &ctl->frontier);
}

// ---------------------------------------------------------------------------------------------
// Minimum distance over the finite words of a list (algorithm.md §5.9 (a) and the epoch minimum)
// into ctl->minimum. The first minimum reads the list length from ctl->frontier (`from_frontier`;
// the frontier length stays on the device); an epoch's minimum gets the pile size by value.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_min(V count, i32 from_frontier, const V* __restrict__ list, const u64* __restrict__ words,
            u32 bits, OperatorsControl<V>* ctl) {
    list_min_into<V>(from_frontier != 0 ? load_cg(&ctl->frontier) : count, list, words, bits,
                     &ctl->minimum);
}

// ---------------------------------------------------------------------------------------------
// The near-far threshold, one thread (algorithm.md §5.9): the first from the frontier's minimum, or
// an epoch's raise past the pile's. Both reset the minimum slot to empty for the next minimum.
template <typename V>
__device__ __forceinline__ void threshold_phase(i32 raise, u64 delta, OperatorsControl<V>* ctl) {
    const u64 minimum = load_cg(&ctl->minimum);
    ctl->threshold = raise != 0 ? raised_threshold(load_cg(&ctl->threshold), minimum, delta)
                                : first_threshold(minimum, delta);
    ctl->minimum = EMPTY_MIN;
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_threshold(i32 raise, u64 delta, OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    threshold_phase<V>(raise, delta, ctl);
}

// ---------------------------------------------------------------------------------------------
// The first split (algorithm.md §5.9 (b)) into near list 0 and far pile 0, at ctl->threshold; the
// frontier length is read from the control block.
template <typename V>
__device__ __forceinline__ void split_frontier_phase(V length, const V* __restrict__ frontier,
                                                     const u64* __restrict__ words,
                                                     const Packing& k, i32* __restrict__ stamp,
                                                     i32 generation, i32* __restrict__ in_far,
                                                     V* __restrict__ near_list,
                                                     V* __restrict__ far_list,
                                                     OperatorsControl<V>* ctl) {
    split_frontier<V>(length, frontier, words, k, load_cg(&ctl->threshold), stamp, generation,
                      in_far, near_list, &ctl->near[0], far_list, &ctl->far[0]);
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
// An epoch's re-split of far pile `far_slot` (algorithm.md §5.9 (c)) at the raised ctl->threshold
// into near list `near_slot` (empty) and pile 1 - far_slot. The pile size comes by value, so thread
// 0 may zero far[far_slot], the pile being read, for its next use.
template <typename V>
__device__ __forceinline__ void split_pile_phase(V count, const V* __restrict__ pile,
                                                 const u64* __restrict__ words, const Packing& k,
                                                 i32* __restrict__ stamp, i32 generation,
                                                 i32* __restrict__ in_far,
                                                 V* __restrict__ near_list, V* __restrict__ kept_pile,
                                                 i32 near_slot, i32 far_slot,
                                                 OperatorsControl<V>* ctl) {
    const u64 threshold = load_cg(&ctl->threshold);
    if (GridStride().first == 0) ctl->far[far_slot] = 0;
    split_pile<V>(count, pile, words, k, threshold, stamp, generation, in_far, near_list,
                  &ctl->near[near_slot], kept_pile, &ctl->far[1 - far_slot]);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_split_pile(V count, const V* __restrict__ pile, const u64* __restrict__ words, u32 bits,
                   u64 no_parent, i32* __restrict__ stamp, i32 generation, i32* __restrict__ in_far,
                   V* __restrict__ near_list, V* __restrict__ kept_pile, i32 near_slot,
                   i32 far_slot, OperatorsControl<V>* ctl) {
    split_pile_phase<V>(count, pile, words, sssp::ops::make_packing(bits, no_parent), stamp,
                        generation, in_far, near_list, kept_pile, near_slot, far_slot, ctl);
}

// ---------------------------------------------------------------------------------------------
// One push iteration (algorithm.md §5.9 (c)) of near list `near_slot` at ctl->threshold: into near
// list 1 - near_slot and far pile far_slot. The near count comes by value, so thread 0 zeroes
// near[near_slot] for the iteration after next.
template <typename V, typename O>
__device__ __forceinline__ void push_phase(V count, const V* __restrict__ near_list,
                                           const CsrView<V, O>& out, u64* __restrict__ words,
                                           V source, u64 bound, const Packing& k,
                                           i32* __restrict__ stamp, i32 generation,
                                           i32* __restrict__ in_far, V* __restrict__ next_list,
                                           V* __restrict__ far_list, i32 near_slot, i32 far_slot,
                                           u32 push_shift, V* __restrict__ near_log,
                                           i32 iteration, OperatorsControl<V>* ctl) {
    const u64 threshold = load_cg(&ctl->threshold);
    if (GridStride().first == 0) {
        ctl->near[near_slot] = 0;
        log_near_count(near_log, iteration, count);
    }
    push_list<V, O, false>(GridStride(), count, near_list, out, k, source, bound, threshold,
                           generation, push_shift, words, stamp, in_far, next_list,
                           &ctl->near[1 - near_slot], far_list, &ctl->far[far_slot]);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_push(V count, const V* __restrict__ near_list, const O* __restrict__ out_ptr,
             const O* __restrict__ out_end, const V* __restrict__ out_dst, const i32* __restrict__ out_weight,
             u64* __restrict__ words, V source, u64 bound, u32 bits, u64 no_parent,
             i32* __restrict__ stamp, i32 generation, i32* __restrict__ in_far,
             V* __restrict__ next_list, V* __restrict__ far_list, i32 near_slot, i32 far_slot,
             u32 push_shift, V* __restrict__ near_log, i32 iteration, OperatorsControl<V>* ctl) {
    const CsrView<V, O> out{out_ptr, out_end, out_dst, out_weight};
    push_phase<V, O>(count, near_list, out, words, source, bound, sssp::ops::make_packing(bits, no_parent),
                     stamp, generation, in_far, next_list, far_list, near_slot, far_slot,
                     push_shift, near_log, iteration, ctl);
}

// ---------------------------------------------------------------------------------------------
// The device-driven loop (operators_loop "device"): everything the host loop launches after
// sync #1 (an update's pull, the frontier's minimum, threshold and split, then the push
// iterations and epochs), with the loop state and the run's constants in the control block, so
// that one launch of ops_loop, with the same arguments every time, is one phase: the pull, a
// minimum, a split or a push iteration. Its last block to finish decides the next phase
// (algorithm.md §5.9: push while the near list is non-empty, else an epoch while the far pile is,
// else done), so the host replays S captured launches and reads the control block back once per
// replay; launches after the end return at once. The decisions read the same counts, in the same
// order, as the host loop's, so the phases, lists and thresholds are the host loop's.

// The loop at its start, after the first split, with the run's constants.
template <typename V>
__device__ __forceinline__ void start_loop(OperatorsControl<V>* ctl, i32 generation, u64 delta,
                                           u64 bound, u32 bits, u64 no_parent, V source, V n,
                                           u32 push_shift) {
    reset_loop(ctl, generation);
    ctl->loop_delta = delta;
    ctl->loop_bound = bound;
    ctl->loop_no_parent = no_parent;
    ctl->loop_bits = bits;
    ctl->loop_source = source;
    ctl->loop_n = n;
    ctl->loop_push_shift = push_shift;
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
    } else {  // the near-far loop is over: the unpack or recovery, over every vertex
        begin_phase(ctl, ctl->loop_finish, ctl->loop_n);
    }
}

// Start of the loop, one thread: state, constants and how it ends, then the first phase:
// compute()'s minimum over the one-entry frontier, or an update's pull over the candidates. An
// update first takes the input checks of algorithm.md §8.3 (what the host loop reads at sync #1):
// an input distance out of range (reported first when both hold), then a vertex still jumping in
// the last of `jump_rounds` pointer-jumping rounds with a non-empty changed list. A failed check
// runs nothing more; the host raises. Without candidates only the finishing phases run. A negative
// `generation` stands for the update's uploaded generation and delta (ctl->update_loop_generation,
// ctl->update_delta: the captured start, algorithm.md §10.2).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_loop_init(i32 start, i32 finish, i32 count_affected, i32 generation, u64 delta, u64 bound,
                  u32 bits, u64 no_parent, V source, V n, u32 push_shift, i32 jump_rounds,
                  const V* __restrict__ changed_count, i64* distances, V* parents,
                  OperatorsControl<V>* ctl) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    if (generation < 0) {  // the captured start: this update's values, uploaded with the block
        generation = ctl->update_loop_generation;
        delta = ctl->update_delta;
    }
    start_loop(ctl, generation, delta, bound, bits, no_parent, source, n, push_shift);
    ctl->loop_finish = finish;
    ctl->loop_count_affected = count_affected;
    ctl->loop_distances = distances;
    ctl->loop_parents = parents;
    if (start != LOOP_PULL) {
        begin_phase(ctl, LOOP_FIRST_MIN, load_cg(&ctl->frontier));
        return;
    }
    if (load_cg(&ctl->overflow) != 0) {
        ctl->loop_input_error = INPUT_INVALID;
        return;  // phase LOOP_DONE
    }
    if (jump_rounds > 0 && *changed_count > 0 && load_cg(&ctl->active[jump_rounds - 1]) != 0) {
        ctl->loop_input_error = INPUT_CYCLE;
        return;
    }
    const V candidates = load_cg(&ctl->candidates);
    if (candidates == 0) {
        begin_phase(ctl, finish, n);
        return;
    }
    ctl->generation += 1;  // the pull claims frontier entries
    begin_phase(ctl, LOOP_PULL, candidates);
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
        case LOOP_UNPACK_CHANGED:
        case LOOP_UNPACK_ALL:
        case LOOP_RECOVER_COUNT:
            begin_phase(ctl, LOOP_DONE, V(0));
            return;
        case LOOP_RECOVER_DISTANCES:
            ctl->phase = LOOP_RECOVER_PARENTS;
            return;
        case LOOP_RECOVER_PARENTS:
            if (ctl->loop_count_affected != 0) {
                ctl->phase = LOOP_RECOVER_COUNT;
            } else {
                begin_phase(ctl, LOOP_DONE, V(0));
            }
            return;
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

// A finishing phase over every vertex (count = n): the unpack, or a step of the distance-only
// recovery, writing the result's arrays named in the control block. The recovery's scratch is
// the host loop's: the ancestors hold the saved parents, the candidates list the changed marks
// (neither is read after the pull).
template <typename V, typename O>
__device__ __forceinline__ void finish_step(i32 phase, V count, const O* __restrict__ out_ptr,
                                            const O* __restrict__ out_end,
                                            const V* __restrict__ out_dst,
                                            const i32* __restrict__ out_weight,
                                            const u64* __restrict__ words,
                                            V* __restrict__ candidates,
                                            V* __restrict__ ancestor, OperatorsControl<V>* ctl) {
    const Packing k = sssp::ops::make_packing(ctl->loop_bits, ctl->loop_no_parent);
    i64* distances = ctl->loop_distances;
    V* parents = ctl->loop_parents;
    V* distance_changed = candidates;
    if (phase == LOOP_UNPACK_CHANGED) {
        unpack_changed<V>(count, words, k, distances, parents, &ctl->affected);
    } else if (phase == LOOP_UNPACK_ALL) {
        unpack_all<V>(count, words, k, distances, parents);
    } else if (phase == LOOP_RECOVER_DISTANCES) {
        recover_distances<V>(count, words, ctl->loop_source, distances, parents,
                             ctl->loop_count_affected != 0, ancestor, distance_changed);
    } else if (phase == LOOP_RECOVER_PARENTS) {
        const CsrView<V, O> out{out_ptr, out_end, out_dst, out_weight};
        recover_tight_parents<V, O>(count, out, ctl->loop_source, words, parents);
    } else {  // LOOP_RECOVER_COUNT
        count_recovered_affected<V>(count, parents, ancestor, distance_changed, &ctl->affected);
    }
}

// One phase of the loop, the one ctl->phase names (uniform: written before this launch). The
// near lists and far piles come as both buffers of each pair; the slots pick them.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_LOOP_MIN_BLOCKS)
    ops_loop(V* __restrict__ near_a, V* __restrict__ near_b, V* __restrict__ far_a,
             V* __restrict__ far_b, const O* __restrict__ out_ptr, const O* __restrict__ out_end,
             const V* __restrict__ out_dst,
             const i32* __restrict__ out_weight, V* __restrict__ candidates,
             const O* __restrict__ in_ptr, const O* __restrict__ in_end, const V* __restrict__ in_src,
             const i32* __restrict__ in_weight, V* __restrict__ frontier, u64* __restrict__ words,
             i32* __restrict__ stamp, i32* __restrict__ in_far, V* __restrict__ ancestor,
             V* __restrict__ near_log, OperatorsControl<V>* ctl) {
    // Under a programmatic dependent launch (operators.py, ENGINES_OPERATORS_PDL) this grid may
    // start while the previous phase's grid still runs: wait for it to complete and its writes to
    // be visible before reading anything, then let the next phase's grid be scheduled, so its
    // launch overlaps this phase instead of following it. Launched plainly, the previous grid is
    // complete already and the wait returns at once.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const i32 phase = ctl->phase;
    if (phase == LOOP_DONE) return;
    const i32 near_slot = ctl->near_slot;
    const i32 far_slot = ctl->far_slot;
    const V count = ctl->step_count;
    const u32 bits = ctl->loop_bits;
    const Packing k = sssp::ops::make_packing(bits, ctl->loop_no_parent);
    if (phase == LOOP_PUSH) {
        const CsrView<V, O> out{out_ptr, out_end, out_dst, out_weight};
        push_phase<V, O>(count, near_slot ? near_b : near_a, out, words, ctl->loop_source,
                         ctl->loop_bound, k, stamp, ctl->generation, in_far,
                         near_slot ? near_a : near_b, far_slot ? far_b : far_a, near_slot, far_slot,
                         ctl->loop_push_shift, near_log, ctl->iterations - 1, ctl);
    } else if (phase == LOOP_MIN) {
        list_min_into<V>(count, far_slot ? far_b : far_a, words, bits, &ctl->minimum);
    } else if (phase == LOOP_SPLIT) {
        split_pile_phase<V>(count, far_slot ? far_b : far_a, words, k, stamp, ctl->generation,
                            in_far, near_slot ? near_b : near_a, far_slot ? far_a : far_b,
                            near_slot, far_slot, ctl);
    } else if (phase == LOOP_PULL) {
        const CsrView<V, O> in{in_ptr, in_end, in_src, in_weight};
        pull_candidates<V, O>(count, candidates, in, k, ctl->loop_bound, words, stamp,
                              ctl->generation, frontier, &ctl->frontier);
    } else if (phase == LOOP_FIRST_MIN) {
        list_min_into<V>(count, frontier, words, bits, &ctl->minimum);
    } else if (phase == LOOP_FIRST_SPLIT) {  // into near list 0 and far pile 0 (the slots are 0)
        split_frontier_phase<V>(count, frontier, words, k, stamp, ctl->generation, in_far, near_a,
                                far_a, ctl);
    } else {
        finish_step<V, O>(phase, count, out_ptr, out_end, out_dst, out_weight, words, candidates, ancestor,
                          ctl);
    }
    if (last_block_done(ctl) && threadIdx.x == 0) finish_phase(ctl);
}

// ---------------------------------------------------------------------------------------------
// Unpack (algorithm.md §5.10): an update writes and counts only changed entries (ctl->affected),
// compute() writes every entry.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_unpack_update(V n, const u64* __restrict__ words, u32 bits, u64 no_parent,
                      i64* __restrict__ distances, V* __restrict__ parents,
                      OperatorsControl<V>* ctl) {
    unpack_changed<V>(n, words, sssp::ops::make_packing(bits, no_parent), distances, parents,
                      &ctl->affected);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_unpack_all(V n, const u64* __restrict__ words, u32 bits, u64 no_parent,
                   i64* __restrict__ distances, V* __restrict__ parents) {
    unpack_all<V>(n, words, sssp::ops::make_packing(bits, no_parent), distances, parents);
}

// ---------------------------------------------------------------------------------------------
// Distance-only parent recovery (algorithm.md §4.4) in three kernels: distances (saving the input
// parents and marking changed distances for an update's count), the tight in-neighbours, the count.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_init(V n, const u64* __restrict__ words, V source, i64* __restrict__ distances,
                     V* __restrict__ parents, i32 count_affected, V* __restrict__ saved_parents,
                     V* __restrict__ distance_changed) {
    recover_distances<V>(n, words, source, distances, parents, count_affected != 0,
                         saved_parents, distance_changed);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_parents(V n, const O* __restrict__ out_ptr, const O* __restrict__ out_end,
                        const V* __restrict__ out_dst,
                        const i32* __restrict__ out_weight, V source,
                        const u64* __restrict__ words, V* __restrict__ parents) {
    const CsrView<V, O> out{out_ptr, out_end, out_dst, out_weight};
    recover_tight_parents<V, O>(n, out, source, words, parents);
}

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_recover_count(V n, const V* __restrict__ parents, const V* __restrict__ saved_parents,
                      const V* __restrict__ distance_changed, OperatorsControl<V>* ctl) {
    count_recovered_affected<V>(n, parents, saved_parents, distance_changed, &ctl->affected);
}

// ---------------------------------------------------------------------------------------------
// compute() initialization (algorithm.md §6): the control block zeroed with an empty minimum, every
// word INF but the source's (0, no parent), and the frontier {s} with ctl->frontier = 1. No pack,
// roots, invalidation, heads or pull follow.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    ops_compute_init(V n, V source, u64* __restrict__ words, u32 bits, u64 no_parent,
                     V* __restrict__ frontier, OperatorsControl<V>* ctl) {
    seed_source_words(n, static_cast<i64>(source), words, sssp::ops::make_packing(bits, no_parent));
    if (GridStride().first == 0) {
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
    out[27] = reinterpret_cast<const char*>(&ctl->loop_finish) - base;
    out[28] = reinterpret_cast<const char*>(&ctl->loop_count_affected) - base;
    out[29] = reinterpret_cast<const char*>(&ctl->loop_input_error) - base;
    out[30] = reinterpret_cast<const char*>(&ctl->loop_distances) - base;
    out[31] = reinterpret_cast<const char*>(&ctl->loop_parents) - base;
    out[32] = reinterpret_cast<const char*>(&ctl->loop_push_shift) - base;
    out[33] = reinterpret_cast<const char*>(&ctl->update_generation) - base;
    out[34] = reinterpret_cast<const char*>(&ctl->update_loop_generation) - base;
    out[35] = reinterpret_cast<const char*>(&ctl->update_heads) - base;
    out[36] = reinterpret_cast<const char*>(&ctl->update_delta) - base;
}

