// Device building blocks shared by the CUDA fused and operators engines (algorithm.md §5.1, §12).
//
// This header must compile under NVRTC (through CuPy, which receives it inlined into each engine's
// source string) and under nvcc (the CI compile check). NVRTC has no host standard library, so no
// <cstdint> or <limits>: the fixed-width aliases below are defined here, once.
//
// The control-block structs at the end are mirrored by NumPy structured dtypes in
// engines/sssp/cuda/workspace.py; tests/engines/test_cuda_sources.py checks that the offsets agree.
#ifndef SSSPAB_KERNELS_CUH
#define SSSPAB_KERNELS_CUH

namespace sssp {

// ---------------------------------------------------------------------------------------------
// Fixed-width aliases (LP64 on every CUDA host; NVRTC follows the same data model).
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;

static_assert(sizeof(i32) == 4 && sizeof(u32) == 4, "32-bit aliases");
static_assert(sizeof(i64) == 8 && sizeof(u64) == 8, "64-bit aliases");

// Every kernel of both engines runs blocks of this size (algorithm.md §5.1, §10.2).
#define SSSP_BLOCK 256
#define SSSP_FULL_MASK 0xffffffffu
// Items each thread of an O(n) pass (pack, pointer jumping, invalidation, unpack) loads before it
// uses any of them: the loads of one trip are independent, so a thread waits for one memory
// latency per SSSP_PASS_ILP items instead of one per item (issue 13).
#define SSSP_PASS_ILP 4
// The widest push group (a warp, 2^5 lanes): the cap of push_group_shift under the "group"
// expansion (engines/sssp/cuda/push.py MAX_GROUP_SHIFT).
#define SSSP_PUSH_GROUP_SHIFT 5
// Edges a lane relaxes per step under the "batched" push expansion (push_edges_batched).
#define SSSP_PUSH_EDGE_BATCH 4
// Compile-time variants (engines/sssp/cuda/runtime.py VARIANT_DEFINES): the launcher compiles a
// module per set of these, defined as 1 ahead of the source, so that a variant's code and
// registers exist only in its own module and the default kernels compile as without it.
// SSSP_PUSH_BATCHED: the "batched" push expansion (push.py module_defines); SSSP_FUSED_SOLO: the
// fused engine's solo push (fused.cu solo_push; fused.py ENGINES_FUSED_SOLO); SSSP_WIDE_PASSES:
// the wide O(n) passes of both engines (issue 34, step 2; passes.py ENGINES_WIDE_PASSES);
// SSSP_BLOCK_APPEND: the plain push's block-aggregated near-list appends, both engines (issue 34;
// appends.py ENGINES_BLOCK_APPEND);
// SSSP_FUSED_CAPTURED: fused_update reads its four per-update scalars from the control block, so
// one captured launch serves every update (issue 27; fused.py ENGINES_FUSED_CAPTURE);
// SSSP_PUSH_CHAIN: the plain push's lane-local chain following, both engines (issues 27, 34;
// chains.py ENGINES_PUSH_CHAIN); SSSP_MULTI_HOP_JUMP: pointer jumping follows up to
// SSSP_JUMP_HOPS ancestors a round, both engines (issues 27, 34; jumps.py ENGINES_MULTI_HOP_JUMP).
#ifndef SSSP_PUSH_BATCHED
#define SSSP_PUSH_BATCHED 0
#endif
#ifndef SSSP_FUSED_SOLO
#define SSSP_FUSED_SOLO 0
#endif
#ifndef SSSP_WIDE_PASSES
#define SSSP_WIDE_PASSES 0
#endif
#ifndef SSSP_BLOCK_APPEND
#define SSSP_BLOCK_APPEND 0
#endif
#ifndef SSSP_FUSED_CAPTURED
#define SSSP_FUSED_CAPTURED 0
#endif
#ifndef SSSP_PUSH_CHAIN
#define SSSP_PUSH_CHAIN 0
#endif
#ifndef SSSP_MULTI_HOP_JUMP
#define SSSP_MULTI_HOP_JUMP 0
#endif
// SSSP_PHASE_CLOCK: the fused kernel stamps the clock at every grid barrier, an instrument
// (fused.cu phase_mark; phase_clock.py, bench/fused_phases.py).
#ifndef SSSP_PHASE_CLOCK
#define SSSP_PHASE_CLOCK 0
#endif
// The ancestors an open vertex follows in one pointer-jumping round of the SSSP_MULTI_HOP_JUMP
// module (pointer_jump_round): the jump distance then grows about fourfold a round instead of
// twofold, so a tree of depth D settles in about log4 D rounds instead of log2 D, each with one
// grid barrier (fused) or one launch (operators) and two more dependent loads per item
// (tests/gpu/test_multi_hop_jump.py's HOPS is this number).
#define SSSP_JUMP_HOPS 3
// The wide passes' __restrict__: the qualifier in the SSSP_WIDE_PASSES module and nothing in the
// others, so the default kernels compile from the same tokens as before the variant (their cubins
// are byte-identical). Each use says why no other pointer of its function reaches the same array;
// values other blocks wrote in the same launch are still read with load_cg (restrict only lets
// one thread reorder its own loads and stores to different arrays; it never turns a load_cg into
// a read-only-cache load).
#if SSSP_WIDE_PASSES
#define SSSP_WIDE_RESTRICT __restrict__
#else
#define SSSP_WIDE_RESTRICT
#endif
// Block-aggregated appends to the next near list (issue 34; the SSSP_BLOCK_APPEND module variant,
// appends.py ENGINES_BLOCK_APPEND, independent of SSSP_WIDE_PASSES; the plain push only: the
// "batched" expansion's push_edges_batched appends entry by entry and is never compiled with it):
// a push iteration's new near-list entries go first into a queue in the block's shared memory,
// and the block reserves its slots of the list with one atomicAdd at the end of its share of the
// iteration. Without it, every group of lanes that lowers and claims a
// vertex together makes its own atomicAdd on the one near-count word, and on roadNet-PA safe50k
// (about 20,000 entries per iteration, 17.7 us per ops_push on the H200, bench/phase_breakdown.py)
// those same-address atomics serialize in one L2 slice. A full queue sends the rest straight to
// the list (append): any number of entries per block is correct. List order is schedule-dependent
// either way (algorithm.md §5.1). Everything of it sits under #if SSSP_BLOCK_APPEND, so the
// default kernels compile from the same tokens as without it.
#if SSSP_BLOCK_APPEND && SSSP_PUSH_BATCHED
#error "SSSP_BLOCK_APPEND combines with the plain push only (appends.py)"
#endif
#define SSSP_BLOCK_QUEUE 1024
// Lane-local chain following (issues 27, 34; the SSSP_PUSH_CHAIN module variant, chains.py
// ENGINES_PUSH_CHAIN; the plain push with the block appends only): of the vertices a lane lowers
// below the threshold in its share of a push iteration it keeps the first, instead of listing it
// for the next iteration, and lists the others; after its share it relaxes the kept vertex's
// out-edges itself, with the distance it gave it, keeps the first vertex that relaxation lowers
// below the threshold in the same way, lists the others, and so on, up to `hops` vertices
// followed; it lists the vertex where it stops (out of hops, or wider than `max_degree` out-edges:
// one lane walks a followed vertex's edges). On a road network a push iteration's front is a ring
// of chains, one hop per iteration; followed, it advances up to hops + 1 per iteration, and the
// iterations (each a grid barrier and a dependent chain of L2 round trips) fall:
// bench/chain_model.py models it on the CPU. Correct for any schedule (algorithm.md §5.12): every
// lowering of a word is followed by a relaxation of the vertex's out-edges from a distance at most
// the lowered one (by the lane, from exactly that distance, or in the next iteration from the word
// it then holds), which is all the fixpoint needs; a followed vertex is not claimed, so a later
// lowering in the same iteration still lists it.
#if SSSP_PUSH_CHAIN && (SSSP_PUSH_BATCHED || !SSSP_BLOCK_APPEND)
#error "SSSP_PUSH_CHAIN combines with the plain push and SSSP_BLOCK_APPEND only (chains.py)"
#endif
// The chain's limits travel in the push argument (push_shift) above the group shift's bits:
// bits 0-7 the widest group's shift, 8-15 the hops, 16-23 the widest vertex followed
// (chains.py push_argument).
#define SSSP_CHAIN_FIELD_BITS 8
#define SSSP_CHAIN_FIELD_MASK 0xffu
// Bit 31 of the push argument: in a module with SSSP_BLOCK_APPEND, the far-pile entries of a fused
// push iteration go through a block queue of their own too (push_list; appends.py FAR_ENV);
// ignored elsewhere (variants.run_choice sets it only for a fused run with the block appends).
#define SSSP_FAR_QUEUE_BIT 0x80000000u
// Bit 30 of the push argument: a grid push iteration relaxes without the racy pre-check of the
// neighbour's word (push_list's `filter`; push.py PRECHECK_ENV, issue 34: on a sparse graph's
// long lists the load lengthens each edge's dependent chain by an L2 round trip and rarely saves
// an atomic). Both engines, every module: the host sets it unless ENGINES_PUSH_PRECHECK=1.
#define SSSP_NO_PRECHECK_BIT 0x40000000u
// Edges of a followed vertex a lane relaxes per step (follow_chain): their loads issued together,
// then their atomics. Four made ptxas spill the solo and captured fused modules (make cuda-check).
#define SSSP_CHAIN_EDGE_BATCH 2
// Entries of the near-list length log (engines/sssp/cuda/push.py NEAR_LOG_CAPACITY): push
// iteration i of a run writes its near count at i while i is below it (push_profile).
#define SSSP_NEAR_LOG_CAPACITY 65536

// The INF word: all 64 bits set. An unreachable vertex holds exactly this word (algorithm.md §4.1).
static constexpr u64 INF_WORD = ~0ull;
// INF = 2^61 - 1 and INF/2 (integer division), as in engines/sssp/packing.py
// (algorithm.md §2, §3.1).
static constexpr i64 INF_DISTANCE = (1ll << 61) - 1;
[[maybe_unused]] static constexpr i64 INF_HALF = INF_DISTANCE / 2;
// The empty value of a 64-bit minimum slot.
static constexpr u64 EMPTY_MIN = ~0ull;

// ---------------------------------------------------------------------------------------------
// Packed words (algorithm.md §4). `bits` is b (0 in distance-only mode) and `no_parent` is 2^b - 1
// (0 in distance-only mode). Callers pass both as kernel arguments: the packing rule lives in
// packing.py alone.
struct Packing {
    u32 bits;
    u64 no_parent;
};

// pack(d, p) = (d << b) | field, field = p, or no_parent for p = -1. Masking the two's-complement
// parent with no_parent yields no_parent for -1 and p itself for 0 <= p < n <= no_parent; in
// distance-only mode no_parent = 0 and the word is the plain distance.
__device__ __forceinline__ u64 pack(const Packing& k, u64 d, i64 parent) {
    return (d << k.bits) | (static_cast<u64>(parent) & k.no_parent);
}

// The distance of a word, the INF word counting as the largest value (spec: "INF for the INF
// word"), so comparisons against thresholds and candidate distances never mistake it for finite.
__device__ __forceinline__ u64 word_distance(const Packing& k, u64 word) {
    return word == INF_WORD ? ~0ull : (word >> k.bits);
}

// The parent id of a finite packed word; -1 for "no parent". Meaningless in distance-only mode.
__device__ __forceinline__ i64 word_parent(const Packing& k, u64 word) {
    const u64 field = word & k.no_parent;
    return field == k.no_parent ? -1ll : static_cast<i64>(field);
}

// Unpack a word to the output pair: the INF word gives (INF, -1) (algorithm.md §4.1).
template <typename V>
__device__ __forceinline__ void unpack(const Packing& k, u64 word, i64& distance, V& parent) {
    if (word == INF_WORD) {
        distance = INF_DISTANCE;
        parent = V(-1);
    } else {
        distance = static_cast<i64>(word >> k.bits);
        parent = static_cast<V>(word_parent(k, word));
    }
}

// The largest value of a vertex type: the "no tight in-edge found yet" marker of the
// distance-only parent recovery (algorithm.md §4.4).
template <typename V> struct VertexMax;
template <> struct VertexMax<i32> { static constexpr i32 value = 0x7fffffff; };
template <> struct VertexMax<i64> { static constexpr i64 value = 0x7fffffffffffffffll; };

// ---------------------------------------------------------------------------------------------
// Coherent loads. L1 is not coherent across blocks: every value another block may have written
// in the same launch (words, ancestors, flags, lists, control counters) is read through L2.
template <typename T>
__device__ __forceinline__ T load_cg(const T* p) { return __ldcg(p); }

// Atomics on vertex-type counters, which are int32 or int64 (algorithm.md §5.2, §12.3).
__device__ __forceinline__ i32 atomic_add(i32* p, i32 v) { return atomicAdd(p, v); }
__device__ __forceinline__ i64 atomic_add(i64* p, i64 v) {
    return static_cast<i64>(
        atomicAdd(reinterpret_cast<u64*>(p), static_cast<u64>(v)));
}
__device__ __forceinline__ u64 atomic_add(u64* p, u64 v) { return atomicAdd(p, v); }
__device__ __forceinline__ i32 atomic_min(i32* p, i32 v) { return atomicMin(p, v); }
__device__ __forceinline__ i64 atomic_min(i64* p, i64 v) { return atomicMin(p, v); }
__device__ __forceinline__ u64 atomic_min(u64* p, u64 v) { return atomicMin(p, v); }

// ---------------------------------------------------------------------------------------------
// Warp helpers.
__device__ __forceinline__ u32 lane_id() { return threadIdx.x & 31u; }

// claim(stamp, v, g): atomic exchange of stamp[v] with g; true iff the old value was not g.
// Deduplicates list insertions per generation (algorithm.md §5.1).
__device__ __forceinline__ bool claim(i32* stamp, i64 v, i32 generation) {
    return atomicExch(stamp + v, generation) != generation;
}

// append(counter): warp-aggregated slot reservation for divergent code. The threads that arrive
// together elect their lowest lane as leader, which reserves the whole group's slots with one
// atomicAdd; each thread gets base + its rank among the group. List order is therefore
// schedule-dependent, and nothing may depend on it (algorithm.md §5.1).
template <typename C>
__device__ __forceinline__ C append(C* counter) {
    const u32 group = __activemask();
    const u32 lane = lane_id();
    const u32 leader = static_cast<u32>(__ffs(group)) - 1u;
    const u32 rank = static_cast<u32>(__popc(group & ((1u << lane) - 1u)));
    C base = 0;
    if (lane == leader) base = atomic_add(counter, static_cast<C>(__popc(group)));
    base = __shfl_sync(group, base, static_cast<int>(leader));
    return base + static_cast<C>(rank);
}

// warp_min_into(value, slot): full-mask shuffle-down minimum, then one atomicMin by lane 0,
// skipped for the empty value. All 32 lanes must call it (after a grid-stride loop, never inside
// divergent code).
__device__ __forceinline__ void warp_min_into(u64 value, u64* slot) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const u64 other = __shfl_down_sync(SSSP_FULL_MASK, value, offset);
        value = other < value ? other : value;
    }
    if (lane_id() == 0 && value != EMPTY_MIN) atomicMin(slot, value);
}

