// The CUDA fused engine: one persistent cooperative kernel per update and per compute()
// (algorithm.md §5, §6, §10). Every phase runs in one launch, separated by grid.sync(); every loop
// decision is taken on the device, each thread evaluating it identically from control-block
// values read after a barrier. The host reads the control block once, after the launch (§5.11).
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

__device__ __forceinline__ u64 min_u64(u64 a, u64 b) { return a < b ? a : b; }

// The near-far loop (§5.9 (c)), entered after the first split: near list 0 holds near[0]
// entries, far pile 0 holds far[0] entries. Returns through the counters by reference.
template <typename V, typename O>
__device__ __forceinline__ void near_far_loop(cg::grid_group& grid, const GridStride& gs,
                              const CsrView<V, O>& out, const Packing& k, V source, u64 bound,
                              u64 delta, u64 threshold, u64* words, i32* stamp, i32* in_far,
                              V* near_a, V* near_b, V* far_a, V* far_b, FusedControl<V>* ctl,
                              i32& generation, i32& iterations, i32& epochs, i64& pushes) {
    u32 it = 0;  // push iterations so far: near list it & 1, near count slot it % 3
    u32 ep = 0;  // epochs so far: far pile ep & 1, far count slot ep % 3, minimum (ep + 1) % 3
    for (;;) {
        const V near_count = load_cg(&ctl->near[it % 3]);
        if (near_count > 0) {  // one push iteration
            ++generation;
            ++iterations;
            pushes += static_cast<i64>(near_count);
            V* current = (it & 1u) ? near_b : near_a;
            V* next_list = (it & 1u) ? near_a : near_b;
            V* pile = (ep & 1u) ? far_b : far_a;
            V* next_count = &ctl->near[(it + 1) % 3];
            V* pile_count = &ctl->far[ep % 3];
            if (gs.first == 0) ctl->near[(it + 2) % 3] = V(0);
            for (i64 i = gs.first; i < static_cast<i64>(near_count); i += gs.stride) {
                const V u = load_cg(current + i);
                push_vertex<V, O>(out, k, u, source, bound, threshold, generation, words, stamp,
                                  in_far, next_list, next_count, pile, pile_count);
            }
            grid.sync();
            ++it;
            continue;
        }
        const V far_count = load_cg(&ctl->far[ep % 3]);
        if (far_count == 0) break;  // done: every in_far flag is back to zero
        ++epochs;  // raise the threshold past the far pile
        V* pile = (ep & 1u) ? far_b : far_a;
        V* kept = (ep & 1u) ? far_a : far_b;
        u64* min_slot = &ctl->minimum[(ep + 1) % 3];
        if (gs.first == 0) {
            ctl->minimum[(ep + 2) % 3] = EMPTY_MIN;
            ctl->far[(ep + 2) % 3] = V(0);
        }
        u64 local = EMPTY_MIN;
        for (i64 i = gs.first; i < static_cast<i64>(far_count); i += gs.stride) {
            const V v = load_cg(pile + i);
            local = min_u64(local, word_distance(k, load_cg(words + v)));
        }
        warp_min_into(local, min_slot);
        grid.sync();
        const u64 m = load_cg(min_slot);
        threshold = (threshold > m ? threshold : m) + delta;
        ++generation;
        V* current = (it & 1u) ? near_b : near_a;
        V* near_slot = &ctl->near[it % 3];  // empty: read as zero by every thread above
        V* kept_count = &ctl->far[(ep + 1) % 3];
        for (i64 i = gs.first; i < static_cast<i64>(far_count); i += gs.stride) {
            const V v = load_cg(pile + i);
            const u64 d = word_distance(k, load_cg(words + v));
            if (d < threshold) {
                in_far[v] = 0;
                if (claim(stamp, v, generation)) current[append(near_slot)] = v;
            } else {
                kept[append(kept_count)] = v;  // stays in the pile; in_far stays 1
            }
        }
        grid.sync();
        ++ep;
    }
}

