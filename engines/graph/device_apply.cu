// The device apply (algorithm.md §3.3, §3.6): one batch edits the device CSRs of a graph.
//
// The same editor runs twice per commit: on the OUT side (rows are sources, entry keys are
// destinations: row_ptr / col_ind / weights) and on the IN side (rows are destinations, keys are
// sources: in_ptr / in_src / in_weights). The event list is BatchEvents of engines/batch.py: the D
// in-range deletions in batch order, then the I insertions in batch order. The host sorts nothing:
// the events are grouped by row on the device (a 64-bit key (row << 32 | event) sorted by
// key_sort.cu's one-block sort, or by CuPy's where a commit does not fit it),
// and one group of lanes (a warp, or part of one: Group) per touched row walks that row's events
// in event order, which is the literal rule
// of algorithm.md §3.3: a deletion removes the first alive copy of its pair, an insertion upserts
// the first alive copy or the pair's entry appended earlier in this batch, or appends. Untouched
// rows move by their row's shift in one coalesced pass; touched rows are rebuilt by their group of
// lanes (survivors in order, then the appended entries). engines/graph/host_apply.py is the same editor on the
// host; the tests require the two to agree byte for byte.
//
// Scratch that must read zero between commits (`mark` per old entry, `row_flag` and `row_delta`
// per row) is cleared by the kernel that consumes it, only where it was set: a commit costs
// O(n + m) streaming work plus O(events x row length) for the touched rows, never a sort of m.
//
// The batch's sizes (event count, deletions, insertions, old and new vertex counts, old edge
// count) are read from the device (`sizes`, slots SizeSlot, copied up with the events) rather than
// passed as launch arguments: the launches of a commit are then the same for every batch that
// fits the reserved capacity, so they can be captured once as a CUDA graph and replayed
// (device_apply.py, launch "graph"); launched one by one ("python") they read the same slots.
//
// Template parameters as in both engines: V the vertex type (int), O the offset type.

#include "kernels.cuh"

using namespace sssp;

namespace apply {

// Slots of the int64 apply record (engines/graph/device_apply.py REC_* mirrors them).
// Fixed slots first, then six groups of K per-column slots (device_apply.py record_length).
enum RecordSlot : int {
    REC_DELETED = 0,
    REC_MISSING = 1,
    REC_INSERTED = 2,
    REC_UPDATED = 3,
    REC_EDGES = 4,
    REC_TAIL = 5,  // a slack commit's tail (the farther side's): what the host bounds the next by
    REC_LONGEST = 6,  // a slack set's longest row (a bound: the longer side's), ditto
    REC_FIXED = 8,
};
// A slack set's meta slots (device_graph.py CsrBuffers.meta): per side its tail, then per side a
// bound on its longest row (rows only grow in touched rows, which raise it).
enum MetaSlot : int {
    META_TAIL = 0,
    META_LONGEST = 2,
};
// Slots of the int64 sizes block (device_apply.py SIZE_* mirrors them).
enum SizeSlot : int {
    SZ_COUNT = 0,       // events: the D deletions, then the I insertions
    SZ_DELETIONS = 1,
    SZ_INSERTIONS = 2,
    SZ_N_OLD = 3,
    SZ_N_AFTER = 4,
    SZ_M_OLD = 5,
    SZ_SLOTS = 6,
};
// Sort keys past the batch's events (a captured commit sorts every reserved slot): they order
// after every real key of their side (bit 63 the side, and row 0x7fffffff is no vertex).
constexpr u64 PAD_OUT_KEY = 0x7fffffffffffffffull;
constexpr u64 PAD_IN_KEY = 0xffffffffffffffffull;
// Per column k: the weight-sum change; "the old maximum may be gone"; the largest weight written
// (the host starts it at 0); the full rescan's maximum (starts at 0); the count of
// weight-increased insertions; the old maximum (the host's value, read only).
__device__ __forceinline__ int rec_sum(int K, int k) { return REC_FIXED + k; }
__device__ __forceinline__ int rec_lost_max(int K, int k) { return REC_FIXED + K + k; }
__device__ __forceinline__ int rec_written_max(int K, int k) { return REC_FIXED + 2 * K + k; }
__device__ __forceinline__ int rec_rescan_max(int K, int k) { return REC_FIXED + 3 * K + k; }
__device__ __forceinline__ int rec_increased(int K, int k) { return REC_FIXED + 4 * K + k; }
__device__ __forceinline__ int rec_old_max(int K, int k) { return REC_FIXED + 5 * K + k; }

// Bit 63 of a key is its side (0 out, 1 in: one sort orders both sides, out before in), bits
// 32-62 the row, bits 0-31 the event.
__device__ __forceinline__ i32 event_row(i64 key) {
    return static_cast<i32>((static_cast<u64>(key) >> 32) & 0x7fffffffull);
}
__device__ __forceinline__ i32 event_index(i64 key) { return static_cast<i32>(key & 0xffffffffll); }

// One side of the graph as the editor sees it: rows, per-entry keys and row ids, K weight
// columns `stride` entries apart.
template <typename O>
struct Side {
    const O* ptr;
    const i32* key;
    const i32* row_of;
    const i32* weight;
    i64 stride;
};

// The row range of row r in the old state (rows of new vertices are empty): [ptr[r], ends[r]),
// where a packed set passes ends = ptr + 1 and a slack set its own row ends (device_graph.py).
template <typename O>
__device__ __forceinline__ void old_range(const O* ptr, const O* ends, i32 n_old, i32 r, i64& lo, i64& hi) {
    if (r < n_old) {
        lo = static_cast<i64>(ptr[r]);
        hi = static_cast<i64>(ends[r]);
    } else {
        lo = hi = 0;
    }
}

// The lanes that work on one row in apply_decide and apply_rebuild: 2^shift consecutive lanes of
// one warp (shift 5: the whole warp). Narrow groups keep more rows in flight where rows are short
// (a road graph's few entries left 29 of a warp's 32 lanes idle while the warp waited on each of
// its loads in turn); the host picks the width from the mean degree (device_apply.py
// group_shift). Groups never straddle a warp, so each syncs and votes over its own lanes alone.
struct Group {
    int lane;       // this thread's lane within the group
    int width;      // lanes in the group
    int base;       // the group's first lane within the warp
    unsigned mask;  // the group's lanes within the warp
};

__device__ __forceinline__ Group make_group(i32 shift) {
    Group g;
    g.width = 1 << shift;
    const int warp_lane = lane_id();
    g.lane = warp_lane & (g.width - 1);
    g.base = warp_lane - g.lane;
    g.mask = g.width == 32 ? SSSP_FULL_MASK : ((1u << g.width) - 1u) << g.base;
    return g;
}

// The group's votes as bits 0 .. width - 1 (bit i: the group's lane i).
__device__ __forceinline__ unsigned group_ballot(const Group& g, bool pred) {
    return (__ballot_sync(g.mask, pred) & g.mask) >> g.base;
}

// The first entry o in [lo, hi) with key[o] == x and (if `alive_only`) mark[o] != -1, found by
// the whole group `width` entries at a time; -1 if none. Every lane of the group returns the same
// value.
__device__ __forceinline__ i64 group_find(const Group& g, const i32* __restrict__ key, const i32* mark, i64 lo,
                                          i64 hi, i32 x, bool alive_only) {
    for (i64 base = lo; base < hi; base += g.width) {
        const i64 o = base + g.lane;
        bool hit = false;
        if (o < hi && key[o] == x) hit = !alive_only || mark[o] != -1;
        const unsigned ballot = group_ballot(g, hit);
        if (ballot) return base + (__ffs(ballot) - 1);
    }
    return -1;
}

// The first staged append of this row with key x, among `count` entries from `first`; -1 if none.
__device__ __forceinline__ i64 group_find_staged(const Group& g, const i32* stage_key, i64 first, i64 count,
                                                 i32 x) {
    for (i64 base = 0; base < count; base += g.width) {
        const i64 s = base + g.lane;
        const bool hit = s < count && stage_key[first + s] == x;
        const unsigned ballot = group_ballot(g, hit);
        if (ballot) return first + base + (__ffs(ballot) - 1);
    }
    return -1;
}

// The end of the segment of sorted events that starts at `p` (all events of one row).
__device__ __forceinline__ i64 segment_end(const Group& g, const i64* __restrict__ sorted, i64 p, i64 count,
                                           i32 row) {
    for (i64 base = p + 1; base < count; base += g.width) {
        const i64 q = base + g.lane;
        const bool other = q >= count || event_row(sorted[q]) != row;
        const unsigned ballot = group_ballot(g, other);
        if (ballot) return base + (__ffs(ballot) - 1);
    }
    return count;
}

// The group's sum and maximum, valid in its lane 0.
__device__ __forceinline__ i64 group_sum(const Group& g, i64 value) {
    for (int off = g.width >> 1; off > 0; off >>= 1) value += __shfl_down_sync(g.mask, value, off, g.width);
    return value;
}

__device__ __forceinline__ i64 group_max(const Group& g, i64 value) {
    for (int off = g.width >> 1; off > 0; off >>= 1) {
        const i64 other = __shfl_down_sync(g.mask, value, off, g.width);
        value = other > value ? other : value;
    }
    return value;
}

__device__ __forceinline__ i64 warp_max(i64 value) {
    for (int off = 16; off > 0; off >>= 1) {
        const i64 other = __shfl_down_sync(SSSP_FULL_MASK, value, off);
        value = other > value ? other : value;
    }
    return value;
}

}  // namespace apply