// warp_sum_into(value, slot): full-mask shuffle-down sum, then one atomicAdd by lane 0, skipped
// for zero. For `invalidated` (vertex type) and `affected` (u64). All 32 lanes must call it.
template <typename T>
__device__ __forceinline__ void warp_sum_into(T value, T* slot) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        value += __shfl_down_sync(SSSP_FULL_MASK, value, offset);
    }
    if (lane_id() == 0 && value != T(0)) atomic_add(slot, value);
}

// The block's threads copy `count` words from `from` to `to`, one word a thread per trip: the mapped
// records' copies between the device and pinned host memory (fused.cu fused_control_in and
// record_out, engines/graph/device_apply.cu apply_record_out). Every access is volatile: a host
// word is read or written over the bus each time, and a device word that another block wrote is
// read from L2, never from a stale L1 line (as load_cg would).
template <typename T>
__device__ __forceinline__ void block_copy_words(volatile T* to, const volatile T* from, int count) {
    for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) {
        to[i] = from[i];
    }
}

// The block-wide exclusive prefix sum of `value` over the threads in index order, and the block's
// sum in `block_total` (the same in every thread). Every thread of the block must call it
// (barriers); blockDim.x is a multiple of 32. `warp_sums` is shared scratch of one slot per warp,
// read after the last barrier here: a caller that scans again must pass a barrier first. One copy
// for the device apply's touched-rows scan and change lists (i64 row changes, i32 counts), the
// invalidation's block slots (vertex counts) and the splits' (block_append_split: u32, two 16-bit
// counts).
template <typename T>
__device__ __forceinline__ T block_exclusive_scan(T value, T* warp_sums, T& block_total) {
    const int lane = lane_id();
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int num_warps = static_cast<int>(blockDim.x >> 5);
    T inclusive = value;  // within the warp
    for (int off = 1; off < 32; off <<= 1) {
        const T other = __shfl_up_sync(SSSP_FULL_MASK, inclusive, off);
        if (lane >= off) inclusive += other;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warp totals
        T upto = lane < num_warps ? warp_sums[lane] : T(0);
        for (int off = 1; off < 32; off <<= 1) {
            const T other = __shfl_up_sync(SSSP_FULL_MASK, upto, off);
            if (lane >= off) upto += other;
        }
        if (lane < num_warps) warp_sums[lane] = upto;
    }
    __syncthreads();
    block_total = warp_sums[num_warps - 1];
    return (warp > 0 ? warp_sums[warp - 1] : T(0)) + (inclusive - value);
}

// ---------------------------------------------------------------------------------------------
// Grid-stride iteration over [0, count): 64-bit indices so that `i + stride` cannot overflow
// near 2^31 items.
struct GridStride {
    i64 first;
    i64 stride;
    __device__ __forceinline__ GridStride()
        : first(static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x),
          stride(static_cast<i64>(gridDim.x) * blockDim.x) {}
    __device__ __forceinline__ GridStride(i64 first_item, i64 step)
        : first(first_item), stride(step) {}
};

// The iteration of one block alone over [0, count) (the fused engine's solo push, fused.cu).
__device__ __forceinline__ GridStride block_stride() {
    return GridStride(static_cast<i64>(threadIdx.x), static_cast<i64>(blockDim.x));
}

// ---------------------------------------------------------------------------------------------
// A device view of a CSR (out-CSR or in-CSR) with one weight column. The mirror's arrays are
// never written during a launch, so plain (read-only cache) loads are safe here.
template <typename V, typename O>
struct CsrView {
    const O* ptr;     // row starts: row v's entries begin at ptr[v]
    const O* ends;    // row ends: row v's entries end before ends[v]
    const V* index;   // neighbours (out: heads; in: tails)
    const i32* weight;  // weights of the run's objective, in the same order

    // A row is [ptr[v], ends[v]). A packed CSR passes ends = ptr + 1 (each row ends where the next
    // begins: the same addresses as reading ptr[v + 1]); the engines read rows through these two
    // alone, so a layout whose rows keep room to grow in place (issue 27: an apply without
    // whole-array moves) needs no other change in them.
    __device__ __forceinline__ O begin(i64 v) const { return __ldg(ptr + v); }
    __device__ __forceinline__ O end(i64 v) const { return __ldg(ends + v); }
    __device__ __forceinline__ V neighbour(O e) const { return __ldg(index + e); }
    __device__ __forceinline__ u64 weight_of(O e) const {
        return static_cast<u64>(__ldg(weight + e));
    }
};

