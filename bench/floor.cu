// The floor model's micro-benchmark (bench/floor.py, issue 34): what one grid-wide barrier and one
// dependent chain of global-memory loads cost on this GPU, the two constants of the fused engine's
// latency floor (grid syncs x (barrier + chain)).
//
// Compiled like the engines' sources (engines/sssp/cuda/runtime.py): the shared header inlined,
// the template instantiated at every (vertex, offset) type pair, cooperative groups enabled; make
// cuda-check compiles it with the engines' sources (sm_90, no spills).
//
// One kernel, launched cooperatively over the grid the fused engine would use: `phases` times a
// phase, which is
//   - with `chain_depth` > 0, a dependent chain on thread 0 of every block: `chain_depth` loads
//     through L2 (load_cg, as the engine reads whatever another block may have written), each
//     load's address the previous load's value (a random single-cycle permutation, so no two
//     hops share a line), ending in an atomic minimum on the word the chain reached, as a push
//     does; the next chain starts from the atomic's result, so chains never overlap; then the
//     block meets (__syncthreads, as after the engine's per-block reads of the control block);
//   - with `sync`, one grid.sync(), the engine's barrier.
// bench/floor.py times two phase counts with CUDA events and takes the difference, so the launch
// itself drops out: barrier alone, chain alone, and both (the check that they add up).

#include <cooperative_groups.h>

#include "kernels.cuh"

// V indexes the chase permutation; O is unused (every kernel is instantiated at the engines'
// (vertex, offset) pairs, runtime.TYPE_PAIRS).
template <typename V, typename O>
__global__ void __launch_bounds__(SSSP_BLOCK) floor_phases(
    sssp::i32 phases, sssp::i32 sync, sssp::i32 chain_depth, const V* next, V start,
    sssp::u64* words, V* sink) {
    using namespace sssp;
    namespace cg = cooperative_groups;
    cg::grid_group grid = cg::this_grid();
    V at = static_cast<V>(start + static_cast<V>(blockIdx.x));
    for (i32 p = 0; p < phases; ++p) {
        if (chain_depth > 0) {
            if (threadIdx.x == 0) {
                for (i32 d = 0; d < chain_depth; ++d) at = load_cg(next + at);
                // words hold values below 2^63: the shift is 0, but the next hop waits for it
                const u64 old = atomicMin(words + at, static_cast<u64>(p));
                at = static_cast<V>(at + static_cast<V>(old >> 63));
            }
            __syncthreads();
        }
        if (sync) grid.sync();  // the same value in every thread: uniform
    }
    if (threadIdx.x == 0) sink[blockIdx.x] = at;  // keeps the chain's loads live
}