// ---------------------------------------------------------------------------------------------
// Sort keys of the events for both sides: (side << 63) | (row << 32) | event, so that one sort of
// both halves (as unsigned) puts every out key before every in key and groups the events of a row
// in event order (ties cannot occur: the event index is part of the key). `slots` keys per side
// are written: the events', then padding keys (none when `slots` is the event count).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_keys(const i64* __restrict__ sizes, i64 slots, const i32* __restrict__ ev_src,
               const i32* __restrict__ ev_dst, i64* __restrict__ out_keys, i64* __restrict__ in_keys) {
    using namespace apply;
    const i64 count = sizes[SZ_COUNT];
    const GridStride g;
    for (i64 j = g.first; j < slots; j += g.stride) {
        if (j < count) {
            out_keys[j] = (static_cast<i64>(ev_src[j]) << 32) | j;
            in_keys[j] = static_cast<i64>((1ull << 63) | (static_cast<u64>(ev_dst[j]) << 32) | static_cast<u64>(j));
        } else {
            out_keys[j] = static_cast<i64>(PAD_OUT_KEY);
            in_keys[j] = static_cast<i64>(PAD_IN_KEY);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decide (algorithm.md §3.3 steps 4-5): one group of lanes per sorted position; the group of a
// row's first event walks all events of the row in event order. Marks removed old entries (-1) and upserted
// ones (insertion index + 1, the last insertion wins), stages the row's appends at the row's own
// sorted positions, and records the row's length change. On the out side (`stats` != 0) it also
// counts the summary, the weight-sum change, whether an old maximum may be gone, the largest
// weight written, and weight_increased of every insertion (algorithm.md §3.3, first copy of G_t
// against the pair's final weights). Those counters are accumulated per block in shared memory
// (dynamic: the fixed slots and five groups of K laid out as the record's) and added to the record
// once per block: tens of thousands of rows adding into the same few global words serialize on them
// (measured 0.3 ms for a 50k batch on an H200). With `shared_cols` == 0 (K too large for shared
// memory) the rows add into the record directly.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_decide(const i64* __restrict__ sizes, const i64* __restrict__ sorted, const i32* __restrict__ ev_key,
                 const i32* __restrict__ ins_w, i32 K,
                 const O* __restrict__ ptr, const O* __restrict__ ends, const i32* __restrict__ key,
                 const i32* __restrict__ weight, i64 stride, i32* mark, i32* __restrict__ row_flag,
                 i64* __restrict__ row_delta,
                 i32* stage_key, i32* stage_ins, i32 stats, i64* __restrict__ record,
                 unsigned char* __restrict__ increased, i32 shared_cols, i32 group_shift) {
    using namespace apply;
    extern __shared__ i64 block_record[];  // REC_FIXED slots, then 5 groups of K (as the record)
    const i64 count = sizes[SZ_COUNT];
    const i32 num_deletions = static_cast<i32>(sizes[SZ_DELETIONS]);
    const i32 n_old = static_cast<i32>(sizes[SZ_N_OLD]);
    const Group grp = make_group(group_shift);
    const int lane = grp.lane;
    const i64 groups = (static_cast<i64>(gridDim.x) * blockDim.x) >> group_shift;
    const int block_slots = shared_cols ? REC_FIXED + 5 * K : REC_FIXED;
    if (stats) {  // uniform: every thread of the block reaches both barriers
        for (int t = threadIdx.x; t < block_slots; t += blockDim.x) block_record[t] = 0;
        __syncthreads();
    }
    i64* const fixed = block_record;                               // REC_DELETED .. REC_UPDATED
    i64* const cols = shared_cols ? block_record : record;         // rec_sum(K, k) and the rest
    for (i64 p = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> group_shift; p < count;
         p += groups) {
        const i32 row = event_row(sorted[p]);
        if (p > 0 && event_row(sorted[p - 1]) == row) continue;  // not the row's first event
        const i64 end = segment_end(grp, sorted, p, count, row);
        i64 lo, hi;
        old_range(ptr, ends, n_old, row, lo, hi);
        i64 hits = 0, missing = 0, appends = 0, updated = 0;
        for (i64 q = p; q < end; ++q) {
            const i32 j = event_index(sorted[q]);
            const i32 x = ev_key[j];
            const i64 o = group_find(grp, key, mark, lo, hi, x, true);
            if (j < num_deletions) {
                if (o >= 0) {
                    if (lane == 0) mark[o] = -1;
                    ++hits;
                } else {
                    ++missing;
                }
            } else if (o >= 0) {
                if (lane == 0) mark[o] = j - num_deletions + 1;
                ++updated;
            } else {
                const i64 s = group_find_staged(grp, stage_key, p, appends, x);
                if (s >= 0) {
                    if (lane == 0) stage_ins[s] = j - num_deletions;
                    ++updated;
                } else {
                    if (lane == 0) {
                        stage_key[p + appends] = x;
                        stage_ins[p + appends] = j - num_deletions;
                    }
                    ++appends;
                }
            }
            __syncwarp(grp.mask);  // the marks and stages of this event are seen by the next one
        }
        if (lane == 0) {
            row_flag[row] = 1;
            row_delta[row] = appends - hits;
        }
        if (!stats) continue;
        if (lane == 0) {
            if (hits) atomicAdd(reinterpret_cast<u64*>(fixed + REC_DELETED), static_cast<u64>(hits));
            if (missing) atomicAdd(reinterpret_cast<u64*>(fixed + REC_MISSING), static_cast<u64>(missing));
            if (appends) atomicAdd(reinterpret_cast<u64*>(fixed + REC_INSERTED), static_cast<u64>(appends));
            if (updated) atomicAdd(reinterpret_cast<u64*>(fixed + REC_UPDATED), static_cast<u64>(updated));
        }
        // weight_increased of every insertion of the row: the first old copy (alive or not)
        // against the pair's final weights (the last insertion's: an upserted old entry's mark,
        // else the staged append's index).
        for (i64 q = p; q < end; ++q) {
            const i32 j = event_index(sorted[q]);
            if (j < num_deletions) continue;
            const i32 x = ev_key[j];
            const i32 i = j - num_deletions;
            const i64 first = group_find(grp, key, mark, lo, hi, x, false);
            if (first < 0) {  // the pair is new in this row: never increased
                for (i32 k = lane; k < K; k += grp.width) increased[static_cast<i64>(i) * K + k] = 0;
                continue;
            }
            const i64 alive = group_find(grp, key, mark, lo, hi, x, true);
            i64 final_ins;
            if (alive >= 0) {
                final_ins = mark[alive] - 1;
            } else {
                final_ins = stage_ins[group_find_staged(grp, stage_key, p, appends, x)];
            }
            for (i32 k = lane; k < K; k += grp.width) {
                const bool up = ins_w[final_ins * K + k] > weight[k * stride + first];
                increased[static_cast<i64>(i) * K + k] = up ? 1 : 0;
                if (up) atomicAdd(reinterpret_cast<u64*>(cols + rec_increased(K, k)), 1ull);
            }
        }
        // The weight-sum change and the maxima, per column (lanes over the row's entries).
        for (i32 k = 0; k < K; ++k) {
            const i64 old_max = record[rec_old_max(K, k)];
            i64 change = 0, written = 0;
            bool lost = false;
            for (i64 o = lo + lane; o < hi; o += grp.width) {
                const i32 m = mark[o];
                if (m == 0) continue;
                const i64 before = weight[k * stride + o];
                if (m < 0) {
                    change -= before;
                    lost = lost || before == old_max;
                } else {
                    const i64 after = ins_w[static_cast<i64>(m - 1) * K + k];
                    change += after - before;
                    lost = lost || (before == old_max && after < before);
                    written = after > written ? after : written;
                }
            }
            for (i64 s = lane; s < appends; s += grp.width) {
                const i64 after = ins_w[static_cast<i64>(stage_ins[p + s]) * K + k];
                change += after;
                written = after > written ? after : written;
            }
            change = group_sum(grp, change);
            written = group_max(grp, written);
            const bool any_lost = group_ballot(grp, lost) != 0u;
            if (lane == 0) {
                if (change != 0) atomicAdd(reinterpret_cast<u64*>(cols + rec_sum(K, k)), static_cast<u64>(change));
                if (any_lost) cols[rec_lost_max(K, k)] = 1;
                if (written > 0) atomicMax(reinterpret_cast<long long*>(cols + rec_written_max(K, k)),
                                           static_cast<long long>(written));
            }
        }
    }
    if (!stats) return;
    __syncthreads();
    // One addition per block and slot into the record (max for the written maximum, a store for
    // the lost flag); the rescan slots stay untouched.
    for (int t = threadIdx.x; t < block_slots; t += blockDim.x) {
        const i64 value = block_record[t];
        if (value == 0 || (t >= REC_FIXED + 3 * K && t < REC_FIXED + 4 * K)) continue;
        if (t >= REC_FIXED + K && t < REC_FIXED + 2 * K) {
            record[t] = 1;
        } else if (t >= REC_FIXED + 2 * K && t < REC_FIXED + 3 * K) {
            atomicMax(reinterpret_cast<long long*>(record + t), static_cast<long long>(value));
        } else {
            atomicAdd(reinterpret_cast<u64*>(record + t), static_cast<u64>(value));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The new row offsets: old offset of the row (m_old past the old rows) plus the length changes of
// the rows before it (`cum` is the inclusive prefix sum of row_delta). Slot REC_EDGES gets m_new.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_row_ptr(const i64* __restrict__ sizes, const O* __restrict__ old_ptr, const i64* __restrict__ cum,
                  O* __restrict__ new_ptr, i32 write_edges, i64* __restrict__ record) {
    const i32 n_old = static_cast<i32>(sizes[apply::SZ_N_OLD]);
    const i32 n_after = static_cast<i32>(sizes[apply::SZ_N_AFTER]);
    const GridStride g;
    for (i64 v = g.first; v <= n_after; v += g.stride) {
        const i64 base = static_cast<i64>(old_ptr[v < n_old ? v : n_old]);
        const i64 value = base + (v > 0 ? cum[v - 1] : 0);
        new_ptr[v] = static_cast<O>(value);
        if (v == n_after && write_edges) record[apply::REC_EDGES] = value;
    }
}

// ---------------------------------------------------------------------------------------------
// The small-batch path of the new row offsets (device_apply.py TOUCHED_SCAN_ENV): the length
// changes of the touched rows only, summed in sorted order. touched_cum[j] (j in [0, count]) is
// the sum of row_delta over the rows whose first event sits before sorted position j. One block
// walks the side's `count` sorted events in tiles of SSSP_BLOCK x TOUCHED_ITEMS, so a batch costs
// O(events) here and one launch, where the full prefix sum of row_delta costs O(n) and the
// library's three launches (scan state, scan, copy into `cum`).
constexpr int TOUCHED_ITEMS = 8;

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_touched_scan(const i64* __restrict__ sizes, const i64* __restrict__ sorted,
                       const i64* __restrict__ row_delta, i64* __restrict__ touched_cum) {
    using namespace apply;
    __shared__ i64 warp_sums[SSSP_BLOCK / 32];  // block_exclusive_scan's scratch, per tile
    const i64 count = sizes[SZ_COUNT];
    i64 carry = 0;  // the sum of every tile before this one (the same in every thread)
    for (i64 tile = 0; tile < count; tile += static_cast<i64>(SSSP_BLOCK) * TOUCHED_ITEMS) {
        const i64 first = tile + static_cast<i64>(threadIdx.x) * TOUCHED_ITEMS;
        i64 values[TOUCHED_ITEMS];
        i64 total = 0;
#pragma unroll
        for (int u = 0; u < TOUCHED_ITEMS; ++u) {
            const i64 j = first + u;
            i64 value = 0;
            if (j < count) {
                const i32 row = event_row(sorted[j]);
                // a row's change counts once, at its first event (decide wrote it there)
                if (j == 0 || event_row(sorted[j - 1]) != row) value = row_delta[row];
            }
            values[u] = value;
            total += value;
        }
        i64 tile_total;
        i64 running = carry + block_exclusive_scan(total, warp_sums, tile_total);
#pragma unroll
        for (int u = 0; u < TOUCHED_ITEMS; ++u) {
            if (first + u < count) touched_cum[first + u] = running;
            running += values[u];
        }
        carry += tile_total;
        __syncthreads();  // warp_sums is rewritten by the next tile's scan
    }
    if (threadIdx.x == 0) touched_cum[count] = carry;
}

// The new row offsets from the touched rows' sums: row v's offset moves by the changes of the
// touched rows before it, which are those of the events sorted before the first event of a row
// >= v (a binary search in the side's sorted events, cached: the batch's keys are few).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_row_ptr_touched(const i64* __restrict__ sizes, const O* __restrict__ old_ptr,
                          const i64* __restrict__ sorted, const i64* __restrict__ touched_cum,
                          O* __restrict__ new_ptr, i32 write_edges, i64* __restrict__ record) {
    using namespace apply;
    const i32 n_old = static_cast<i32>(sizes[SZ_N_OLD]);
    const i32 n_after = static_cast<i32>(sizes[SZ_N_AFTER]);
    const i64 count = sizes[SZ_COUNT];
    const GridStride g;
    for (i64 v = g.first; v <= n_after; v += g.stride) {
        i64 lo = 0, hi = count;  // the first sorted position whose row is >= v
        while (lo < hi) {
            const i64 mid = (lo + hi) >> 1;
            if (static_cast<i64>(event_row(sorted[mid])) < v) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        const i64 value = static_cast<i64>(old_ptr[v < n_old ? v : n_old]) + touched_cum[lo];
        new_ptr[v] = static_cast<O>(value);
        if (v == n_after && write_edges) record[REC_EDGES] = value;
    }
}

// ---------------------------------------------------------------------------------------------
// Untouched rows: every entry moves by its row's shift (one coalesced pass over the old entries).
// Four entries a thread with their dependent loads issued together measured no better (ncu, H100,
// roadNet-PA safe50k: 82.7 -> 87.8 us a side; whole update() 1.009x per 50,000-change batch,
// bench/update_anatomy.py --ab-env, c9c2608, reverted), so each thread moves one entry at a time.
// Nor did runs without a lookup per entry (0cdc6e9, reverted): each block walked the side's sorted
// events, whose rows bound runs of untouched entries that all move by one shift, and copied the
// runs (key, row_of and the weights streamed, no row flag or offsets read per entry): the same
// bytes (its GPU tests passed), but 83.8 us a side under ncu against this kernel's 71.5, and the
// whole update() per batch 1.010x on roadNet-PA's 50,000-change batches, 1.033x on its 10,000-change
// ones, 1.015x on the 4,039-vertex graph, 0.999x on luxembourg_osm's 100-change batches and 1.093x
// on road_usa's 10,000-change batches (H100 80GB HBM3, bench/update_anatomy.py --ab-env
// ENGINES_APPLY_MOVE=rows,segments, interleaved, trees equal). The row lookups hit the cache; the
// move is bound by the entries it streams either way.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_move(const i64* __restrict__ sizes, i32 K, const O* __restrict__ old_ptr, const O* __restrict__ new_ptr,
               const i32* __restrict__ row_flag, const i32* __restrict__ key,
               const i32* __restrict__ row_of, const i32* __restrict__ weight, i64 stride,
               i32* __restrict__ new_key, i32* __restrict__ new_row_of, i32* __restrict__ new_weight,
               i64 new_stride, const i64* __restrict__ extent) {
    // a slack set's entries reach its tail (`extent`, the side's meta slot), with room between
    // rows (row_of -1); a packed set's are the first m_old
    const i64 m_old = extent != nullptr ? *extent : sizes[apply::SZ_M_OLD];
    const GridStride g;
    for (i64 e = g.first; e < m_old; e += g.stride) {
        const i32 r = row_of[e];
        if (r < 0 || row_flag[r]) continue;
        const i64 to = e + (static_cast<i64>(new_ptr[r]) - static_cast<i64>(old_ptr[r]));
        new_key[to] = key[e];
        new_row_of[to] = r;
        for (i32 k = 0; k < K; ++k) new_weight[k * new_stride + to] = weight[k * stride + e];
    }
}

// ---------------------------------------------------------------------------------------------
// Touched rows: the group of the row's first event writes the survivors in order (upserted weights
// from their insertion) and then the staged appends; it clears the marks, row_flag and row_delta
// it consumed.
namespace apply {
// The new row of one touched row at `base`, `length` entries: the old row [lo, hi) less its
// removed entries (mark -1; upserted ones take their insertion's weights), then the staged
// appends from sorted position p. Clears the marks it read.
__device__ __forceinline__ void write_row(const Group& grp, i32 row, i64 p, i64 lo, i64 hi, i64 base, i64 length,
                                          const i32* __restrict__ ins_w, i32 K, const i32* __restrict__ key,
                                          const i32* __restrict__ weight, i64 stride, i32* __restrict__ mark,
                                          i32* __restrict__ new_key, i32* __restrict__ new_row_of,
                                          i32* __restrict__ new_weight, i64 new_stride,
                                          const i32* __restrict__ stage_key, const i32* __restrict__ stage_ins) {
    const int lane = grp.lane;
    const unsigned below = (1u << lane) - 1u;  // the group's lanes before this one
    i64 written = 0;
    for (i64 chunk = lo; chunk < hi; chunk += grp.width) {
        const i64 o = chunk + lane;
        const i32 m = o < hi ? mark[o] : -1;
        const bool alive = m != -1;
        const unsigned ballot = group_ballot(grp, alive);
        if (alive) {
            const i64 to = base + written + __popc(ballot & below);
            new_key[to] = key[o];
            new_row_of[to] = row;
            for (i32 k = 0; k < K; ++k) {
                new_weight[k * new_stride + to] =
                    m > 0 ? ins_w[static_cast<i64>(m - 1) * K + k] : weight[k * stride + o];
            }
        }
        if (o < hi && m != 0) mark[o] = 0;
        written += __popc(ballot);
    }
    for (i64 s = lane; s < length - written; s += grp.width) {
        const i64 to = base + written + s;
        new_key[to] = stage_key[p + s];
        new_row_of[to] = row;
        const i64 ins = stage_ins[p + s];
        for (i32 k = 0; k < K; ++k) new_weight[k * new_stride + to] = ins_w[ins * K + k];
    }
}

// Entries [lo, hi) of a slack set become room: no row's (row_of -1), weight 0 in every column
// (the maxima rescan then reads a slack set's whole extent without a mask), key -1.
__device__ __forceinline__ void clear_entries(const Group& grp, i64 lo, i64 hi, i32 K, i32* __restrict__ key,
                                              i32* __restrict__ row_of, i32* __restrict__ weight, i64 stride) {
    for (i64 e = lo + grp.lane; e < hi; e += grp.width) {
        key[e] = -1;
        row_of[e] = -1;
        for (i32 k = 0; k < K; ++k) weight[k * stride + e] = 0;
    }
}

// The capacity a slack row is given when it moves to the tail: its length and a quarter more,
// and two entries (room for a few more insertions before it moves again).
__device__ __forceinline__ i64 slack_capacity(i64 length) { return length + (length >> 2) + 2; }
}  // namespace apply

template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_rebuild(const i64* __restrict__ sizes, const i64* __restrict__ sorted, const i32* __restrict__ ins_w,
                  i32 K, const O* __restrict__ old_ptr, const O* __restrict__ old_end, const i32* __restrict__ key,
                  const i32* __restrict__ weight, i64 stride, i32* __restrict__ mark,
                  const O* __restrict__ new_ptr, i32* __restrict__ new_key, i32* __restrict__ new_row_of,
                  i32* __restrict__ new_weight, i64 new_stride, i32* __restrict__ row_flag,
                  i64* __restrict__ row_delta, const i32* __restrict__ stage_key,
                  const i32* __restrict__ stage_ins, i32 group_shift) {
    using namespace apply;
    const i64 count = sizes[SZ_COUNT];
    const i32 n_old = static_cast<i32>(sizes[SZ_N_OLD]);
    const Group grp = make_group(group_shift);
    const i64 groups = (static_cast<i64>(gridDim.x) * blockDim.x) >> group_shift;
    for (i64 p = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> group_shift; p < count;
         p += groups) {
        const i32 row = event_row(sorted[p]);
        if (p > 0 && event_row(sorted[p - 1]) == row) continue;
        i64 lo, hi;
        old_range(old_ptr, old_end, n_old, row, lo, hi);
        const i64 base = static_cast<i64>(new_ptr[row]);
        const i64 length = static_cast<i64>(new_ptr[row + 1]) - base;
        write_row(grp, row, p, lo, hi, base, length, ins_w, K, key, weight, stride, mark, new_key, new_row_of,
                  new_weight, new_stride, stage_key, stage_ins);
        if (grp.lane == 0) {
            row_flag[row] = 0;
            row_delta[row] = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The slack layout (device_apply.py LAYOUT_ENV, device_graph.py): row v of a side is
// [ptr[v], end[v]) inside its room [ptr[v], limit[v]); entries in no row's range carry row_of -1
// and weight 0, and so does every entry from the side's tail (meta[side]) on. A commit writes the
// spare set in place: first the rows in which the spare differs from the current set (the rows of
// the commit between them: apply_sync_rows), then the touched rows where they are. A row that
// outgrows its room moves to the tail, the room it leaves cleared. A commit costs O(rows touched
// by this commit and the last) instead of the packed layout's O(n + m) offsets and move; a
// compaction (the packed layout's kernels, laying rows out tight again: apply_slack_lengths,
// apply_slack_layout) runs when the tail has grown too far (device_apply.py decides, on the host).

// The rows of a list of sorted keys (one side's slots, pads and rows past `dst_rows` skipped)
// made equal in dst to src: their ranges, rooms and entries; the room a row leaves in dst cleared.
// Block 0 also copies src's tail of the side. One group of lanes per key, the row's first key.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_sync_rows(const i64* __restrict__ keys, i64 slots, i32 K, i32 src_rows, const O* __restrict__ s_ptr,
                    const O* __restrict__ s_end, const O* __restrict__ s_limit, const i32* __restrict__ s_key,
                    const i32* __restrict__ s_row_of, const i32* __restrict__ s_weight, i64 s_stride,
                    const i64* __restrict__ s_meta, i32 dst_rows, O* __restrict__ d_ptr, O* __restrict__ d_end,
                    O* __restrict__ d_limit, i32* __restrict__ d_key, i32* __restrict__ d_row_of,
                    i32* __restrict__ d_weight, i64 d_stride, i64* __restrict__ d_meta, i32 side, i32 group_shift) {
    using namespace apply;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        d_meta[META_TAIL + side] = s_meta[META_TAIL + side];
        d_meta[META_LONGEST + side] = s_meta[META_LONGEST + side];
    }
    const Group grp = make_group(group_shift);
    const i64 groups = (static_cast<i64>(gridDim.x) * blockDim.x) >> group_shift;
    for (i64 p = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> group_shift; p < slots;
         p += groups) {
        const i32 row = event_row(keys[p]);
        if (row >= dst_rows) continue;  // padding keys (row 0x7fffffff) and rows the set has no room for
        if (p > 0 && event_row(keys[p - 1]) == row) continue;
        i64 s_lo = 0, s_hi = 0, s_lim = 0;
        if (row < src_rows) {
            s_lo = static_cast<i64>(s_ptr[row]);
            s_hi = static_cast<i64>(s_end[row]);
            s_lim = static_cast<i64>(s_limit[row]);
        }
        const i64 d_lo = static_cast<i64>(d_ptr[row]);
        const i64 d_hi = static_cast<i64>(d_end[row]);
        if (d_lo != s_lo) {
            clear_entries(grp, d_lo, d_hi, K, d_key, d_row_of, d_weight, d_stride);
        } else if (s_hi < d_hi) {
            clear_entries(grp, s_hi, d_hi, K, d_key, d_row_of, d_weight, d_stride);
        }
        for (i64 e = s_lo + grp.lane; e < s_hi; e += grp.width) {
            d_key[e] = s_key[e];
            d_row_of[e] = s_row_of[e];
            for (i32 k = 0; k < K; ++k) d_weight[k * d_stride + e] = s_weight[k * s_stride + e];
        }
        if (grp.lane == 0) {
            d_ptr[row] = static_cast<O>(s_lo);
            d_end[row] = static_cast<O>(s_hi);
            d_limit[row] = static_cast<O>(s_lim);
        }
    }
}

// Touched rows of a slack set, in place (the set equals the current one in every row the commit
// reads: apply_sync_rows ran), or into a fresh layout (`compact`: apply_slack_layout gave every
// row its exact room). A row that no longer fits its room takes slack_capacity entries from the
// side's tail (one atomic per moving row) and clears the room it had; a row that shrinks clears the
// entries it gave up.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_rebuild_slack(const i64* __restrict__ sizes, const i64* __restrict__ sorted,
                        const i32* __restrict__ ins_w, i32 K, const O* __restrict__ old_ptr,
                        const O* __restrict__ old_end, const i32* __restrict__ key, const i32* __restrict__ weight,
                        i64 stride, i32* __restrict__ mark, O* __restrict__ new_ptr, O* __restrict__ new_end,
                        O* __restrict__ new_limit, i32* __restrict__ new_key, i32* __restrict__ new_row_of,
                        i32* __restrict__ new_weight, i64 new_stride, i32* __restrict__ row_flag,
                        i64* __restrict__ row_delta, const i32* __restrict__ stage_key,
                        const i32* __restrict__ stage_ins, i64* __restrict__ meta, i32 side, i32 compact,
                        i32 group_shift) {
    using namespace apply;
    const i64 count = sizes[SZ_COUNT];
    const i32 n_old = static_cast<i32>(sizes[SZ_N_OLD]);
    const Group grp = make_group(group_shift);
    const i64 groups = (static_cast<i64>(gridDim.x) * blockDim.x) >> group_shift;
    for (i64 p = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> group_shift; p < count;
         p += groups) {
        const i32 row = event_row(sorted[p]);
        if (p > 0 && event_row(sorted[p - 1]) == row) continue;
        i64 lo, hi;
        old_range(old_ptr, old_end, n_old, row, lo, hi);
        const i64 length = (hi - lo) + row_delta[row];
        i64 base = static_cast<i64>(new_ptr[row]);
        i64 limit = static_cast<i64>(new_limit[row]);
        // what the row gives up here: the room it leaves (it moves to the tail), or the entries
        // past its new end (it shrinks); cleared once its new entries are written
        i64 give_lo = 0, give_hi = 0;
        if (!compact) {
            give_hi = static_cast<i64>(new_end[row]);  // the row's end here (the current set's)
            if (length > limit - base) {
                const i64 room = slack_capacity(length);
                u64 taken = 0;
                if (grp.lane == 0) {
                    taken = atomicAdd(reinterpret_cast<u64*>(meta + META_TAIL + side), static_cast<u64>(room));
                }
                give_lo = base;
                base = static_cast<i64>(__shfl_sync(grp.mask, taken, grp.base));  // the group's first lane took it
                limit = base + room;
            } else {
                give_lo = base + length;
            }
        }
        write_row(grp, row, p, lo, hi, base, length, ins_w, K, key, weight, stride, mark, new_key, new_row_of,
                  new_weight, new_stride, stage_key, stage_ins);
        clear_entries(grp, give_lo, give_hi, K, new_key, new_row_of, new_weight, new_stride);
        if (grp.lane == 0) {
            // the longest row's bound: a racy read first, so that the rows below it add no atomics
            if (length > meta[META_LONGEST + side]) {
                atomicMax(reinterpret_cast<long long*>(meta + META_LONGEST + side), static_cast<long long>(length));
            }
            new_ptr[row] = static_cast<O>(base);
            new_end[row] = static_cast<O>(base + length);
            new_limit[row] = static_cast<O>(limit);
            row_flag[row] = 0;
            row_delta[row] = 0;
        }
    }
}

// A compaction's row lengths after the commit, written into the new row ends (they are the
// new rooms' sizes until apply_slack_layout; the library's prefix sum of them goes into the new
// limits).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_slack_lengths(const i64* __restrict__ sizes, const O* __restrict__ old_ptr, const O* __restrict__ old_end,
                        const i64* __restrict__ row_delta, O* __restrict__ lengths) {
    const i32 n_old = static_cast<i32>(sizes[apply::SZ_N_OLD]);
    const i32 n_after = static_cast<i32>(sizes[apply::SZ_N_AFTER]);
    const GridStride g;
    for (i64 v = g.first; v < n_after; v += g.stride) {
        const i64 had = v < n_old ? static_cast<i64>(old_end[v]) - static_cast<i64>(old_ptr[v]) : 0;
        lengths[v] = static_cast<O>(had + row_delta[v]);
    }
}

// A compaction's layout: row v's room is exactly its new length (`lengths`, the row ends so far),
// starting where the rows before it end (`inclusive`: their prefix sum, the limits so far); rows
// from n_after to the set's `rows` have none (start, end and limit 0). The side's tail is the
// total.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_slack_layout(const i64* __restrict__ sizes, i32 rows, O* __restrict__ new_ptr, O* __restrict__ lengths,
                       O* __restrict__ inclusive, i64* __restrict__ meta, i32 side) {
    const i32 n_after = static_cast<i32>(sizes[apply::SZ_N_AFTER]);
    const GridStride g;
    if (g.first == 0) meta[apply::META_TAIL + side] = n_after > 0 ? static_cast<i64>(inclusive[n_after - 1]) : 0;
    for (i64 v = g.first; v < rows; v += g.stride) {
        if (v < n_after) {
            const O stop = inclusive[v];
            new_ptr[v] = static_cast<O>(stop - lengths[v]);
            lengths[v] = stop;  // the row's end: its room is full
        } else {
            new_ptr[v] = O(0);
            lengths[v] = O(0);
            inclusive[v] = O(0);
        }
    }
}

// Entries [lo, hi) from the side's tail on cleared (a compaction's set, whose earlier tail may
// have reached further than its new one).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_clear_from_tail(i64 lo, i64 hi, const i64* __restrict__ meta, i32 side, i32 K, i32* __restrict__ key,
                          i32* __restrict__ row_of, i32* __restrict__ weight, i64 stride) {
    const i64 tail = meta[apply::META_TAIL + side];
    const GridStride g;
    for (i64 e = lo + g.first; e < hi; e += g.stride) {
        if (e < tail) continue;
        key[e] = -1;
        row_of[e] = -1;
        for (i32 k = 0; k < K; ++k) weight[k * stride + e] = 0;
    }
}