// One step of a lane's walk over a vertex's edges first, first + stride, ... (B of them, those
// before end): their neighbours and weights loaded together, before any is used, then the tests
// every offer makes. live[b]: the edge is in range, does not lead into the source (never relaxed)
// and its offer du + weight is within the bound (never packed above it, algorithm.md §4.2). A dead
// slot holds the source and du. 64-bit positions: with 32-bit offsets a step's last position must
// not wrap near 2^31 - 1. The chains (follow_chain) and the pull by offers (offer_to_candidates)
// walk their edges with it; the batched push (push_edges_batched) keeps its own loop, which packs
// each offer as it goes (through this helper its module compiled to other code).
template <int B, typename V, typename O>
__device__ __forceinline__ void load_edge_step(const CsrView<V, O>& out, i64 first, i64 end,
                                               i64 stride, u64 du, V source, u64 bound,
                                               V (&w)[B], u64 (&nd)[B], bool (&live)[B]) {
#pragma unroll
    for (int b = 0; b < B; ++b) {
        const i64 e = first + b * stride;
        live[b] = e < end;
        w[b] = live[b] ? out.neighbour(static_cast<O>(e)) : source;
        nd[b] = du + (live[b] ? out.weight_of(static_cast<O>(e)) : 0ull);
        live[b] = live[b] && w[b] != source && nd[b] <= bound;
    }
}

// ---------------------------------------------------------------------------------------------
// Control blocks (algorithm.md §5.2). Engine-internal layouts with fixed offsets; mirrored on the
// host by the NumPy dtypes of workspace.py (fused_control_dtype, operators_control_dtype). Counters
// have the width of the vertex type V; minimum, affected and pushes are 64-bit.
//
// The fused layout keeps the near-list counts, the far-pile counts and the minimum in three
// rotating slots each (like `active`), so that a push iteration needs one grid barrier: the slot
// zeroed during a phase is neither the one being read nor the one being appended to (fused.cu).
template <typename V>
struct FusedControl {
    V candidates;      // candidates list length (invalidated vertices + distinct non-source heads)
    V frontier;        // frontier list length (candidates whose distance decreased in the pull)
    V near[3];         // near-list counts, rotating by push iteration
    V far[3];          // far-pile counts, rotating by epoch
    i32 active[3];     // pointer-jumping activity, rotating by round
    i32 overflow;      // an input distance negative or above the bound (invalid_input)
    V invalidated;     // exact number of invalidated vertices
    i32 rounds;        // pointer-jumping rounds started
    i32 iterations;    // push iterations
    i32 epochs;        // threshold raises
    i32 generation;    // the last generation the kernel used
    i64 pushes;        // sum of near-list lengths over the iterations
    u64 minimum[3];    // minimum slots: [0] first threshold, then rotating by epoch
    u64 affected;      // vertices whose (distance, parent) changed
    i32 solo_done;     // the last solo stretch's iterations, for every block (fused.cu)
    i32 solo_runs;     // solo stretches: each costs one grid barrier
    i32 solo_iterations;  // push iterations run by one block alone, without a grid barrier
    // Written by the host into the initial record, read by a captured fused_update
    // (SSSP_FUSED_CAPTURED) instead of its arguments of the same names; never written on the device.
    i32 base_generation;  // the update's first generation (workspace next_generation)
    V num_heads;          // the insertion heads listed in heads
    V solo_limit;         // the solo push's longest near list (fused.py solo_limit: follows the edge count)
    u64 delta;            // the bucket width (the default follows the edge count and weight sum)
    // Mapped records (mapped.py ENGINES_MAPPED_RECORDS): the pinned host record the last block to
    // finish copies this block into (fused.cu record_out; 0: none, the host copies it), written by
    // the host into the initial record, and the blocks that finished the run, counted on the device.
    u64 host_record;
    u32 exited;
};

// The operators layout (algorithm.md §5.2 [ops]); the operators engine owns its use.
template <typename V>
struct OperatorsControl {
    u64 minimum;
    u64 threshold;
    u64 affected;
    V candidates;
    V frontier;
    V near[2];
    V far[2];
    V invalidated;
    i32 overflow;
    i32 active[65];  // ceil(log2 n) + 1 pointer-jumping rounds for any n < 2^63
    // The device-driven loop's state (operators.cu ops_loop*): the phase the next launch runs,
    // the near-list and far-pile slots, the last generation used, the counters the engine
    // reports, the length of the list the phase reads, and the finished blocks of the current
    // launch (the last one decides the next phase).
    i32 phase;  // LoopPhase
    i32 near_slot;
    i32 far_slot;
    i32 generation;
    i32 iterations;
    i32 epochs;
    V step_count;
    i64 pushes;
    i32 loop_done_blocks;
    i32 loop_fault;  // a list count outside [0, n]: the loop stopped early
    // The run's constants (ops_loop_init), so that a captured launch takes only buffer addresses.
    u64 loop_delta;
    u64 loop_bound;
    u64 loop_no_parent;
    u32 loop_bits;
    V loop_source;
    V loop_n;
    // How the loop ends (ops_loop_init): the first phase after the near-far loop (the unpack or
    // the parent recovery, counting `affected` for an update), the result's arrays it writes, and
    // the update's post-commit input check taken on the device (0, or the error found: the loop
    // then ran nothing and the host raises).
    i32 loop_finish;  // LoopPhase
    i32 loop_count_affected;
    i32 loop_input_error;  // LoopInputError
    i64* loop_distances;
    V* loop_parents;
    // The push expansion's widest group, as a shift (push_group_shift's cap; ops_loop_init).
    u32 loop_push_shift;
    // An update's values that change from batch to batch, uploaded with the block's initial record
    // in the captured start (operators.py CAPTURED_START_ENV), so that the update's launches up to
    // the device loop take only buffer addresses and constants and replay as one captured graph:
    // the generation of the invalidation and the heads, the device loop's first generation, the
    // insertion-head count and delta (the default follows the edge count and the weight sum; read
    // where the kernel's argument is -1).
    i32 update_generation;
    i32 update_loop_generation;
    V update_heads;
    u64 update_delta;
};

// ---------------------------------------------------------------------------------------------
// The phases of an update and of compute() (algorithm.md §5.3-§5.10, §6), each written once and
// used by both engines: the fused kernel calls them with grid barriers between (fused.cu), each
// operators kernel is a thin wrapper around one (operators.cu). A phase is a grid-stride loop over
// its items; full-mask warp collectives come after the loop, so every lane calls them. Values
// another block may have written earlier in a fused launch (words, flags, ancestors, lists) are
// read through L2 (load_cg); for the operators engine, where a kernel boundary orders them, that
// costs nothing extra. Counters are passed as pointers into the engine's own control block.

__device__ __forceinline__ u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }

// Pack the old tree (algorithm.md §5.3) and start the pointer-jumping ancestors at the input
// parents. An input distance below INF/2 that is negative or above the bound is invalid_input: it
// sets *overflow (the host raises after the run) and its word becomes INF; nothing stops early.
template <typename V>
__device__ __forceinline__ void pack_tree(i64 n, const i64* __restrict__ distances,
                                          const V* __restrict__ parents, u64* __restrict__ words,
                                          V* __restrict__ ancestor, const Packing& k, u64 bound,
                                          i32* overflow) {
    const GridStride g;
    bool invalid = false;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        i64 d[SSSP_PASS_ILP];
        V p[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            d[j] = v < n ? distances[v] : 0;
            p[j] = v < n ? parents[v] : V(-1);
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            if (v >= n) break;
            u64 word = INF_WORD;
            if (d[j] < INF_HALF) {
                if (d[j] < 0 || static_cast<u64>(d[j]) > bound) {
                    invalid = true;
                } else {
                    word = pack(k, static_cast<u64>(d[j]), static_cast<i64>(p[j]));
                }
            }
            words[v] = word;
            ancestor[v] = p[j];
        }
    }
    if (invalid) *overflow = 1;
}

// Roots (algorithm.md §5.4): the heads of changed edges that are tree edges of the input parents as
// given.
template <typename V>
__device__ __forceinline__ void mark_roots(V num_changed, const V* changed_from,
                                           const V* changed_to, const V* parents, i32* flag) {
    const GridStride g;
    for (i64 i = g.first; i < static_cast<i64>(num_changed); i += g.stride) {
        const V to = changed_to[i];
        if (parents[to] == changed_from[i]) flag[to] = 1;
    }
}

// One pointer-jumping round (algorithm.md §5.5): a vertex whose ancestor is flagged is flagged, the
// others jump to their ancestor's ancestor. A warp with a vertex still jumping sets *active, the
// round's activity slot (the caller's decision to go on, and the parent-cycle test of the last
// round). Ancestors and flags change under concurrent blocks: coherent loads.
// SSSP_WIDE_PASSES: ancestor, flag and active are three allocations in both engines (the
// workspace's ancestor and flag arrays, a control-block field), each read and written through its
// own pointer only, so they are __restrict__.
// SSSP_MULTI_HOP_JUMP: an open vertex repeats the step up to SSSP_JUMP_HOPS times in the round,
// from the ancestor it just jumped to, and writes only where it ends (flagged, or its last
// ancestor). The flagged set is the same: a vertex jumps past an ancestor only after reading it
// unflagged, a root's flag is set before the first round, so no ancestor pointer ever passes a
// root, and a chain that reaches one ends flagged; a chain that reaches -1 ends there. Every
// value a read can see (the round's start or a later one) is an ancestor on the same chain, so
// each round takes a vertex at least as far as the one-hop round does: a tree that is not a
// parent cycle still settles within ceil(log2 n) + 1 rounds, and a cycle still jumps in the last.
template <typename V>
__device__ __forceinline__ void pointer_jump_round(i64 n, V* SSSP_WIDE_RESTRICT ancestor,
                                                   i32* SSSP_WIDE_RESTRICT flag,
                                                   i32* SSSP_WIDE_RESTRICT active) {
    const GridStride g;
    bool jumping = false;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        V a[SSSP_PASS_ILP];
        bool open[SSSP_PASS_ILP];  // in range, with an ancestor, not flagged yet
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            a[j] = v < n ? load_cg(ancestor + v) : V(-1);
            open[j] = v < n && load_cg(flag + v) == 0;
        }
        // The ancestor's flag and ancestor, loaded together for every open item.
        i32 up_flag[SSSP_PASS_ILP];
        V up[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            open[j] = open[j] && a[j] >= 0;
            up_flag[j] = open[j] ? load_cg(flag + a[j]) : 0;
            up[j] = open[j] ? load_cg(ancestor + a[j]) : V(-1);
        }
