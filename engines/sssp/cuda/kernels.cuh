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

// Every kernel of both engines runs blocks of this size (§5.1, §10.2).
#define SSSP_BLOCK 256
#define SSSP_FULL_MASK 0xffffffffu

// The INF word: all 64 bits set. An unreachable vertex holds exactly this word (§4.1).
static constexpr u64 INF_WORD = ~0ull;
// INF = 2^61 - 1 and INF/2 (integer division), as in engines/sssp/packing.py (§2, §3.1).
static constexpr i64 INF_DISTANCE = (1ll << 61) - 1;
[[maybe_unused]] static constexpr i64 INF_HALF = INF_DISTANCE / 2;
// The empty value of a 64-bit minimum slot.
static constexpr u64 EMPTY_MIN = ~0ull;

// ---------------------------------------------------------------------------------------------
// Packed words (§4). `bits` is b (0 in distance-only mode) and `no_parent` is 2^b - 1 (0 in
// distance-only mode). Callers pass both as kernel arguments: the packing rule lives in
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

// Unpack a word to the output pair: the INF word gives (INF, -1) (§4.1).
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
// distance-only parent recovery (§4.4).
template <typename V> struct VertexMax;
template <> struct VertexMax<i32> { static constexpr i32 value = 0x7fffffff; };
template <> struct VertexMax<i64> { static constexpr i64 value = 0x7fffffffffffffffll; };

// ---------------------------------------------------------------------------------------------
// Coherent loads. L1 is not coherent across blocks: every value another block may have written
// in the same launch (words, ancestors, flags, lists, control counters) is read through L2.
template <typename T>
__device__ __forceinline__ T load_cg(const T* p) { return __ldcg(p); }

// Atomics on vertex-type counters, which are int32 or int64 (§5.2, §12.3).
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
// Deduplicates list insertions per generation (§5.1).
__device__ __forceinline__ bool claim(i32* stamp, i64 v, i32 generation) {
    return atomicExch(stamp + v, generation) != generation;
}

// append(counter): warp-aggregated slot reservation for divergent code. The threads that arrive
// together elect their lowest lane as leader, which reserves the whole group's slots with one
// atomicAdd; each thread gets base + its rank among the group. List order is therefore
// schedule-dependent, and nothing may depend on it (§5.1).
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

// ---------------------------------------------------------------------------------------------
// Grid-stride iteration over [0, count): 64-bit indices so that `i + stride` cannot overflow
// near 2^31 items.
struct GridStride {
    i64 first;
    i64 stride;
    __device__ __forceinline__ GridStride()
        : first(static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x),
          stride(static_cast<i64>(gridDim.x) * blockDim.x) {}
};

// ---------------------------------------------------------------------------------------------
// A device view of a CSR (out-CSR or in-CSR) with one weight column. The mirror's arrays are
// never written during a launch, so plain (read-only cache) loads are safe here.
template <typename V, typename O>
struct CsrView {
    const O* ptr;     // n + 1 offsets
    const V* index;   // m neighbours (out: heads; in: tails)
    const i32* weight;  // m weights of the run's objective, in the same order

    __device__ __forceinline__ O begin(i64 v) const { return __ldg(ptr + v); }
    __device__ __forceinline__ O end(i64 v) const { return __ldg(ptr + v + 1); }
    __device__ __forceinline__ V neighbour(O e) const { return __ldg(index + e); }
    __device__ __forceinline__ u64 weight_of(O e) const {
        return static_cast<u64>(__ldg(weight + e));
    }
};

// ---------------------------------------------------------------------------------------------
// Control blocks (§5.2). Engine-internal layouts with fixed offsets; mirrored on the host by the
// NumPy dtypes of workspace.py (fused_control_dtype, operators_control_dtype). Counters have the
// width of the vertex type V; minimum, affected and pushes are 64-bit.
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
};

// The operators layout (§5.2 [ops]); the operators engine owns its use.
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
};

// One vertex expansion of a push iteration (§5.9 (c)), the same in both engines: relax every
// out-edge of u except into the source, drop offers above the bound, and queue a neighbour whose
// distance this thread lowered: the next near list below the threshold (claimed with the
// iteration's generation), else the far pile on its in_far 0 -> 1 transition.
template <typename V, typename O>
__device__ __forceinline__ void push_vertex(const CsrView<V, O>& out, const Packing& k, V u,
                                            V source, u64 bound, u64 threshold, i32 generation,
                                            u64* words, i32* stamp, i32* in_far, V* next_list,
                                            V* next_count, V* pile, V* pile_count) {
    const u64 x = load_cg(words + u);
    if (x == INF_WORD) return;
    const u64 du = x >> k.bits;
    const O end = out.end(u);
    for (O e = out.begin(u); e < end; ++e) {
        const V w = out.neighbour(e);
        if (w == source) continue;  // the source is never relaxed
        const u64 nd = du + out.weight_of(e);
        if (nd > bound) continue;  // never packed (§4.2)
        const u64 cand = pack(k, nd, static_cast<i64>(u));
        if (cand >= load_cg(words + w)) continue;  // racy pre-check, only a filter
        const u64 old = atomicMin(words + w, cand);
        if (nd < word_distance(k, old)) {  // this thread lowered w's distance
            if (nd < threshold) {
                if (claim(stamp, w, generation)) next_list[append(next_count)] = w;
            } else if (atomicExch(in_far + w, 1) == 0) {
                pile[append(pile_count)] = w;
            }
        }
    }
}

}  // namespace sssp

#endif  // SSSPAB_KERNELS_CUH
