// The CUDA fused engine: one persistent cooperative kernel per update and per compute()
// (algorithm.md §5, §6, §10). Every phase runs in one launch, separated by grid.sync(); every loop
// decision is taken on the device, each thread evaluating it identically from control-block
// values read after a barrier. The host reads the control block once, after the launch
// (algorithm.md §5.11).
//
// Grid: occupancy x SM count blocks of SSSP_BLOCK threads (fused.py); every loop is grid-stride.
// Every value another block may have written during the launch is read with load_cg (L2);
// full-mask warp collectives are called by all lanes, after the grid-stride loops.
//
// Barriers. The control block keeps the near-list counts, the far-pile counts and the minimum in
// three rotating slots each (kernels.cuh FusedControl), so a push iteration needs a single
// grid.sync(): in iteration `it` every thread reads near[it % 3] (stable during the iteration),
// appends to near[(it + 1) % 3] (zeroed during iteration it - 1, or initially zero), and thread 0
// zeroes near[(it + 2) % 3], which every thread read before the previous barrier. Epochs rotate
// far[] and minimum[] the same way. This changes only the number of barriers, never a word.
//
// Template parameters: V the vertex type (counters have its width), O the edge-offset type.

#include <cooperative_groups.h>

#include "kernels.cuh"

// Co-resident blocks per SM the register allocation aims for. Without a minimum, ptxas aims for 6
// blocks (40 registers) and spills around the near-far loop; 4 blocks (up to 64 registers) keeps
// every value in registers. The real grid is the occupancy the driver reports (fused.py).
#define SSSP_FUSED_MIN_BLOCKS 4