#if SSSP_MULTI_HOP_JUMP
        // More hops for every open item that jumped to a real ancestor: that ancestor's flag and
        // ancestor, loaded together, then the same step from there.
#pragma unroll
        for (int hop = 1; hop < SSSP_JUMP_HOPS; ++hop) {
            bool more[SSSP_PASS_ILP];
            i32 next_flag[SSSP_PASS_ILP];
            V next[SSSP_PASS_ILP];
#pragma unroll
            for (int j = 0; j < SSSP_PASS_ILP; ++j) {
                more[j] = open[j] && up_flag[j] == 0 && up[j] >= 0;
                next_flag[j] = more[j] ? load_cg(flag + up[j]) : 0;
                next[j] = more[j] ? load_cg(ancestor + up[j]) : V(-1);
            }
#pragma unroll
            for (int j = 0; j < SSSP_PASS_ILP; ++j) {
                if (!more[j]) continue;
                if (next_flag[j] != 0) {
                    up_flag[j] = 1;  // flagged at this hop
                } else {
                    up[j] = next[j];
                }
            }
        }
#endif
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            if (!open[j]) continue;
            const i64 v = base + j * g.stride;
            if (up_flag[j] != 0) {
                flag[v] = 1;
            } else {
                ancestor[v] = up[j];
                jumping = jumping || up[j] >= 0;
            }
        }
    }
    if (__any_sync(SSSP_FULL_MASK, jumping) && lane_id() == 0) *active = 1;
}

// Invalidate (algorithm.md §5.6): every flagged vertex gets the INF word, the invalidation
// generation and a candidates slot; its flag is cleared for the next run. *invalidated gets the
// exact count, summed per warp, never the candidates counter (the heads keep appending to it).
// The slots are reserved per block, not per warp: a first sweep counts each thread's flagged
// items, a block-wide scan places them, one atomicAdd reserves the block's slots, and a second
// sweep over the same items writes them. With one atomicAdd per warp on the one candidates word,
// a large invalidation (roadNet-PA safe50k: 955 k of 1.09 M vertices, about 30 k warps) queued
// its atomics in one L2 slice, and the phase took 34 us on an H100 (bench/fused_phases.py); the
// second sweep's flag loads cost less than that. Only this thread changes its items' flags
// between the sweeps, so both read the same ones. List order is schedule-dependent either way
// (algorithm.md §5.1). Every thread of the block must call it (barriers): both engines do.
// SSSP_WIDE_PASSES: flag, words, stamp and candidates are four workspace arrays (both engines), each
// reached through its own pointer only: __restrict__. The two counters are fields of the control
// block, which no array overlaps; they stay plain.
template <typename V>
__device__ __forceinline__ void invalidate_flagged(i64 n, i32* SSSP_WIDE_RESTRICT flag,
                                                   u64* SSSP_WIDE_RESTRICT words,
                                                   i32* SSSP_WIDE_RESTRICT stamp,
                                                   i32 generation, V* SSSP_WIDE_RESTRICT candidates,
                                                   V* candidate_count, V* invalidated) {
    const GridStride g;
    V mine = 0;  // this thread's flagged items
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            mine += (v < n && load_cg(flag + v) != 0) ? V(1) : V(0);
        }
    }
    __shared__ V warp_sums[SSSP_BLOCK / 32];  // block_exclusive_scan's scratch
    __shared__ V block_first;                 // the block's first candidates slot
    V block_total;
    V at = block_exclusive_scan(mine, warp_sums, block_total);
    if (threadIdx.x == 0 && block_total > 0) block_first = atomic_add(candidate_count, block_total);
    __syncthreads();
    if (mine > 0) {
        at += block_first;
        for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
            bool flagged[SSSP_PASS_ILP];
#pragma unroll
            for (int j = 0; j < SSSP_PASS_ILP; ++j) {
                const i64 v = base + j * g.stride;
                flagged[j] = v < n && load_cg(flag + v) != 0;
            }
#pragma unroll
            for (int j = 0; j < SSSP_PASS_ILP; ++j) {
                if (!flagged[j]) continue;
                const i64 v = base + j * g.stride;
                flag[v] = 0;
                words[v] = INF_WORD;
                stamp[v] = generation;
                candidates[at++] = static_cast<V>(v);
            }
        }
    }
    warp_sum_into(mine, invalidated);
}

// Insertion heads (algorithm.md §5.7), with the invalidation's generation: a just-invalidated head
// is not listed twice, a repeated head once, the source never.
template <typename V>
__device__ __forceinline__ void list_heads(V num_heads, const V* heads, V source, i32* stamp,
                                           i32 generation, V* candidates, V* candidate_count) {
    const GridStride g;
    for (i64 i = g.first; i < static_cast<i64>(num_heads); i += g.stride) {
        const V v = heads[i];
        if (v != source && claim(stamp, v, generation)) {
            candidates[append(candidate_count)] = v;
        }
    }
}

// Lanes per near-list vertex in a push iteration (algorithm.md §5.9 (c), issue 26), as a shift: the
// widest power of two up to 2^max_shift with count x width <= threads, at least one. max_shift is
// the run's push expansion (0: "vertex", one lane walks a vertex's out-edges;
// SSSP_PUSH_GROUP_SHIFT: "group", up to a warp). A short list (the usual case: a few hundred
// vertices against a grid of ~10^5 threads) spreads each vertex's out-edges over a warp, so an
// iteration waits for about one dependent edge chain instead of the largest out-degree's; a list
// that fills the grid keeps one lane per vertex. Uniform: every thread computes it from the same
// count, grid and cap. The result does not depend on it (algorithm.md §5.12).
// engines/sssp/cuda/push.py group_shift is the same rule (the operators host loop sizes its launch
// with it).
__host__ __device__ __forceinline__ u32 push_group_shift(i64 count, i64 threads, u32 max_shift) {
    u32 shift = max_shift;
    while (shift > 0 && (count << shift) > threads) --shift;
    return shift;
}

// Pull (algorithm.md §5.8): each candidate takes the key-minimum of its own word and every
// in-neighbour offer (u's distance + w, parent u), offers above the bound dropped. A strictly
// smaller distance lists it in the frontier, once per pull generation. Other candidates' words may
// be lowered at the same time; the result does not depend on it (algorithm.md §5.12).
//
// A candidate's in-edges are spread over a group of 2^shift lanes of one warp, as wide as the list
// and the grid allow (push_group_shift, the push's rule), each lane taking edges lane, lane +
// width, ... and the group meeting on its minimum by shuffles: on a dense graph one lane walking
// forty in-edges one dependent load after another held the phase (a 4,039-vertex graph with 176 k
// arcs: 31 of its update's 78 us, H100, bench/fused_phases.py). A list that fills the grid keeps
// one lane per candidate, the loop it had before. The minimum is the same whatever the grouping.
template <typename V, typename O>
__device__ __forceinline__ void pull_candidates(V count, const V* candidates,
                                                const CsrView<V, O>& in, const Packing& k,
                                                u64 bound, u64* words, i32* stamp, i32 generation,
                                                V* frontier, V* frontier_count) {
    const GridStride g;
    const u32 shift = push_group_shift(static_cast<i64>(count), g.stride, SSSP_PUSH_GROUP_SHIFT);
    const u32 width = 1u << shift;
    const u32 lane = lane_id() & (width - 1u);
    // the group's lanes (a group never straddles a warp: the width divides 32 and blocks hold whole
    // warps); they take the same candidate, so all of them reach the shuffles below
    static_assert(SSSP_BLOCK % 32 == 0, "the pull's lane groups need blocks of whole warps");
    const u32 group = width == 32u ? SSSP_FULL_MASK
                                   : ((1u << width) - 1u) << (lane_id() & ~(width - 1u));
    for (i64 i = g.first >> shift; i < static_cast<i64>(count); i += g.stride >> shift) {
        const V v = load_cg(candidates + i);
        const u64 current = load_cg(words + v);
        u64 best = current;
        // 64-bit positions: with 32-bit offsets e + width must not wrap near 2^31 - 1
        const i64 end = static_cast<i64>(in.end(v));
        for (i64 e = static_cast<i64>(in.begin(v)) + lane; e < end; e += width) {
            // The weight loads with the neighbour and one test follows both: behind `if (x ==
            // INF_WORD) continue` ptxas issued it only once the word had come back. An INF word's
            // sum is computed and dropped by the test (distance-only, bits 0, it wraps: unsigned,
            // so defined).
            const V u = in.neighbour(static_cast<O>(e));
            const u64 weight = in.weight_of(static_cast<O>(e));
            const u64 x = load_cg(words + u);
            const u64 nd = (x >> k.bits) + weight;
            if ((x != INF_WORD) & (nd <= bound)) best = min_u64(best, pack(k, nd, static_cast<i64>(u)));
        }
        for (u32 offset = width >> 1; offset > 0; offset >>= 1) {
            best = min_u64(best, __shfl_xor_sync(group, best, offset));
        }
        if (lane == 0 && best < current) {
            const u64 old = atomicMin(words + v, best);
            if (word_distance(k, best) < word_distance(k, old) && claim(stamp, v, generation)) {
                frontier[append(frontier_count)] = v;
            }
        }
    }
}