// First threshold and first split (§5.9 (a), (b)) over the frontier of the pull.
template <typename V>
__device__ __forceinline__ void first_split(cg::grid_group& grid, const GridStride& gs, const Packing& k,
                            u64 delta, u64* words, i32* stamp, i32* in_far, const V* frontier,
                            V* near_a, V* far_a, FusedControl<V>* ctl, i32 generation,
                            u64& threshold) {
    const V count = load_cg(&ctl->frontier);
    u64 local = EMPTY_MIN;
    for (i64 i = gs.first; i < static_cast<i64>(count); i += gs.stride) {
        const u64 x = load_cg(words + load_cg(frontier + i));
        if (x != INF_WORD) local = min_u64(local, x >> k.bits);
    }
    warp_min_into(local, &ctl->minimum[0]);
    grid.sync();
    const u64 m = load_cg(&ctl->minimum[0]);
    threshold = (m == EMPTY_MIN ? 0ull : m) + delta;
    for (i64 i = gs.first; i < static_cast<i64>(count); i += gs.stride) {
        const V v = load_cg(frontier + i);
        const u64 d = word_distance(k, load_cg(words + v));
        if (d < threshold) {
            if (claim(stamp, v, generation)) near_a[append(&ctl->near[0])] = v;
        } else if (atomicExch(in_far + v, 1) == 0) {
            far_a[append(&ctl->far[0])] = v;
        }
    }
    grid.sync();
}

// Distance-only words: write the distances and recover every parent (§4.4). With `count`, also
// count `affected` (update): `mark` and `saved_parent` are per-vertex scratch (the candidates list
// and the ancestors, no longer needed). Needs two barriers, or three when counting.
template <typename V, typename O>
__device__ __forceinline__ void recover_parents(cg::grid_group& grid, const GridStride& gs,
                                const CsrView<V, O>& out, V n, V source, const u64* words,
                                i64* distances, V* parents, bool count, V* mark,
                                V* saved_parent, FusedControl<V>* ctl) {
    for (i64 v = gs.first; v < static_cast<i64>(n); v += gs.stride) {
        const u64 x = load_cg(words + v);
        const i64 d = (x == INF_WORD) ? INF_DISTANCE : static_cast<i64>(x);
        if (count) {
            mark[v] = (d != distances[v]) ? V(1) : V(0);
            saved_parent[v] = parents[v];
        }
        distances[v] = d;
        parents[v] = (x == INF_WORD || v == static_cast<i64>(source)) ? V(-1) : VertexMax<V>::value;
    }
    grid.sync();
    for (i64 u = gs.first; u < static_cast<i64>(n); u += gs.stride) {
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
    if (!count) return;
    grid.sync();
    u64 affected = 0;
    for (i64 v = gs.first; v < static_cast<i64>(n); v += gs.stride) {
        if (load_cg(mark + v) != V(0) || load_cg(parents + v) != load_cg(saved_parent + v)) {
            ++affected;
        }
    }
    warp_sum_into(affected, &ctl->affected);
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

}  // namespace fused
}  // namespace sssp