namespace sssp {
namespace fused {

namespace cg = cooperative_groups;

// The phase clock (module variant SSSP_PHASE_CLOCK, fused.py ENGINES_FUSED_PHASE_CLOCK; an
// instrument for bench/fused_phases.py, never a default): block 0's thread 0 stamps its SM's
// cycle counter and the global timer as it leaves each grid barrier, with the kind of the phase
// that barrier ended (phase_clock.py names them). A persistent kernel is one launch, so Nsight's
// per-kernel times cannot split it; blocks leave a barrier together, so the gaps between block
// 0's stamps are the phases' times, barrier included. The cycle counter resolves them; the timer
// (coarser) converts cycles to seconds over the whole launch. Stamps past PHASE_SLOTS are counted
// but not kept.
#define SSSP_PHASE_SLOTS 8192
enum PhaseKind : i32 {
    PHASE_START = 0, PHASE_PACK_ROOTS, PHASE_JUMP_ROUND, PHASE_INVALIDATE, PHASE_HEADS, PHASE_PULL,
    PHASE_FIRST_MIN, PHASE_FIRST_SPLIT, PHASE_PUSH, PHASE_SOLO, PHASE_EPOCH_MIN, PHASE_EPOCH_SPLIT,
    PHASE_RECOVER, PHASE_SEED, PHASE_END
};
#if SSSP_PHASE_CLOCK
}  // namespace fused
}  // namespace sssp
// C names, so that the host finds them (phase_clock.py, RawModule.get_global)
extern "C" {
__device__ sssp::i32 sssp_phase_count;
__device__ sssp::i32 sssp_phase_kind[SSSP_PHASE_SLOTS];
__device__ sssp::u64 sssp_phase_cycles[SSSP_PHASE_SLOTS];
__device__ sssp::u64 sssp_phase_ns[SSSP_PHASE_SLOTS];
}
namespace sssp {
namespace fused {
__device__ __forceinline__ void phase_mark(i32 kind) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const i32 i = kind == PHASE_START ? 0 : sssp_phase_count;
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    if (i < SSSP_PHASE_SLOTS) {
        sssp_phase_kind[i] = kind;
        sssp_phase_cycles[i] = static_cast<u64>(clock64());
        sssp_phase_ns[i] = ns;
    }
    sssp_phase_count = i + 1;
}
#else
__device__ __forceinline__ void phase_mark(i32) {}
#endif

// Control-block values every thread needs after a barrier (the loop's decisions, the lengths of
// the lists a phase reads, the minima) are read once per block: thread 0 loads them through L2
// into these slots and the block meets, instead of every warp paying an L2 round trip on the same
// line (about 1 us a phase on the H200, issue 13). A slot is written again only after a grid
// barrier, which every thread of the block passed after reading it, so one __syncthreads per
// read is enough.
template <typename V>
struct BlockSlots {
    V near;
    V far;
    V count;
    i32 active;
    u64 minimum;
    V solo[3];  // the solo push's list counts, rotating by its iterations (solo_push)
    i32 done;   // a solo stretch's iterations, as every block reads them after it
};

// Thread 0 of the block loads *p into *slot; every thread returns it after the block met.
template <typename T>
__device__ __forceinline__ T block_read(const T* p, T* slot) {
    if (threadIdx.x == 0) *slot = load_cg(p);
    __syncthreads();
    return *slot;
}

// The solo push (issue 34): block 0 alone runs push iterations over a short near list, meeting
// with __syncthreads instead of a grid barrier, until the list is empty or longer than `limit`;
// the other blocks wait at the grid barrier that follows. The same iterations as the grid's (one
// generation each, the same lists, the same far pile), on fewer threads: worth it where an
// iteration's work is a few edges per thread and the grid barrier and the L2 round trips around
// it are most of its time (small updates; compute()'s first iterations). The result does not
// depend on the schedule (algorithm.md §5.12).
//
// Entered with the list of parity `it & 1` and its `count` (0 < count <= limit). The counts of
// the lists it makes rotate over three shared slots (slots.solo) as the control block's do over
// the grid's, so an iteration needs one __syncthreads. Returns the iterations run; the last list
// (empty, or too long for the block) is in the buffer of parity (it + done) & 1 and its count in
// `count`. pushes, as in the grid loop, sums the lists' lengths.
template <typename V, typename O>
__device__ __forceinline__ i32 solo_push(const CsrView<V, O>& out, const Packing& k, V source,
                                         u64 bound, u64 threshold, u32 push_shift,
                                         i32 generation, i32 iterations, u32 it, V limit,
                                         u64* words, i32* stamp, i32* in_far, V* near_a,
                                         V* near_b, V* pile, V* pile_count, V* near_log,
                                         BlockSlots<V>& slots, V& count, i64& pushes) {
    const GridStride b = block_stride();
    if (threadIdx.x == 0) {
        slots.solo[1] = V(0);
        slots.solo[2] = V(0);
    }
    __syncthreads();
    i32 done = 0;
    for (;;) {
        // iteration `done`: its list's count was read from slot done % 3 (or given), it appends
        // to slot (done + 1) % 3, and thread 0 zeroes slot (done + 2) % 3, which every thread
        // read before the previous __syncthreads
        pushes += static_cast<i64>(count);
        if (threadIdx.x == 0) {
            slots.solo[(done + 2) % 3] = V(0);
            log_near_count(near_log, static_cast<i64>(iterations) + done, count);
        }
        const bool odd = ((it + static_cast<u32>(done)) & 1u) != 0u;
        push_list<V, O>(b, count, odd ? near_b : near_a, out, k, source, bound, threshold,
                        generation + done + 1, push_shift, words, stamp, in_far,
                        odd ? near_a : near_b, &slots.solo[(done + 1) % 3], pile, pile_count);
        __syncthreads();
        ++done;
        count = slots.solo[done % 3];
        if (count == V(0) || count > limit) return done;
    }
}

// The near-far loop (algorithm.md §5.9 (c)), entered after the first split: near list 0 holds
// near[0] entries, far pile 0 holds far[0] entries. Returns through the counters by reference.
// `solo_limit`: the longest near list block 0 pushes alone (solo_push; 0: never; read only in a
// module compiled with SSSP_FUSED_SOLO).
template <typename V, typename O>
__device__ __forceinline__ void near_far_loop(cg::grid_group& grid, const GridStride& gs,
                              const CsrView<V, O>& out, const Packing& k, V source, u64 bound,
                              u64 delta, u64 threshold, u32 push_shift, V solo_limit, u64* words,
                              i32* stamp, i32* in_far, V* near_a, V* near_b, V* far_a, V* far_b,
                              V* near_log, FusedControl<V>* ctl,
                              BlockSlots<V>& slots, i32& generation, i32& iterations,
                              i32& epochs, i64& pushes) {
    u32 it = 0;  // the near-list rotation: near list it & 1, near count slot it % 3
    u32 ep = 0;  // epochs so far: far pile ep & 1, far count slot ep % 3, minimum (ep + 1) % 3
    for (;;) {
        // Both counts at once (stable after the barrier): one block meeting per decision.
        if (threadIdx.x == 0) {
            slots.near = load_cg(&ctl->near[it % 3]);
            slots.far = load_cg(&ctl->far[ep % 3]);
        }
        __syncthreads();
        const V near_count = slots.near;
        // a solo stretch (solo_push), compiled only into the SSSP_FUSED_SOLO module
        if (SSSP_FUSED_SOLO && near_count > 0 && near_count <= solo_limit) {
            if (blockIdx.x == 0) {
                V count = near_count;
                const i32 done = solo_push<V, O>(out, k, source, bound, threshold, push_shift,
                                                 generation, iterations, it, solo_limit, words,
                                                 stamp, in_far, near_a, near_b,
                                                 (ep & 1u) ? far_b : far_a, &ctl->far[ep % 3],
                                                 near_log, slots, count, pushes);
                // Hand the last list to the grid's rotation without touching near[it % 3],
                // which a slower block may still be reading: the rotation moves on to a
                // position it_end = it + 1 or it + 4 (below), whose count slot near[(it + 1) % 3]
                // is zero and unread and whose successor near[(it + 2) % 3] every block read
                // before the previous barrier; it_end has the parity of the list's buffer.
                if (threadIdx.x == 0) {
                    ctl->near[(it + 1) % 3] = count;
                    ctl->near[(it + 2) % 3] = V(0);
                    ctl->solo_done = done;
                    ctl->solo_runs += 1;  // statistics: block 0's thread 0 is their only writer
                    ctl->solo_iterations += done;
                }
            }
            grid.sync();
            phase_mark(PHASE_SOLO);
            // Every block takes the stretch's iterations from the control block. One slot is
            // enough: a stretch ends with an empty list (then the loop ends, or an epoch's
            // barriers come first) or a long one (a grid iteration's barrier comes first), so the
            // next stretch writes it only after a barrier that every block reaches after
            // reading it.
            const i32 done = block_read(&ctl->solo_done, &slots.done);
            generation += done;
            iterations += done;
            it += (done & 1) ? 1u : 4u;  // it + 1 (mod 3), it + done (mod 2)
            continue;
        }
        if (near_count > 0) {  // one push iteration
            ++generation;
            ++iterations;
            pushes += static_cast<i64>(near_count);
            if (gs.first == 0) {
                ctl->near[(it + 2) % 3] = V(0);
                log_near_count(near_log, iterations - 1, near_count);
            }
            push_list<V, O>(GridStride(), near_count, (it & 1u) ? near_b : near_a, out, k,
                            source, bound, threshold, generation, push_shift, words, stamp,
                            in_far, (it & 1u) ? near_a : near_b, &ctl->near[(it + 1) % 3],
                            (ep & 1u) ? far_b : far_a, &ctl->far[ep % 3]);
            grid.sync();
            phase_mark(PHASE_PUSH);
            ++it;
            continue;
        }
        const V far_count = slots.far;
        if (far_count == 0) break;  // done: every in_far flag is back to zero
        ++epochs;  // raise the threshold past the far pile
        V* pile = (ep & 1u) ? far_b : far_a;
        u64* min_slot = &ctl->minimum[(ep + 1) % 3];
        if (gs.first == 0) {
            ctl->minimum[(ep + 2) % 3] = EMPTY_MIN;
            ctl->far[(ep + 2) % 3] = V(0);
        }
        list_min_into<V>(far_count, pile, words, k.bits, min_slot);
        grid.sync();
        phase_mark(PHASE_EPOCH_MIN);
        threshold = raised_threshold(threshold, block_read(min_slot, &slots.minimum), delta);
        ++generation;
        // near[it % 3] is empty (every thread read it as zero above) and receives the re-split.
        split_pile<V>(far_count, pile, words, k, threshold, stamp, generation, in_far,
                      (it & 1u) ? near_b : near_a, &ctl->near[it % 3],
                      (ep & 1u) ? far_a : far_b, &ctl->far[(ep + 1) % 3]);
        grid.sync();
        phase_mark(PHASE_EPOCH_SPLIT);
        ++ep;
    }
}

// Distance-only words: write the distances and recover every parent (algorithm.md §4.4). With
// `count`, also count `affected` (update): `mark` and `saved_parent` are per-vertex scratch (the
// candidates list and the ancestors, no longer needed). Needs two barriers, or three when counting.
template <typename V, typename O>
__device__ __forceinline__ void recover_parents(cg::grid_group& grid, const CsrView<V, O>& out,
                                                V n, V source, const u64* words, i64* distances,
                                                V* parents, bool count, V* mark,
                                                V* saved_parent, FusedControl<V>* ctl) {
    recover_distances<V>(n, words, source, distances, parents, count, saved_parent, mark);
    grid.sync();
    phase_mark(PHASE_RECOVER);
    recover_tight_parents<V, O>(n, out, source, words, parents);
    if (!count) return;
    grid.sync();
    phase_mark(PHASE_RECOVER);
    count_recovered_affected<V>(n, parents, saved_parent, mark, &ctl->affected);
}

template <typename V>
__device__ __forceinline__ void write_stats(const GridStride& gs, FusedControl<V>* ctl,
                                            i32 generation, i32 iterations, i32 epochs,
                                            i64 pushes) {
    if (gs.first == 0) {
        ctl->generation = generation;
        ctl->iterations = iterations;
        ctl->epochs = epochs;
        ctl->pushes = pushes;
    }
}

// Mapped records (ENGINES_MAPPED_RECORDS, engines/sssp/cuda/mapped.py): when the initial record names a pinned host
// record (ctl->host_record), the last block to finish the run copies the control block into it,
// so the run's graph needs no download node after the kernel (a copy node after a kernel cost
// about 7 us a replay on an H100, against about 2 us for these stores). Every block counts itself
// out after its last write (fenced first); the last to arrive has seen every other block's fence,
// so it reads the final block. The host reads the record after its one wait for the stream, which
// makes the kernel's writes to host memory visible. Called by every thread at fused_update's end
// (compute() is never mapped). Thread 0 alone reads the address and counts the block out, in a
// shared slot; not inlined: inlined at the kernel's end, it made ptxas spill the batched push's
// update and compute modules (make cuda-check).
template <typename V>
__device__ __noinline__ void record_out(FusedControl<V>* ctl) {
    __shared__ u64 host;  // the pinned record's address; 0 in every block but the last to finish
    __syncthreads();      // the block's threads have made their last writes
    if (threadIdx.x == 0) {
        host = load_cg(&ctl->host_record);
        if (host != 0) {
            __threadfence();
            if (atomicAdd(&ctl->exited, 1u) != gridDim.x - 1) host = 0;
        }
    }
    __syncthreads();
    if (host == 0) return;
    __threadfence();
    constexpr int words = sizeof(FusedControl<V>) / sizeof(u64);
    static_assert(sizeof(FusedControl<V>) % sizeof(u64) == 0, "the control block is whole words");
    block_copy_words<u64>(reinterpret_cast<volatile u64*>(host),
                          reinterpret_cast<const volatile u64*>(ctl), words);
    __threadfence_system();
}

}  // namespace fused
}  // namespace sssp