// The pull by offers (issue 34; algorithm.md §5.8, §5.12 item 3), for an update whose candidates
// are most of the graph: instead of each candidate reading every in-neighbour's word, every vertex
// with a finite word offers along its out-edges to the neighbours that are candidates, with an
// atomicMin each. A candidate ends with the key-minimum of its own word and the offers of its
// in-neighbours whose words were finite when they offered, as a pull that read them then: the pull's
// own race (another candidate's word may or may not be lowered yet) in the other direction, and a
// vertex lowered during the phase is in the frontier, so it offers again in the push (the result
// does not depend on it, algorithm.md §5.12). A strictly lower distance lists the candidate in the
// frontier, once, by the pull's generation, as the pull does. The candidates are the vertices
// stamped with the invalidation's generation (g_pull - 1: the invalidation and the heads claim with
// it), or with g_pull once listed here; every other stamp is older (algorithm.md §5.1).
//
// It reads every vertex's word and row bounds (SSSP_PASS_ILP at a time) and the out-edges of the
// finite ones, where the pull reads the in-edges of every candidate and the word of each
// in-neighbour: roadNet-PA safe50k invalidates 955 k of its 1.09 M vertices, and the pull over
// them took 70-77 us of its fused update (H100, bench/fused_phases.py). Not inlined: the edge
// walk's registers stay out of the persistent kernel's allocation (split_pile's comment says why).
template <typename V, typename O>
__device__ __noinline__ void offer_to_candidates(i64 n, const CsrView<V, O>& out, const Packing& k,
                                                 V source, u64 bound, u64* words, i32* stamp,
                                                 i32 generation, V* frontier, V* frontier_count) {
    const GridStride g;
    const i32 candidate_from = generation - 1;  // the invalidation's generation
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        u64 x[SSSP_PASS_ILP];
        O first[SSSP_PASS_ILP];
        O last[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 u = base + j * g.stride;
            const bool in_range = u < n;
            x[j] = in_range ? load_cg(words + u) : INF_WORD;
            first[j] = in_range ? out.begin(u) : O(0);
            last[j] = in_range ? out.end(u) : O(0);
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            if (x[j] == INF_WORD) continue;  // an invalidated (or unreached) vertex offers nothing
            const i64 u = base + j * g.stride;
            const u64 du = x[j] >> k.bits;
            const i64 end = static_cast<i64>(last[j]);
            for (i64 e0 = static_cast<i64>(first[j]); e0 < end; e0 += SSSP_PUSH_EDGE_BATCH) {
                // a step's loads issued together: the neighbours and weights, then their stamps
                V w[SSSP_PUSH_EDGE_BATCH];
                u64 nd[SSSP_PUSH_EDGE_BATCH];
                bool live[SSSP_PUSH_EDGE_BATCH];
                load_edge_step(out, e0, end, 1, du, source, bound, w, nd, live);
#pragma unroll
                for (int b = 0; b < SSSP_PUSH_EDGE_BATCH; ++b) {
                    live[b] = live[b] && load_cg(stamp + w[b]) >= candidate_from;
                }
#pragma unroll
                for (int b = 0; b < SSSP_PUSH_EDGE_BATCH; ++b) {
                    if (!live[b]) continue;
                    const u64 old = atomicMin(words + w[b], pack(k, nd[b], u));
                    if (nd[b] < word_distance(k, old) && claim(stamp, w[b], generation)) {
                        frontier[append(frontier_count)] = w[b];
                    }
                }
            }
        }
    }
}

// The minimum distance over the finite words of a list into *slot (algorithm.md §5.9 (a): the
// frontier; an epoch: the far pile, whose words are all finite).
template <typename V>
__device__ __forceinline__ void list_min_into(V length, const V* list, const u64* words, u32 bits,
                                              u64* slot) {
    const GridStride g;
    u64 local = EMPTY_MIN;
    for (i64 i = g.first; i < static_cast<i64>(length); i += g.stride) {
        const u64 x = load_cg(words + load_cg(list + i));
        local = min_u64(local, x == INF_WORD ? EMPTY_MIN : x >> bits);
    }
    warp_min_into(local, slot);
}

// The first threshold (algorithm.md §5.9 (a)): the frontier's minimum (0 when it is empty) + delta.
__device__ __forceinline__ u64 first_threshold(u64 minimum, u64 delta) {
    return (minimum == EMPTY_MIN ? 0ull : minimum) + delta;
}

// An epoch's raise (algorithm.md §5.9 (c)): max(threshold, the pile's minimum) + delta. An epoch
// starts only with a non-empty pile, whose words are all finite (they were lowered to enter it), so
// the minimum is never the empty value.
__device__ __forceinline__ u64 raised_threshold(u64 threshold, u64 minimum, u64 delta) {
    return (threshold > minimum ? threshold : minimum) + delta;
}

// The block's slots of two lists for one trip of a split (split_frontier, split_pile): `mine` is
// this thread's entry, 1 for list a, 1 << 16 for list b, 0 for neither (counts per block stay
// below 2^16: blockDim.x <= 1024, so the halves never carry into each other). One block scan
// ranks both lists at once, thread 0 reserves each non-empty range with one atomicAdd, and the
// thread writes v at its list's base + its rank. Per-warp appends (append) made one atomicAdd per
// warp and list on one count word, and same-address atomics queue in one L2 slice (the
// invalidation's 30 k of them took 34 us on an H100: invalidate_flagged); per block there are up
// to SSSP_BLOCK / 32 times fewer. Every thread of the block must call it, as often as the others
// (barriers): the splits' trip counts are the same over a block. It may be called again at once:
// the scan's scratch is read before this call's last barrier, which the next call's writes follow;
// the bases are read after it, but the next call's thread 0 writes them only after that call's
// scan, whose barriers every thread reaches after its reads here.
template <typename V>
__device__ __forceinline__ void block_append_split(u32 mine, V v, V* a_list, V* a_count,
                                                   V* b_list, V* b_count) {
    static_assert(SSSP_BLOCK < (1 << 16), "a split's per-block counts are 16-bit halves");
    __shared__ u32 warp_sums[SSSP_BLOCK / 32];  // block_exclusive_scan's scratch
    __shared__ V bases[2];                      // the block's first slots in lists a and b
    u32 total;
    const u32 rank = block_exclusive_scan(mine, warp_sums, total);
    if (threadIdx.x == 0) {
        const u32 a = total & 0xffffu;
        const u32 b = total >> 16;
        if (a > 0) bases[0] = atomic_add(a_count, static_cast<V>(a));
        if (b > 0) bases[1] = atomic_add(b_count, static_cast<V>(b));
    }
    __syncthreads();
    if (mine == 1u) {
        a_list[bases[0] + static_cast<V>(rank & 0xffffu)] = v;
    } else if (mine != 0u) {
        b_list[bases[1] + static_cast<V>(rank >> 16)] = v;
    }
}

// The trips of a split (split_frontier, split_pile) over `length` entries of `list`: the slots
// are reserved per block and trip (block_append_split), so a block's trips run together: trip t
// takes items [t * stride + blockIdx.x * blockDim.x, + blockDim.x), the grid-stride items, and
// every thread of the block makes every trip of its block (a thread past the end has no item).
// `decide(v, d)` gives an entry v at distance d its code for block_append_split (1: list a,
// 1 << 16: list b, 0: neither), once, by its thread. List order is schedule-dependent either way
// (algorithm.md §5.1). Every thread of the block must call it (barriers): both engines do.
template <typename V, typename Decide>
__device__ __forceinline__ void split_trips(V length, const V* list, const u64* words,
                                            const Packing& k, V* a_list, V* a_count, V* b_list,
                                            V* b_count, Decide decide) {
    for (i64 base = static_cast<i64>(blockIdx.x) * blockDim.x; base < static_cast<i64>(length);
         base += static_cast<i64>(gridDim.x) * blockDim.x) {
        const i64 i = base + threadIdx.x;
        V v = 0;
        u32 mine = 0u;
        if (i < static_cast<i64>(length)) {
            v = load_cg(list + i);
            mine = decide(v, word_distance(k, load_cg(words + v)));
        }
        block_append_split<V>(mine, v, a_list, a_count, b_list, b_count);
    }
}

// The first split (algorithm.md §5.9 (b)): frontier entries below the threshold go to the near list
// (claimed with a fresh generation), the others to the far pile on their in_far 0 -> 1 transition.
// Each entry's claim or exchange is made once, by its thread, as with per-warp appends; the slots
// are reserved per block and trip (split_trips). Every thread of the block must call it.
template <typename V>
__device__ __forceinline__ void split_frontier(V length, const V* frontier, const u64* words,
                                               const Packing& k, u64 threshold, i32* stamp,
                                               i32 generation, i32* in_far, V* near_list,
                                               V* near_count, V* pile, V* pile_count) {
    split_trips<V>(length, frontier, words, k, near_list, near_count, pile, pile_count,
                   [&](V v, u64 d) -> u32 {
                       if (d < threshold) return claim(stamp, v, generation) ? 1u : 0u;
                       return atomicExch(in_far + v, 1) == 0 ? 1u << 16 : 0u;
                   });
}