// A slack commit's last record slots: the new edge count (the old one, plus the appends, less
// the removals: the out side's counters), the farther of the two sides' tails and the longer of
// their longest rows' bounds.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_slack_finish(const i64* __restrict__ sizes, const i64* __restrict__ meta, i64* __restrict__ record) {
    using namespace apply;
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    record[REC_EDGES] = sizes[SZ_M_OLD] + record[REC_INSERTED] - record[REC_DELETED];
    record[REC_TAIL] = meta[META_TAIL] > meta[META_TAIL + 1] ? meta[META_TAIL] : meta[META_TAIL + 1];
    record[REC_LONGEST] =
        meta[META_LONGEST] > meta[META_LONGEST + 1] ? meta[META_LONGEST] : meta[META_LONGEST + 1];
}

// ---------------------------------------------------------------------------------------------
// The maximum of each column whose old maximum may be gone (rec_lost_max set): a full rescan of
// the new column, only then; other columns return at once. One atomic per block: an atomic per
// warp (8,256 into one word for a 1,032-block grid) serialized at that word and made this kernel
// 20 us of a 176k-entry graph's commit (ncu, H100), against a few for the reads.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_rescan_max(const i64* __restrict__ sizes, const O* __restrict__ new_ptr, i32 K,
                     const i32* __restrict__ weight, i64 stride, i64* __restrict__ record,
                     const i64* __restrict__ extent) {
    using namespace apply;
    __shared__ i64 warp_best[SSSP_BLOCK / 32];
    const i32 n_after = static_cast<i32>(sizes[SZ_N_AFTER]);
    // a slack set: every entry up to the out side's tail (room reads weight 0); packed: the first m_new
    const i64 m_new = extent != nullptr ? *extent : static_cast<i64>(new_ptr[n_after]);
    const GridStride g;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    for (i32 k = 0; k < K; ++k) {
        // uniform over the grid (the flag was set before launch), so every thread meets the barriers
        if (record[rec_lost_max(K, k)] == 0) continue;
        i64 best = 0;
        for (i64 e = g.first; e < m_new; e += g.stride) {
            const i64 w = weight[k * stride + e];
            best = w > best ? w : best;
        }
        best = warp_max(best);
        if (lane_id() == 0) warp_best[warp] = best;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int other = 1; other < static_cast<int>(blockDim.x >> 5); ++other) {
                best = warp_best[other] > best ? warp_best[other] : best;
            }
            if (best > 0) atomicMax(reinterpret_cast<long long*>(record + rec_rescan_max(K, k)),
                                    static_cast<long long>(best));
        }
        __syncthreads();  // warp_best is written again for the next column
    }
}