// ---------------------------------------------------------------------------------------------
// update(): pack, roots, pointer jumping, invalidation, heads, pull, near-far, unpack (§5).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_FUSED_MIN_BLOCKS) fused_update(
    V n, V source,
    const O* __restrict__ out_ptr, const V* __restrict__ out_index,
    const sssp::i32* __restrict__ out_weight,
    const O* __restrict__ in_ptr, const V* __restrict__ in_index,
    const sssp::i32* __restrict__ in_weight,
    sssp::i64* distances, V* parents,
    sssp::u64* words, sssp::i32* stamp, sssp::i32* in_far, sssp::i32* flag, V* ancestor,
    V* candidates, V* frontier, V* near_a, V* near_b, V* far_a, V* far_b,
    const V* __restrict__ changed_from, const V* __restrict__ changed_to,
    const V* __restrict__ changed_count,
    const V* __restrict__ heads, V num_heads,
    sssp::u32 bits, sssp::u64 no_parent, sssp::u64 bound, sssp::u64 delta,
    sssp::i32 base_generation, sssp::i32 max_rounds, sssp::FusedControl<V>* ctl) {
    using namespace sssp;
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    const GridStride gs;
    const Packing k{bits, no_parent};
    const CsrView<V, O> out{out_ptr, out_index, out_weight};
    const CsrView<V, O> in{in_ptr, in_index, in_weight};
    const i64 nn = static_cast<i64>(n);
    // The changed count is built on the device by the apply (weight increases are known there
    // only); every thread reads the same value, so the branch below stays uniform.
    const V num_changed = *changed_count;

    // Pack the old tree (§5.3) and mark the roots (§5.4), judged against the input parents.
    bool overflow = false;
    for (i64 v = gs.first; v < nn; v += gs.stride) {
        const i64 d = distances[v];
        const V p = parents[v];
        u64 word = INF_WORD;
        if (d < INF_HALF) {
            if (d < 0 || static_cast<u64>(d) > bound) {
                overflow = true;  // invalid_input, reported after the run
            } else {
                word = pack(k, static_cast<u64>(d), static_cast<i64>(p));
            }
        }
        words[v] = word;
        ancestor[v] = p;
    }
    if (overflow) ctl->overflow = 1;
    for (i64 i = gs.first; i < static_cast<i64>(num_changed); i += gs.stride) {
        const V to = changed_to[i];
        if (parents[to] == changed_from[i]) flag[to] = 1;
    }
    grid.sync();

    // Subtree invalidation by pointer jumping (§5.5), only with a non-empty changed list.
    if (num_changed > 0) {
        for (i32 r = 0; r < max_rounds; ++r) {
            if (gs.first == 0) {
                ctl->active[(r + 1) % 3] = 0;
                ctl->rounds = r + 1;
            }
            bool jumping = false;
            for (i64 v = gs.first; v < nn; v += gs.stride) {
                const V a = load_cg(ancestor + v);
                if (a < 0 || load_cg(flag + v) != 0) continue;
                if (load_cg(flag + a) != 0) {
                    flag[v] = 1;
                    continue;
                }
                const V next = load_cg(ancestor + a);
                ancestor[v] = next;
                jumping |= (next >= 0);
            }
            if (__any_sync(SSSP_FULL_MASK, jumping) && lane_id() == 0) ctl->active[r % 3] = 1;
            grid.sync();
            if (load_cg(&ctl->active[r % 3]) == 0) break;
        }
    }

    // Invalidate (§5.6): the exact count goes to ctl->invalidated, never the list counter.
    i32 generation = base_generation;  // g_inv
    {
        V local = 0;
        for (i64 v = gs.first; v < nn; v += gs.stride) {
            if (load_cg(flag + v) != 0) {
                flag[v] = 0;  // leaves the flags clean for the next run
                words[v] = INF_WORD;
                stamp[v] = generation;
                candidates[append(&ctl->candidates)] = static_cast<V>(v);
                ++local;
            }
        }
        warp_sum_into(local, &ctl->invalidated);
    }
    grid.sync();

    // Insertion heads (§5.7), with the same generation: listed once, never the source.
    for (i64 i = gs.first; i < static_cast<i64>(num_heads); i += gs.stride) {
        const V v = heads[i];
        if (v != source && claim(stamp, v, generation)) {
            candidates[append(&ctl->candidates)] = v;
        }
    }
    grid.sync();

    // Pull (§5.8): every candidate takes its key-minimum over all in-neighbours.
    ++generation;  // g_pull
    {
        const V count = load_cg(&ctl->candidates);
        for (i64 i = gs.first; i < static_cast<i64>(count); i += gs.stride) {
            const V v = load_cg(candidates + i);
            const u64 current = load_cg(words + v);
            u64 best = current;
            const O end = in.end(v);
            for (O e = in.begin(v); e < end; ++e) {
                const V u = in.neighbour(e);
                const u64 x = load_cg(words + u);
                if (x == INF_WORD) continue;
                const u64 nd = (x >> k.bits) + in.weight_of(e);
                if (nd <= bound) best = fused::min_u64(best, pack(k, nd, static_cast<i64>(u)));
            }
            if (best < current) {
                const u64 old = atomicMin(words + v, best);
                if (word_distance(k, best) < word_distance(k, old) &&
                    claim(stamp, v, generation)) {
                    frontier[append(&ctl->frontier)] = v;
                }
            }
        }
    }
    grid.sync();

    // First threshold and split (§5.9 (a), (b)), then the near-far loop (§5.9 (c)).
    ++generation;  // g0
    u64 threshold = 0;
    fused::first_split<V>(grid, gs, k, delta, words, stamp, in_far, frontier, near_a, far_a, ctl,
                          generation, threshold);
    i32 iterations = 0, epochs = 0;
    i64 pushes = 0;
    fused::near_far_loop<V, O>(grid, gs, out, k, source, bound, delta, threshold, words, stamp,
                               in_far, near_a, near_b, far_a, far_b, ctl, generation, iterations,
                               epochs, pushes);

    // Unpack (§5.10): only changed entries are written, and counted.
    if (k.bits != 0) {
        u64 affected = 0;
        for (i64 v = gs.first; v < nn; v += gs.stride) {
            i64 d;
            V p;
            unpack(k, load_cg(words + v), d, p);
            if (d != distances[v] || p != parents[v]) {
                distances[v] = d;
                parents[v] = p;
                ++affected;
            }
        }
        warp_sum_into(affected, &ctl->affected);
    } else {
        fused::recover_parents<V, O>(grid, gs, out, n, source, words, distances, parents, true,
                                     candidates, ancestor, ctl);
    }
    fused::write_stats(gs, ctl, generation, iterations, epochs, pushes);
}