// An epoch's re-split of the far pile (algorithm.md §5.9 (c)), after the threshold was raised:
// entries now below it leave the pile (in_far cleared) for the near list, which is empty; the
// others stay, copied to the kept pile (in_far stays 1). The slots are reserved per block and
// trip (split_trips); every thread of the block must call it (barriers): both engines do. Not
// inlined: inlined into the fused near-far loop, with the loop's state live around it, ptxas
// spilled fused_compute<int, int> (the SSSP_FUSED_SOLO and SSSP_PUSH_BATCHED module, make
// cuda-check). One call per epoch split, beside its grid barrier (not measured).
template <typename V>
__device__ __noinline__ void split_pile(V count, const V* pile, const u64* words,
                                        const Packing& k, u64 threshold, i32* stamp,
                                        i32 generation, i32* in_far, V* near_list,
                                        V* near_count, V* kept, V* kept_count) {
    split_trips<V>(count, pile, words, k, near_list, near_count, kept, kept_count,
                   [&](V v, u64 d) -> u32 {
                       if (d >= threshold) return 1u << 16;
                       in_far[v] = 0;
                       return claim(stamp, v, generation) ? 1u : 0u;
                   });
}

// The near-list length of push iteration `iteration` into the run's log (one thread per
// iteration writes it; iterations past the capacity are counted but not logged). A diagnostic
// for push_profile: one store per iteration, never read by a run.
template <typename V>
__device__ __forceinline__ void log_near_count(V* near_log, i64 iteration, V count) {
    if (iteration < SSSP_NEAR_LOG_CAPACITY) near_log[iteration] = count;
}

#if SSSP_BLOCK_APPEND
// A block's queue of new near-list entries (SSSP_BLOCK_APPEND): `count` may pass the capacity
// (the entries past it went straight to the list); `base` is the block's first slot in the list.
template <typename V>
struct BlockQueue {
    V items[SSSP_BLOCK_QUEUE];
    u32 count;
    V base;
};

// Queue w for the next near list: into the block's queue while it has room, else straight to
// the list with a plain atomicAdd (rare: a block that lists more than SSSP_BLOCK_QUEUE vertices in
// one iteration; the warp-aggregated append here made ptxas spill ops_push<int, long long>).
template <typename V>
__device__ __forceinline__ void queue_entry(BlockQueue<V>& queue, V w, V* next_list, V* next_count) {
    const u32 slot = atomicAdd(&queue.count, 1u);
    if (slot < SSSP_BLOCK_QUEUE) {
        queue.items[slot] = w;
    } else {
        next_list[atomic_add(next_count, V(1))] = w;
    }
}

// The block's queued entries into the list: one atomicAdd on the count for the whole block, then
// every thread copies its share. Called by every thread of the block (it meets twice); the
// queue is reused only after a block-wide barrier that follows (the grid barrier, the solo
// push's __syncthreads, or the end of the launch).
template <typename V>
__device__ __forceinline__ void flush_queue(BlockQueue<V>& queue, V* next_list, V* next_count) {
    __syncthreads();
    const u32 queued = queue.count < SSSP_BLOCK_QUEUE ? queue.count : SSSP_BLOCK_QUEUE;
    if (threadIdx.x == 0 && queued > 0) queue.base = atomic_add(next_count, static_cast<V>(queued));
    __syncthreads();
    for (u32 j = threadIdx.x; j < queued; j += blockDim.x) {
        next_list[queue.base + static_cast<V>(j)] = queue.items[j];
    }
}
#endif

#if SSSP_PUSH_CHAIN
// The chain's limits (SSSP_PUSH_CHAIN): the vertices a lane follows (relaxes itself), the one it
// kept included, and the widest vertex it follows.
struct ChainLimits {
    u32 hops;
    u32 max_degree;
};

// The limits in a push argument, and the group shift's cap left in it (chains.py push_argument).
__device__ __forceinline__ ChainLimits take_chain_limits(u32& max_shift) {
    const ChainLimits limits{(max_shift >> SSSP_CHAIN_FIELD_BITS) & SSSP_CHAIN_FIELD_MASK,
                             (max_shift >> (2 * SSSP_CHAIN_FIELD_BITS)) & SSSP_CHAIN_FIELD_MASK};
    max_shift &= SSSP_CHAIN_FIELD_MASK;
    return limits;
}

// w, which this lane just lowered below the threshold, onto the next near list (claimed with the
// iteration's generation) through the block's queue, as push_edge lists a vertex.
template <typename V>
__device__ __forceinline__ void list_near(V w, i32 generation, i32* stamp, V* next_list,
                                          V* next_count, BlockQueue<V>& queue) {
    if (claim(stamp, w, generation)) queue_entry(queue, w, next_list, next_count);
}

// The chain from w (SSSP_PUSH_CHAIN, above): this lane lowered w to dw < threshold and kept it.
// While hops are left and w is at most max_degree wide, relax w's out-edges from dw (the offers
// push_edge makes, without the racy pre-check: chains run on short lists, where atomics hardly
// contend), send the vertices lowered to the threshold or above to the far pile as push_edge
// does, list all but the first lowered below it and go on from that one; list the vertex where
// the chain stops (out of hops, or too wide). A chain whose relaxation lowers nothing below the
// threshold ends without listing: its last vertex's edges were relaxed.
template <typename V, typename O>
__device__ __forceinline__ void follow_chain(const CsrView<V, O>& out, const Packing& k, V w,
                                             u64 dw, const ChainLimits& limits, V source,
                                             u64 bound, u64 threshold, i32 generation, u64* words,
                                             i32* stamp, i32* in_far, V* next_list,
                                             V* next_count, V* pile, V* pile_count,
                                             BlockQueue<V>& queue) {
    // One loop for the whole chain, not a loop over its vertices around a loop over their edges:
    // the nested divergent loops (inside push_list's) made ptxas spill (make cuda-check).
    u32 left = limits.hops;  // vertices this lane may still follow, w included
    bool fresh = true;       // w's edge range not loaded yet
    // 64-bit positions: with 32-bit offsets a step's e + SSSP_CHAIN_EDGE_BATCH must not wrap near
    // 2^31 - 1
    i64 e = 0;
    i64 end = 0;
    V next = V(-1);
    u64 d_next = 0;
    for (;;) {
        if (fresh) {
            if (left == 0) break;  // out of hops: list w
            e = static_cast<i64>(out.begin(w));
            end = static_cast<i64>(out.end(w));
            if (end - e > static_cast<i64>(limits.max_degree)) {
                break;  // too wide for one lane: list w
            }
            --left;
            fresh = false;
        }
        if (e < end) {
            // SSSP_CHAIN_EDGE_BATCH of w's edges from dw at once: their loads, then their atomic
            // minima, issued before any result is used, so a step costs its lane two round trips
            // (edges, atomics) for that many edges instead of two per edge
            V x[SSSP_CHAIN_EDGE_BATCH];
            u64 nd[SSSP_CHAIN_EDGE_BATCH];
            bool live[SSSP_CHAIN_EDGE_BATCH];
            load_edge_step(out, e, end, 1, dw, source, bound, x, nd, live);
            u64 old[SSSP_CHAIN_EDGE_BATCH];
#pragma unroll
            for (int j = 0; j < SSSP_CHAIN_EDGE_BATCH; ++j) {
                old[j] = live[j] ? atomicMin(words + x[j], pack(k, nd[j], static_cast<i64>(w)))
                                 : 0ull;
            }
#pragma unroll
            for (int j = 0; j < SSSP_CHAIN_EDGE_BATCH; ++j) {
                if (!live[j] || nd[j] >= word_distance(k, old[j])) continue;  // not lowered here
                if (nd[j] >= threshold) {
                    // a plain atomicAdd, not the warp-aggregated append: a warp-synchronous call
                    // here made ptxas spill (make cuda-check), and a chain's far entries are few
                    if (atomicExch(in_far + x[j], 1) == 0) {
                        pile[atomic_add(pile_count, V(1))] = x[j];
                    }
                } else if (next < V(0)) {
                    next = x[j];
                    d_next = nd[j];
                } else {
                    list_near<V>(x[j], generation, stamp, next_list, next_count, queue);
                }
            }
            e += SSSP_CHAIN_EDGE_BATCH;
            continue;
        }
        if (next < V(0)) return;  // w's edges lowered nothing below the threshold
        w = next;
        dw = d_next;
        next = V(-1);
        fresh = true;
    }
    list_near<V>(w, generation, stamp, next_list, next_count, queue);
}
#endif

// One out-edge e of u (distance du) in a push iteration: relax it unless it leads into the source
// or the offer exceeds the bound, and queue the neighbour if this thread lowered its distance:
// the next near list below the threshold (claimed with the iteration's generation), else the far
// pile on its in_far 0 -> 1 transition. With `filter`, a racy load of the neighbour's word skips
// the atomic for an offer that cannot win: worth it when many vertices push at once (atomics
// contend, measured 29.3 -> 26.1 ms on road_usa safe50k), a dependent load too many when few do
// (13.7 -> 14.2 ms on road_usa local10k; H200, issue 13).
template <typename V, typename O>
__device__ __forceinline__ void push_edge(const CsrView<V, O>& out, const Packing& k, V u, u64 du,
                                          O e, V source, u64 bound, u64 threshold, bool filter,
                                          i32 generation, u64* words, i32* stamp, i32* in_far,
                                          V* next_list, V* next_count, V* pile, V* pile_count
#if SSSP_BLOCK_APPEND
                                          , BlockQueue<V>& queue, BlockQueue<V>& far_queue,
                                          bool far_queued
#endif
#if SSSP_PUSH_CHAIN
                                          , V& chain_start, u64& chain_distance
#endif
                                          ) {
    // The neighbour and the weight load together, both tests after: with the source test between
    // them ptxas issued the weight's load only once the neighbour's had come back, one more L2
    // round trip per edge (ncu source counters, roadNet-PA safe50k, H100).
    const V w = out.neighbour(e);
    const u64 nd = du + out.weight_of(e);
    // the source is never relaxed; an offer above the bound is never packed (algorithm.md §4.2)
    if (w == source || nd > bound) return;
    const u64 cand = pack(k, nd, static_cast<i64>(u));
    if (filter && cand >= load_cg(words + w)) return;
    const u64 old = atomicMin(words + w, cand);
    if (nd < word_distance(k, old)) {  // this thread lowered w's distance
        if (nd < threshold) {
#if SSSP_PUSH_CHAIN
            // the lane's first such vertex is followed after its share of the list (push_list,
            // follow_chain), from the lowest distance the lane gave it; the others are listed
            if (chain_start < V(0) || chain_start == w) {
                chain_start = w;
                chain_distance = nd;
            } else {
                list_near<V>(w, generation, stamp, next_list, next_count, queue);
            }
#elif SSSP_BLOCK_APPEND
            if (claim(stamp, w, generation)) queue_entry(queue, w, next_list, next_count);
#else
            if (claim(stamp, w, generation)) next_list[append(next_count)] = w;
#endif
        } else if (atomicExch(in_far + w, 1) == 0) {
#if SSSP_BLOCK_APPEND
            // through the block's far queue where push_list uses one (the push argument's
            // SSSP_FAR_QUEUE_BIT), else one atomic per group of lanes on the pile's count word
            if (far_queued) {
                queue_entry(far_queue, w, pile, pile_count);
                return;
            }
#endif
            pile[append(pile_count)] = w;
        }
    }
}