// ---------------------------------------------------------------------------------------------
// The commit's record into its pinned host mirror (ENGINES_MAPPED_RECORDS,
// engines/sssp/cuda/mapped.py): the commit's last step, one block storing `count` slots over the
// bus instead of a download node after the kernels. The host reads the mirror once the event
// recorded after the commit has completed, which makes these stores visible.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK)
    apply_record_out(const i64* __restrict__ record, i64* host_record, i32 count) {
    block_copy_words<i64>(host_record, record, count);
    __threadfence_system();
}

// ---------------------------------------------------------------------------------------------
// The change lists of objective k (algorithm.md §3.4) in the engines' workspace buffers: every
// deletion, then every insertion with increased[i, k], in order; heads = insert_dst of every
// insertion; the changed count in *changed_count. Blocks of 1024 threads, one pass: the deletions
// and the heads are copied over the whole grid; each block takes a contiguous chunk of the
// insertions, in which each thread counts a contiguous run, a block-wide exclusive scan gives every
// run its first output slot, and each thread writes its run in order (a chunked loop with barriers
// per 1024 insertions cost 64 us for a 25k-insertion batch on an H200). A block after the first
// counts the increased insertions before its chunk itself (each thread a strided share of them,
// loads independent): no block waits for another, at the price of reading those flags once per
// later block. With one block (ENGINES_CHANGES_GRID=0, or a batch of at most CHANGES_PER_BLOCK
// events) that count is skipped. Issue 34: on roadNet-PA safe50k (48,227 events) the one block took
// 31.9 us under ncu, twelve blocks 12.9 us (H100, 0c71f5a). Positions are 32-bit like the event
// indices (a batch holds fewer than 2^31 - 1024 x blocks events).
namespace apply {
template <typename V>
__device__ __forceinline__ void write_changes(i32 num_deletions, i32 num_insertions,
                                              const i32* __restrict__ ev_src, const i32* __restrict__ ev_dst,
                                              const unsigned char* __restrict__ increased, i32 K, i32 k,
                                              V* __restrict__ changed_from, V* __restrict__ changed_to,
                                              V* __restrict__ heads, V* __restrict__ changed_count) {
    __shared__ i32 warp_sums[32];  // block_exclusive_scan's scratch (up to 1024 threads)
    const int tid = threadIdx.x;
    const i32 threads = static_cast<i32>(blockDim.x);
    const i32 blocks = static_cast<i32>(gridDim.x);
    const i32 block = static_cast<i32>(blockIdx.x);
    const i64 grid_first = static_cast<i64>(block) * threads + tid;
    const i64 grid_stride = static_cast<i64>(blocks) * threads;
    for (i64 j = grid_first; j < num_deletions; j += grid_stride) {
        changed_from[j] = static_cast<V>(ev_src[j]);
        changed_to[j] = static_cast<V>(ev_dst[j]);
    }
    for (i64 i = grid_first; i < num_insertions; i += grid_stride) {
        heads[i] = static_cast<V>(ev_dst[num_deletions + i]);
    }
    // this block's chunk of the insertions, [lo, hi)
    const i32 chunk = (num_insertions + blocks - 1) / blocks;
    const i32 lo = static_cast<i32>(min(static_cast<i64>(block) * chunk, static_cast<i64>(num_insertions)));
    const i32 hi = lo + chunk < num_insertions ? lo + chunk : num_insertions;
    i32 earlier = 0;  // the increased insertions before the chunk (uniform: block > 0 for every thread)
    if (block > 0) {
        i32 seen = 0;
#pragma unroll 8
        for (i32 i = tid; i < lo; i += threads) seen += increased[static_cast<i64>(i) * K + k] != 0 ? 1 : 0;
        block_exclusive_scan(seen, warp_sums, earlier);
        __syncthreads();  // warp_sums is read by every thread above and written again below
    }
    const i32 per = (hi - lo + threads - 1) / threads;
    const i32 first = lo + tid * per < hi ? lo + tid * per : hi;
    const i32 last = first + per < hi ? first + per : hi;
    i32 mine = 0;
    for (i32 i = first; i < last; ++i) mine += increased[static_cast<i64>(i) * K + k] != 0 ? 1 : 0;
    i32 total;  // the increased insertions of the chunk
    const i32 before = block_exclusive_scan(mine, warp_sums, total);
    i32 at = num_deletions + earlier + before;
    for (i32 i = first; i < last; ++i) {
        if (increased[static_cast<i64>(i) * K + k] != 0) {
            changed_from[at] = static_cast<V>(ev_src[num_deletions + i]);
            changed_to[at] = static_cast<V>(ev_dst[num_deletions + i]);
            ++at;
        }
    }
    if (block == blocks - 1 && tid == threads - 1) *changed_count = static_cast<V>(num_deletions + earlier + total);
}
}  // namespace apply