// ---------------------------------------------------------------------------------------------
// compute(): every word INF but the source's, the near-far loop from {s}, unpack everything (§6).
// The first split of the frontier {s} is done directly: d(s) = 0 < 0 + delta, so s is the only
// entry of near list 0 (the host sets ctl->near[0] = 1), claimed with the first generation.
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK, SSSP_FUSED_MIN_BLOCKS) fused_compute(
    V n, V source,
    const O* __restrict__ out_ptr, const V* __restrict__ out_index,
    const sssp::i32* __restrict__ out_weight,
    sssp::i64* distances, V* parents,
    sssp::u64* words, sssp::i32* stamp, sssp::i32* in_far,
    V* near_a, V* near_b, V* far_a, V* far_b,
    sssp::u32 bits, sssp::u64 no_parent, sssp::u64 bound, sssp::u64 delta,
    sssp::i32 base_generation, sssp::FusedControl<V>* ctl) {
    using namespace sssp;
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    const GridStride gs;
    const Packing k{bits, no_parent};
    const CsrView<V, O> out{out_ptr, out_index, out_weight};
    const i64 nn = static_cast<i64>(n);

    i32 generation = base_generation;  // g0
    for (i64 v = gs.first; v < nn; v += gs.stride) {
        words[v] = (v == static_cast<i64>(source)) ? pack(k, 0ull, -1ll) : INF_WORD;
    }
    if (gs.first == 0) {
        near_a[0] = source;
        stamp[source] = generation;
    }
    grid.sync();

    i32 iterations = 0, epochs = 0;
    i64 pushes = 0;
    fused::near_far_loop<V, O>(grid, gs, out, k, source, bound, delta, /*threshold=*/delta, words,
                               stamp, in_far, near_a, near_b, far_a, far_b, ctl, generation,
                               iterations, epochs, pushes);

    if (k.bits != 0) {
        for (i64 v = gs.first; v < nn; v += gs.stride) {
            i64 d;
            V p;
            unpack(k, load_cg(words + v), d, p);
            distances[v] = d;
            parents[v] = p;
        }
    } else {
        fused::recover_parents<V, O>(grid, gs, out, n, source, words, distances, parents, false,
                                     static_cast<V*>(nullptr), static_cast<V*>(nullptr), ctl);
    }
    fused::write_stats(gs, ctl, generation, iterations, epochs, pushes);
}