// The "batched" expansion's walk of one lane's out-edges of u (edges first, first + width, ...
// before end): SSSP_PUSH_EDGE_BATCH edges at a time, each step's loads issued together (the
// neighbours and weights, then the filter's words, then the atomic minima) before any result is
// used, so that a lane waits for one memory latency per step instead of one per edge. The same
// offers as push_edge, in another order; the result does not depend on it (algorithm.md §5.12).
// Edge positions are 64-bit here: with 32-bit offsets, end may be 2^31 - 1, and a step's last
// position e0 + 3 width would wrap.
template <typename V, typename O>
__device__ __forceinline__ void push_edges_batched(const CsrView<V, O>& out, const Packing& k,
                                                   V u, u64 du, i64 first, i64 end, i64 width,
                                                   V source, u64 bound, u64 threshold,
                                                   bool filter, i32 generation, u64* words,
                                                   i32* stamp, i32* in_far, V* next_list,
                                                   V* next_count, V* pile, V* pile_count) {
    for (i64 e0 = first; e0 < end; e0 += width * SSSP_PUSH_EDGE_BATCH) {
        V w[SSSP_PUSH_EDGE_BATCH];
        u64 cand[SSSP_PUSH_EDGE_BATCH];
        bool live[SSSP_PUSH_EDGE_BATCH];
#pragma unroll
        for (int j = 0; j < SSSP_PUSH_EDGE_BATCH; ++j) {
            const i64 e = e0 + j * width;
            live[j] = e < end;
            w[j] = live[j] ? out.neighbour(static_cast<O>(e)) : source;
            const u64 nd = du + (live[j] ? out.weight_of(static_cast<O>(e)) : 0ull);
            // the source is never relaxed; an offer above the bound is never packed (algorithm.md §4.2)
            live[j] = live[j] && w[j] != source && nd <= bound;
            cand[j] = live[j] ? pack(k, nd, static_cast<i64>(u)) : INF_WORD;
        }
        if (filter) {
            u64 seen[SSSP_PUSH_EDGE_BATCH];
#pragma unroll
            for (int j = 0; j < SSSP_PUSH_EDGE_BATCH; ++j) {
                seen[j] = live[j] ? load_cg(words + w[j]) : 0ull;
            }
#pragma unroll
            for (int j = 0; j < SSSP_PUSH_EDGE_BATCH; ++j) live[j] = live[j] && cand[j] < seen[j];
        }
        u64 old[SSSP_PUSH_EDGE_BATCH];
#pragma unroll
        for (int j = 0; j < SSSP_PUSH_EDGE_BATCH; ++j) {
            old[j] = live[j] ? atomicMin(words + w[j], cand[j]) : 0ull;
        }
#pragma unroll
        for (int j = 0; j < SSSP_PUSH_EDGE_BATCH; ++j) {
            const u64 nd = cand[j] >> k.bits;
            if (live[j] && nd < word_distance(k, old[j])) {  // this lane lowered w's distance
                if (nd < threshold) {
                    if (claim(stamp, w[j], generation)) next_list[append(next_count)] = w[j];
                } else if (atomicExch(in_far + w[j], 1) == 0) {
                    pile[append(pile_count)] = w[j];
                }
            }
        }
    }
}

// One push iteration (algorithm.md §5.9 (c)): every vertex of the near list expands, its out-edges
// spread over a group of 2^shift lanes of one warp (push_group_shift), lane j taking edges j, j +
// width, ... The word and the edge range of u are loaded together (independent loads).
// `g` is the threads that share the list: the whole grid, or one block (block_stride, the fused
// solo push). In a module compiled with SSSP_PUSH_BATCHED, lanes relax their edges in batches
// (push_edges_batched).
template <typename V, typename O, bool FarQueue = true>
__device__ __forceinline__ void push_list(const GridStride& g, V count, const V* near_list,
                                          const CsrView<V, O>& out, const Packing& k, V source,
                                          u64 bound, u64 threshold, i32 generation, u32 max_shift,
                                          u64* words, i32* stamp, i32* in_far, V* next_list,
                                          V* next_count, V* pile, V* pile_count) {
    // the far queue's bit (SSSP_FAR_QUEUE_BIT) off the argument before its other fields are read;
    // a caller without the queue (FarQueue false: ops_push, whose 32 registers the queue's code
    // made ptxas spill) never gets the bit (variants.run_choice; operators.py's push_argument)
    const bool far_queued = FarQueue && (max_shift & SSSP_FAR_QUEUE_BIT) != 0u;
    const bool precheck = (max_shift & SSSP_NO_PRECHECK_BIT) == 0u;
    max_shift &= ~(SSSP_FAR_QUEUE_BIT | SSSP_NO_PRECHECK_BIT);
#if SSSP_PUSH_CHAIN
    ChainLimits chain = take_chain_limits(max_shift);
    V chain_start = V(-1);  // the first vertex this lane lowers below the threshold, if any
    u64 chain_distance = 0;  // the distance it gave it
#endif
    const u32 shift = push_group_shift(static_cast<i64>(count), g.stride, max_shift);
#if SSSP_PUSH_CHAIN
    // Chains only where the list is short enough for every vertex to get the widest group: in a
    // list that fills the grid the iteration is work, not latency, and a lane's chain would only
    // make the others wait (bench/chain_model.py: roadNet-PA safe50k, one hop, 83 -> 59 push
    // iterations at +0.5 % relaxations with this rule, 83 -> 53 at +3.8 % without). A kept vertex
    // is then listed by follow_chain at once (no hops). Uniform: every thread has the same shift.
    if (shift < max_shift) chain.hops = 0;
#endif
    const O width = static_cast<O>(1u << shift);
    const O lane = static_cast<O>(lane_id() & ((1u << shift) - 1u));
#if SSSP_WIDE_PASSES
    // The racy pre-check only where it can save something: a push by one block (the fused solo
    // push's block_stride, or a one-block grid) meets no contention on the words it lowers, and
    // there the filter's load only lengthens each edge's dependent chain (neighbour, word,
    // atomic) by one L2 round trip. Dropping it changes no write: an offer it would have
    // filtered is not below the word, so its atomicMin leaves the word as it is and lists nothing.
    const bool filter = precheck && shift < SSSP_PUSH_GROUP_SHIFT && g.stride > SSSP_BLOCK;
#else
    // Dropping it (SSSP_NO_PRECHECK_BIT) changes no write either, for the same reason.
    const bool filter = precheck && shift < SSSP_PUSH_GROUP_SHIFT;
#endif
#if SSSP_BLOCK_APPEND
    // Every thread of the block passes here and through flush_queue below (push_list is called
    // by whole blocks: the grid's iteration, block 0's solo push, ops_push).
    __shared__ BlockQueue<V> queue;
    // The far pile's entries through a queue of their own (SSSP_FAR_QUEUE_BIT): a large iteration
    // sends many vertices to the pile, whose count word took one atomic per group of lanes, as
    // the near list's did before its queue. Uniform: every thread reads the same argument.
    __shared__ BlockQueue<V> far_queue;
    if (threadIdx.x == 0) {
        queue.count = 0u;
        far_queue.count = 0u;
    }
    __syncthreads();
#else
    (void)far_queued;
#endif
    // Groups never straddle a warp (the width divides 32) and the grid's threads are a multiple
    // of 32, so group i is threads [i * width, (i + 1) * width).
    for (i64 i = g.first >> shift; i < static_cast<i64>(count); i += g.stride >> shift) {
        const V u = load_cg(near_list + i);
        const u64 x = load_cg(words + u);
        const O begin = out.begin(u);
#if SSSP_PUSH_BATCHED
        // the batched walk keeps the branch: with the select below its captured solo module
        // spilled (make cuda-check)
        const O end = out.end(u);
        if (x == INF_WORD) continue;
#else
        // The row's bounds load with the word and a select, not a branch, drops an unreached
        // vertex's edges: behind `if (x == INF_WORD) continue` the compiler issued the bounds'
        // loads only once the word had come back, a second L2 round trip per listed vertex (ncu
        // source counters, roadNet-PA safe50k, H100).
        const O row_end = out.end(u);
        const O end = x == INF_WORD ? begin : row_end;
#endif
        const u64 du = x >> k.bits;
#if SSSP_PUSH_BATCHED
        push_edges_batched<V, O>(out, k, u, du, static_cast<i64>(begin) + lane,
                                 static_cast<i64>(end), static_cast<i64>(width), source, bound,
                                 threshold, filter, generation, words, stamp, in_far, next_list,
                                 next_count, pile, pile_count);
#else
        // 64-bit positions: with 32-bit offsets e + width must not wrap near 2^31 - 1
        for (i64 e = static_cast<i64>(begin) + lane; e < static_cast<i64>(end); e += width) {
            push_edge<V, O>(out, k, u, du, static_cast<O>(e), source, bound, threshold, filter,
                            generation, words, stamp, in_far, next_list, next_count, pile,
                            pile_count
#if SSSP_BLOCK_APPEND
                            , queue, far_queue, far_queued
#endif
#if SSSP_PUSH_CHAIN
                            , chain_start, chain_distance
#endif
                            );
        }
#endif
    }
#if SSSP_PUSH_CHAIN
    // After the lane's share, outside its loops: inside them the chain's own loop made ptxas
    // spill (make cuda-check). Before the flush: the chain may queue entries.
    if (chain_start >= V(0)) {
        follow_chain<V, O>(out, k, chain_start, chain_distance, chain, source, bound, threshold,
                           generation, words, stamp, in_far, next_list, next_count, pile, pile_count,
                           queue);
    }
#endif
#if SSSP_BLOCK_APPEND
    flush_queue(queue, next_list, next_count);
    if (far_queued) flush_queue(far_queue, pile, pile_count);
#endif
}