// The change-list kernels (they differ in where the batch's sizes come from): the sizes as
// arguments, for a launch from Python.
template <typename V, typename O>
__global__ void __launch_bounds__(1024)
    apply_changes(i32 num_deletions, i32 num_insertions, const i32* __restrict__ ev_src,
                  const i32* __restrict__ ev_dst, const unsigned char* __restrict__ increased, i32 K,
                  i32 k, V* __restrict__ changed_from, V* __restrict__ changed_to, V* __restrict__ heads,
                  V* __restrict__ changed_count) {
    apply::write_changes<V>(num_deletions, num_insertions, ev_src, ev_dst, increased, K, k, changed_from,
                            changed_to, heads, changed_count);
}

// The same with the batch's sizes read from the device (the sizes block the commit copied up with
// the events, SizeSlot): the kernel a captured engine run enqueues in its graph (fused.py
// ENGINES_FUSED_CAPTURE), whose arguments must not change from batch to batch. Valid until the next
// commit stages its own sizes.
template <typename V, typename O>
__global__ void __launch_bounds__(1024)
    apply_changes_sized(const i64* __restrict__ sizes, const i32* __restrict__ ev_src,
                        const i32* __restrict__ ev_dst, const unsigned char* __restrict__ increased, i32 K,
                        i32 k, V* __restrict__ changed_from, V* __restrict__ changed_to, V* __restrict__ heads,
                        V* __restrict__ changed_count) {
    apply::write_changes<V>(static_cast<i32>(sizes[apply::SZ_DELETIONS]),
                            static_cast<i32>(sizes[apply::SZ_INSERTIONS]), ev_src, ev_dst, increased, K, k,
                            changed_from, changed_to, heads, changed_count);
}