// ---------------------------------------------------------------------------------------------
// Mapped records (ENGINES_MAPPED_RECORDS, mapped.py): the control block's initial record, read from
// the host's pinned memory by one block of the run's graph instead of an upload node (a copy
// between kernels cost the GPU a switch to the copy engine and back). One block; its first warp
// copies the words.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK) fused_control_in(const sssp::u64* host_init,
                                                               sssp::FusedControl<V>* ctl) {
    using namespace sssp;
    constexpr int words = sizeof(FusedControl<V>) / sizeof(u64);
    block_copy_words<u64>(reinterpret_cast<volatile u64*>(ctl),
                          reinterpret_cast<const volatile u64*>(host_init), words);
}

// ---------------------------------------------------------------------------------------------
// update(): pack, roots, pointer jumping, invalidation, heads, pull, near-far, unpack
// (algorithm.md §5).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_FUSED_MIN_BLOCKS) fused_update(
    V n, V source,
    const O* __restrict__ out_ptr, const O* __restrict__ out_end, const V* __restrict__ out_index,
    const sssp::i32* __restrict__ out_weight,
    const O* __restrict__ in_ptr, const O* __restrict__ in_end, const V* __restrict__ in_index,
    const sssp::i32* __restrict__ in_weight,
    sssp::i64* distances, V* parents,
    sssp::u64* words, sssp::i32* stamp, sssp::i32* in_far, sssp::i32* flag, V* ancestor,
    V* candidates, V* frontier, V* near_a, V* near_b, V* far_a, V* far_b, V* near_log,
    const V* __restrict__ changed_from, const V* __restrict__ changed_to,
    const V* __restrict__ changed_count,
    const V* __restrict__ heads, V num_heads,
    sssp::u32 bits, sssp::u64 no_parent, sssp::u64 bound, sssp::u64 delta, sssp::u32 push_shift,
    sssp::i32 base_generation, sssp::i32 max_rounds, V solo_limit, V offer_above,
    sssp::FusedControl<V>* ctl) {
    using namespace sssp;
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    const GridStride gs;
    const Packing k{bits, no_parent};
    const CsrView<V, O> out{out_ptr, out_end, out_index, out_weight};
    const CsrView<V, O> in{in_ptr, in_end, in_index, in_weight};
    const i64 nn = static_cast<i64>(n);
    __shared__ fused::BlockSlots<V> slots;
#if SSSP_FUSED_CAPTURED
    // A captured launch (fused.py ENGINES_FUSED_CAPTURE): its arguments were fixed when the graph
    // was made, so the four that change from update to update (the solo limit follows the edge
    // count, the default delta the edge count and weight sum) come with the control block's
    // initial record, uploaded by the graph's first node (the arguments carry zeros).
    base_generation = ctl->base_generation;
    num_heads = ctl->num_heads;
    solo_limit = ctl->solo_limit;
    delta = ctl->delta;
#endif
    // The changed count is built on the device by the apply (weight increases are known there
    // only); every thread reads the same value, so the branch below stays uniform.
    const V num_changed = *changed_count;
    fused::phase_mark(fused::PHASE_START);

    // Pack the old tree (algorithm.md §5.3) and mark the roots (algorithm.md §5.4), judged against
    // the input parents.
    pack_tree<V>(nn, distances, parents, words, ancestor, k, bound, &ctl->overflow);
    mark_roots<V>(num_changed, changed_from, changed_to, parents, flag);
    grid.sync();
    fused::phase_mark(fused::PHASE_PACK_ROOTS);

    // Subtree invalidation by pointer jumping (algorithm.md §5.5), only with a non-empty changed
    // list.
    if (num_changed > 0) {
        for (i32 r = 0; r < max_rounds; ++r) {
            if (gs.first == 0) {
                ctl->active[(r + 1) % 3] = 0;
                ctl->rounds = r + 1;
            }
            pointer_jump_round<V>(nn, ancestor, flag, &ctl->active[r % 3]);
            grid.sync();
            fused::phase_mark(fused::PHASE_JUMP_ROUND);
            if (fused::block_read(&ctl->active[r % 3], &slots.active) == 0) break;
        }
    }

    // Invalidate (algorithm.md §5.6) and list the insertion heads (algorithm.md §5.7), with the
    // same generation.
    i32 generation = base_generation;  // g_inv
    invalidate_flagged<V>(nn, flag, words, stamp, generation, candidates, &ctl->candidates,
                          &ctl->invalidated);
    grid.sync();
    fused::phase_mark(fused::PHASE_INVALIDATE);
    list_heads<V>(num_heads, heads, source, stamp, generation, candidates, &ctl->candidates);
    grid.sync();
    fused::phase_mark(fused::PHASE_HEADS);

    // Pull (algorithm.md §5.8): every candidate takes its key-minimum over all in-neighbours; by
    // offers from every finite vertex when there are more than offer_above candidates (fused.py
    // offer_above; n: never). Uniform: every thread reads the same count.
    ++generation;  // g_pull
    const V candidate_count = fused::block_read(&ctl->candidates, &slots.count);
    if (candidate_count > offer_above) {
        offer_to_candidates<V, O>(nn, out, k, source, bound, words, stamp, generation, frontier,
                                  &ctl->frontier);
    } else {
        pull_candidates<V, O>(candidate_count, candidates, in, k, bound, words, stamp, generation,
                              frontier, &ctl->frontier);
    }
    grid.sync();
    fused::phase_mark(fused::PHASE_PULL);

    // First threshold and split (algorithm.md §5.9 (a), (b)) into near list 0 and far pile 0.
    ++generation;  // g0
    const V frontier_count = fused::block_read(&ctl->frontier, &slots.count);
    list_min_into<V>(frontier_count, frontier, words, k.bits, &ctl->minimum[0]);
    grid.sync();
    fused::phase_mark(fused::PHASE_FIRST_MIN);
    const u64 threshold =
        first_threshold(fused::block_read(&ctl->minimum[0], &slots.minimum), delta);
    split_frontier<V>(frontier_count, frontier, words, k, threshold, stamp, generation, in_far,
                      near_a, &ctl->near[0], far_a, &ctl->far[0]);
    grid.sync();
    fused::phase_mark(fused::PHASE_FIRST_SPLIT);

    // The near-far loop (algorithm.md §5.9 (c)).
    i32 iterations = 0, epochs = 0;
    i64 pushes = 0;
    fused::near_far_loop<V, O>(grid, gs, out, k, source, bound, delta, threshold, push_shift,
                               solo_limit, words, stamp, in_far, near_a, near_b, far_a, far_b,
                               near_log, ctl, slots, generation, iterations, epochs, pushes);

    // Unpack (algorithm.md §5.10): only changed entries are written, and counted.
    if (k.bits != 0) {
        unpack_changed<V>(nn, words, k, distances, parents, &ctl->affected);
    } else {
        fused::recover_parents<V, O>(grid, out, n, source, words, distances, parents, true,
                                     candidates, ancestor, ctl);
    }
    fused::phase_mark(fused::PHASE_END);
    fused::write_stats(gs, ctl, generation, iterations, epochs, pushes);
    fused::record_out<V>(ctl);
}