// compute()'s start (algorithm.md §6): every word INF but the source's, (0, no parent).
__device__ __forceinline__ void seed_source_words(i64 n, i64 source, u64* words, const Packing& k) {
    const GridStride g;
    // Not unrolled: unrolled, this store loop raises the fused compute kernel from 56 to 60
    // registers (make cuda-check) and saves nothing measurable (one store per vertex).
#pragma unroll 1
    for (i64 v = g.first; v < n; v += g.stride) {
        words[v] = (v == source) ? pack(k, 0ull, -1ll) : INF_WORD;
    }
}

// Unpack of an update in packed mode (algorithm.md §5.10): only entries whose (distance, parent)
// differ from the input are written; *affected counts them, summed per warp.
template <typename V>
__device__ __forceinline__ void unpack_changed(i64 n, const u64* __restrict__ words,
                                               const Packing& k, i64* __restrict__ distances,
                                               V* __restrict__ parents, u64* affected) {
    const GridStride g;
    u64 changed = 0;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        u64 x[SSSP_PASS_ILP];
        i64 d_in[SSSP_PASS_ILP];
        V p_in[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            x[j] = v < n ? load_cg(words + v) : INF_WORD;
            d_in[j] = v < n ? distances[v] : 0;
            p_in[j] = v < n ? parents[v] : V(0);
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            if (v >= n) break;
            i64 d;
            V p;
            unpack(k, x[j], d, p);
            if (d != d_in[j] || p != p_in[j]) {
                distances[v] = d;
                parents[v] = p;
                ++changed;
            }
        }
    }
    warp_sum_into(changed, affected);
}

// Unpack of compute() in packed mode: every entry written, nothing counted.
#if SSSP_WIDE_PASSES
// SSSP_PASS_ILP words loaded before any is unpacked (the update's unpack_changed does the same).
// __restrict__: the workspace's words and the result's two new arrays are three allocations.
template <typename V>
__device__ __forceinline__ void unpack_all(i64 n, const u64* __restrict__ words, const Packing& k,
                                           i64* __restrict__ distances, V* __restrict__ parents) {
    const GridStride g;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        u64 x[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            x[j] = v < n ? load_cg(words + v) : INF_WORD;
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            if (v >= n) break;
            i64 d;
            V p;
            unpack(k, x[j], d, p);
            distances[v] = d;
            parents[v] = p;
        }
    }
}
#else
template <typename V>
__device__ __forceinline__ void unpack_all(i64 n, const u64* words, const Packing& k,
                                           i64* distances, V* parents) {
    const GridStride g;
    for (i64 v = g.first; v < n; v += g.stride) {
        i64 d;
        V p;
        unpack(k, load_cg(words + v), d, p);
        distances[v] = d;
        parents[v] = p;
    }
}
#endif

// Distance-only parent recovery (algorithm.md §4.4), step 1: distances from the words (plain
// distances in this mode); parent -1 for the source and unreachable vertices, VMAX (no tight
// in-edge seen yet) for the others. For an update (`count_affected`) the input parent is first
// saved in `saved_parents` and `distance_changed[v]` marks a distance that differs from the input,
// for the affected count after step 2.
#if SSSP_WIDE_PASSES
// SSSP_PASS_ILP items a trip: their words (and, counting, their input distances and parents)
// loaded before any is used. __restrict__: words (workspace), distances and parents (the result's
// arrays) and the two scratch arrays are five allocations in every caller (the fused update and
// the operators engine pass the ancestors and the candidates list as saved_parents and
// distance_changed; compute() passes null for both and never touches them).
template <typename V>
__device__ __forceinline__ void recover_distances(i64 n, const u64* __restrict__ words, V source,
                                                  i64* __restrict__ distances,
                                                  V* __restrict__ parents, bool count_affected,
                                                  V* __restrict__ saved_parents,
                                                  V* __restrict__ distance_changed) {
    const GridStride g;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        u64 x[SSSP_PASS_ILP];
        i64 d_in[SSSP_PASS_ILP];
        V p_in[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            x[j] = v < n ? load_cg(words + v) : INF_WORD;
            d_in[j] = count_affected && v < n ? distances[v] : 0;
            p_in[j] = count_affected && v < n ? parents[v] : V(0);
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            if (v >= n) break;
            const i64 d = (x[j] == INF_WORD) ? INF_DISTANCE : static_cast<i64>(x[j]);
            if (count_affected) {
                saved_parents[v] = p_in[j];
                distance_changed[v] = (d != d_in[j]) ? V(1) : V(0);
            }
            distances[v] = d;
            parents[v] = (x[j] == INF_WORD || v == static_cast<i64>(source)) ? V(-1)
                                                                             : VertexMax<V>::value;
        }
    }
}
#else
template <typename V>
__device__ __forceinline__ void recover_distances(i64 n, const u64* words, V source,
                                                  i64* distances, V* parents, bool count_affected,
                                                  V* saved_parents, V* distance_changed) {
    const GridStride g;
    for (i64 v = g.first; v < n; v += g.stride) {
        const u64 x = load_cg(words + v);
        const i64 d = (x == INF_WORD) ? INF_DISTANCE : static_cast<i64>(x);
        if (count_affected) {
            saved_parents[v] = parents[v];
            distance_changed[v] = (d != distances[v]) ? V(1) : V(0);
        }
        distances[v] = d;
        parents[v] = (x == INF_WORD || v == static_cast<i64>(source)) ? V(-1) : VertexMax<V>::value;
    }
}
#endif

// Step 2: every reachable u offers itself to each out-neighbour x != s it reaches tightly; the
// atomic minimum keeps the lowest-id tight in-neighbour, so the recovered tree is canonical.
// SSSP_WIDE_PASSES: words (the workspace's, only read) and parents (the result's, only lowered by
// atomics) are two allocations: __restrict__.
template <typename V, typename O>
__device__ __forceinline__ void recover_tight_parents(i64 n, const CsrView<V, O>& out, V source,
                                                      const u64* SSSP_WIDE_RESTRICT words,
                                                      V* SSSP_WIDE_RESTRICT parents) {
    const GridStride g;
    for (i64 u = g.first; u < n; u += g.stride) {
        const u64 du = load_cg(words + u);
        if (du == INF_WORD) continue;
        const O end = out.end(u);
        for (O e = out.begin(u); e < end; ++e) {
            const V x = out.neighbour(e);
            if (x == source) continue;
            const u64 dx = load_cg(words + x);
            if (dx != INF_WORD && du + out.weight_of(e) == dx) {
                atomic_min(parents + x, static_cast<V>(u));
            }
        }
    }
}

// Step 3 (update only): *affected counts the vertices whose distance changed or whose recovered
// parent differs from the saved input parent.
#if SSSP_WIDE_PASSES
// SSSP_PASS_ILP items a trip, all three loads of each issued before any is compared (the default
// loads the parents only for an unchanged distance: a dependent load per item). Only reads, of
// three allocations (the result's parents, the ancestors, the candidates list in both engines):
// __restrict__; still through L2, the recovery's atomics wrote the parents in this launch.
template <typename V>
__device__ __forceinline__ void count_recovered_affected(i64 n, const V* __restrict__ parents,
                                                         const V* __restrict__ saved_parents,
                                                         const V* __restrict__ distance_changed,
                                                         u64* affected) {
    const GridStride g;
    u64 changed = 0;
    for (i64 base = g.first; base < n; base += g.stride * SSSP_PASS_ILP) {
        V mark[SSSP_PASS_ILP];
        V p[SSSP_PASS_ILP];
        V saved[SSSP_PASS_ILP];
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            const i64 v = base + j * g.stride;
            const bool in = v < n;
            mark[j] = in ? load_cg(distance_changed + v) : V(0);
            p[j] = in ? load_cg(parents + v) : V(0);
            saved[j] = in ? load_cg(saved_parents + v) : V(0);
        }
#pragma unroll
        for (int j = 0; j < SSSP_PASS_ILP; ++j) {
            if (mark[j] != V(0) || p[j] != saved[j]) ++changed;  // out of range: 0, 0, 0
        }
    }
    warp_sum_into(changed, affected);
}
#else
template <typename V>
__device__ __forceinline__ void count_recovered_affected(i64 n, const V* parents,
                                                         const V* saved_parents,
                                                         const V* distance_changed,
                                                         u64* affected) {
    const GridStride g;
    u64 changed = 0;
    for (i64 v = g.first; v < n; v += g.stride) {
        if (load_cg(distance_changed + v) != V(0) ||
            load_cg(parents + v) != load_cg(saved_parents + v)) {
            ++changed;
        }
    }
    warp_sum_into(changed, affected);
}
#endif

}  // namespace sssp

#endif  // SSSPAB_KERNELS_CUH
