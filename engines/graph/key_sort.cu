// One-block sort of a small commit's event keys (key_sort.py; the device apply's "block" key sort).
//
// The device apply groups a batch's events by row by sorting 64-bit keys, bit 63 the side, bits
// 32-62 the row, bits 0-31 the event (device_apply.cu apply_keys; slots past the batch hold the
// side's padding key, row 0x7fffffff). The library's radix sort orders all 64 bits of both sides'
// keys at once: for a few thousand keys that is a histogram, a scan and eight one-sweep passes
// (about 80 µs of kernel time for 2 x 1,760 keys, the reserved capacity, on an H100 under ncu),
// while the keys carry only the bits of a row below n and an event below the count. Here one block per side packs each key into 32 bits
// (row << event_bits | event), sorts only those end_bit bits with cub::BlockRadixSort in shared
// memory, and writes the 64-bit keys back in order: the same bytes as the library's sort.
//
// event_bits is the bit length of `count`, the keys a side (the capacity when the commit is
// captured, the batch's events when launched one by one), not of count - 1, so no real key has every
// bit below end_bit set: the padding keys (0xffffffff packed) order strictly after every real key
// whatever the load order, and equal keys never meet (every real key has its own event). The host
// (key_sort.py plan) launches this only when end_bit <= 31 and the side fits the tile.

#include <cub/block/block_radix_sort.cuh>

#include "kernels.cuh"

using namespace sssp;

namespace keysort {

// Threads of every tile's block (key_sort.py THREADS).
constexpr int THREADS = 512;
constexpr u64 PAD_ROW = 0x7fffffffull;  // the padding keys' row (device_apply.cu PAD_*_KEY)
constexpr u32 PACKED_PAD = 0xffffffffu;

// Sorts `count` keys of one side in place; `side` is the side bit (0 or 1 << 63).
template <int ITEMS>
__device__ __forceinline__ void sort_side(u64* __restrict__ keys, i64 count, int event_bits, int end_bit,
                                          u64 side) {
    using Sort = cub::BlockRadixSort<u32, THREADS, ITEMS>;
    __shared__ typename Sort::TempStorage storage;
    u32 packed[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {  // striped: neighbouring threads read neighbouring keys
        const i64 j = static_cast<i64>(i) * THREADS + threadIdx.x;
        u32 value = PACKED_PAD;
        if (j < count) {
            const u64 key = keys[j];
            const u64 row = (key >> 32) & PAD_ROW;
            if (row != PAD_ROW) {
                value = static_cast<u32>((row << event_bits) | (key & 0xffffffffull));
            }
        }
        packed[i] = value;
    }
    Sort(storage).SortBlockedToStriped(packed, 0, end_bit);
    const u32 event_mask = (1u << event_bits) - 1u;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const i64 j = static_cast<i64>(i) * THREADS + threadIdx.x;
        if (j < count) {
            const u32 value = packed[i];
            keys[j] = value == PACKED_PAD
                          ? (side | 0x7fffffffffffffffull)
                          : (side | (static_cast<u64>(value >> event_bits) << 32) | (value & event_mask));
        }
    }
}

template <int ITEMS>
__device__ __forceinline__ void sort_both_sides(u64* keys, i64 count, int event_bits, int end_bit) {
    // block 0 the out side's keys [0, count), block 1 the in side's [count, 2 count)
    const u64 side = blockIdx.x == 0 ? 0ull : (1ull << 63);
    sort_side<ITEMS>(keys + blockIdx.x * count, count, event_bits, end_bit, side);
}

}  // namespace keysort

// The tiles: 2,048, 4,096 and 8,192 keys a side (key_sort.py TILES, which a CPU test checks
// against THREADS x ITEMS here). Templates over the engines' (vertex, offset) pairs like every
// kernel the runtime loads (it builds both pairs); the keys do not depend on them, and the launcher
// uses <int, int> only.
template <typename V, typename O>
__global__ void __launch_bounds__(keysort::THREADS)
    key_sort_2k(u64* keys, i64 count, int event_bits, int end_bit) {
    keysort::sort_both_sides<4>(keys, count, event_bits, end_bit);
}

template <typename V, typename O>
__global__ void __launch_bounds__(keysort::THREADS)
    key_sort_4k(u64* keys, i64 count, int event_bits, int end_bit) {
    keysort::sort_both_sides<8>(keys, count, event_bits, end_bit);
}

template <typename V, typename O>
__global__ void __launch_bounds__(keysort::THREADS)
    key_sort_8k(u64* keys, i64 count, int event_bits, int end_bit) {
    keysort::sort_both_sides<16>(keys, count, event_bits, end_bit);
}