// ---------------------------------------------------------------------------------------------
// compute(): every word INF but the source's, the near-far loop from {s}, unpack everything
// (algorithm.md §6). The first split of the frontier {s} is done directly: d(s) = 0 < 0 + delta, so
// s is the only entry of near list 0 (the host sets ctl->near[0] = 1), claimed with the first
// generation.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_FUSED_MIN_BLOCKS) fused_compute(
    V n, V source,
    const O* __restrict__ out_ptr, const O* __restrict__ out_end, const V* __restrict__ out_index,
    const sssp::i32* __restrict__ out_weight,
    sssp::i64* distances, V* parents,
    sssp::u64* words, sssp::i32* stamp, sssp::i32* in_far,
    V* near_a, V* near_b, V* far_a, V* far_b, V* near_log,
    sssp::u32 bits, sssp::u64 no_parent, sssp::u64 bound, sssp::u64 delta, sssp::u32 push_shift,
    sssp::i32 base_generation, V solo_limit, sssp::FusedControl<V>* ctl) {
    using namespace sssp;
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    const GridStride gs;
    const Packing k{bits, no_parent};
    const CsrView<V, O> out{out_ptr, out_end, out_index, out_weight};
    const i64 nn = static_cast<i64>(n);
    __shared__ fused::BlockSlots<V> slots;

    fused::phase_mark(fused::PHASE_START);
    i32 generation = base_generation;  // g0
    seed_source_words(nn, static_cast<i64>(source), words, k);
    if (gs.first == 0) {
        near_a[0] = source;
        stamp[source] = generation;
    }
    grid.sync();
    fused::phase_mark(fused::PHASE_SEED);

    i32 iterations = 0, epochs = 0;
    i64 pushes = 0;
    fused::near_far_loop<V, O>(grid, gs, out, k, source, bound, delta, /*threshold=*/delta,
                               push_shift, solo_limit, words, stamp, in_far, near_a, near_b, far_a,
                               far_b, near_log, ctl, slots, generation, iterations, epochs, pushes);

    if (k.bits != 0) {
        unpack_all<V>(nn, words, k, distances, parents);
    } else {
        fused::recover_parents<V, O>(grid, out, n, source, words, distances, parents, false,
                                     static_cast<V*>(nullptr), static_cast<V*>(nullptr), ctl);
    }
    fused::phase_mark(fused::PHASE_END);
    fused::write_stats(gs, ctl, generation, iterations, epochs, pushes);
}
