// CUDA kernels of the GPU backend: thin __global__ wrappers over pc_bfs.h. Compiled at run time by
// CuPy (NVRTC), once per process; each kernel is instantiated for both sides to move.
//
// Defaults chosen by measurement on an H200 (NOTES.md): the small attack tables in shared memory
// (-8 % time on startpos perft 9, -9 % on Kiwipete 7) and leaf blocks capped to 8 per SM (64 regs).
#ifndef PC_GLOBAL_TABLES
#define PC_SHARED_TABLES
#endif
#ifndef PC_LEAF_MIN_BLOCKS
#define PC_LEAF_MIN_BLOCKS 8
#endif
#include "chess.h"
#include "pc_bfs.h"

#ifndef PC_GEN_THREADS
#define PC_GEN_THREADS 128
#endif
#ifndef PC_LEAF_THREADS
#define PC_LEAF_THREADS 128
#endif
// Cap registers so PC_LEAF_MIN_BLOCKS leaf blocks fit on one multiprocessor (0: no cap).
#if PC_LEAF_MIN_BLOCKS > 0
#define PC_LEAF_BOUNDS __launch_bounds__(PC_LEAF_THREADS, PC_LEAF_MIN_BLOCKS)
#else
#define PC_LEAF_BOUNDS __launch_bounds__(PC_LEAF_THREADS)
#endif
#ifndef PC_STAGE_MOVES
#define PC_STAGE_MOVES 6144  // moves staged in shared memory per block of the gen kernel
#endif

// The timing gate's planted regression (ci/perf_gate.py timing --slow P): with PC_SLOWDOWN_PERCENT=P
// every chess kernel's thread, when done, spins for P % of the clock cycles it took, so each thread
// and block stays resident P % longer. Off by default: the macro is empty and the code unchanged.
#if defined(PC_SLOWDOWN_PERCENT) && PC_SLOWDOWN_PERCENT > 0
struct PcSlowdown {
    long long t0;
    __device__ PcSlowdown() : t0(clock64()) {}
    __device__ ~PcSlowdown() {
        long long t1 = clock64(), extra = (t1 - t0) * PC_SLOWDOWN_PERCENT / 100;
        while (clock64() - t1 < extra) {
        }
    }
};
#define PC_SLOW() PcSlowdown pc_slowdown_
#else
#define PC_SLOW()
#endif

#ifdef PC_SHARED_TABLES
#define PC_LOAD_SMALL_TABLES()                                                                        \
    {                                                                                                 \
        const u64* src = reinterpret_cast<const u64*>(&g_tables_dev.small);                           \
        u64* dst = reinterpret_cast<u64*>(&s_small_tables);                                           \
        for (int w = threadIdx.x; w < (int)(sizeof(SmallTables) / 8); w += blockDim.x) dst[w] = src[w]; \
    }
#else
#define PC_LOAD_SMALL_TABLES()
#endif

// The castling geometry is per game; every block copies it to shared memory first (and the small
// attack tables too when they are read from shared memory).
#define PC_LOAD_CI(ci_global)                                                        \
    __shared__ CastleInfo ci;                                                        \
    {                                                                                \
        const u32* src = reinterpret_cast<const u32*>(ci_global);                    \
        u32* dst = reinterpret_cast<u32*>(&ci);                                      \
        for (int w = threadIdx.x; w < (int)(sizeof(CastleInfo) / 4); w += blockDim.x) \
            dst[w] = src[w];                                                         \
        PC_LOAD_SMALL_TABLES();                                                      \
        __syncthreads();                                                             \
    }

template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) count_kernel(const Board* __restrict__ boards, u32 n,
                                                               const CastleInfo* ci_g, u32* __restrict__ counts) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) counts[i] = bfs_count<Us>(boards[i], ci);
}

// Writes each board's moves at its offset, and its index as the parent of each (interval expand).
// The block's moves form one contiguous run of the output: they are staged in shared memory and
// written out coalesced, instead of each thread scattering 2-byte stores. A block whose run does
// not fit the stage writes directly.
// Boards with an empty range (no moves, or a TT hit in TT mode) write nothing.
// A board whose generator gives another number of moves than its count reserved (a move generator
// bug) writes only into its own slots (CappedSink; slots left over repeat its first move, so every
// later kernel reads legal data) and reports itself in `gen_error` (the first such board wins):
// bit 63 | board index << 20 | moves generated (<= 1023) << 10 | moves reserved. The host reads
// the word with the level's next read and raises (perft_core/gpu/kernels.py).
template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) gen_kernel(const Board* __restrict__ boards, u32 n,
                                                             const CastleInfo* ci_g, const u64* __restrict__ offsets,
                                                             Move* __restrict__ moves, u32* __restrict__ parents,
                                                             unsigned long long* __restrict__ gen_error) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    __shared__ Move stage[PC_STAGE_MOVES];
    __shared__ u8 stage_parent[PC_STAGE_MOVES];  // parent as an index within the block
    u32 first = blockIdx.x * blockDim.x;
    u32 last = min(first + blockDim.x, n);  // one past the block's last board
    u32 i = first + threadIdx.x;
    u64 base = offsets[first];
    u64 run = offsets[last] - base;  // offsets has n + 1 entries
    bool staged = run <= PC_STAGE_MOVES;
    if (i < n && offsets[i + 1] > offsets[i]) {
        u64 at = offsets[i];
        int reserved = (int)(offsets[i + 1] - at);
        Move* dst = staged ? &stage[at - base] : &moves[at];
        CappedSink s(dst, reserved);
        generate_legal<Us>(boards[i], ci, s);
#ifdef PC_TEST_GEN_MISCOUNT  // suites/test_gpu.py: a planted generator bug, one move more or less
        if (i % 7 == 3) {
            if (PC_TEST_GEN_MISCOUNT > 0) s.put(s.out[0]);
            else s.n -= 1;
        }
#endif
        if (s.n != reserved) {
            for (int j = min(s.n, reserved); j < reserved; ++j) dst[j] = s.n > 0 ? dst[0] : (Move)0;
            atomicCAS(gen_error, 0ull,
                      (1ull << 63) | ((u64)i << 20) | ((u64)min(s.n, 1023) << 10) | (u64)min(reserved, 1023));
        }
        for (int j = 0; j < reserved; ++j) {
            if (staged) stage_parent[at - base + j] = (u8)threadIdx.x;
            else parents[at + j] = i;
        }
    }
    if (staged) {
        __syncthreads();
        for (u32 j = threadIdx.x; j < run; j += blockDim.x) {
            moves[base + j] = stage[j];
            parents[base + j] = first + stage_parent[j];
        }
    }
}

template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) make_kernel(const Board* __restrict__ boards,
                                                              const u32* __restrict__ parents,
                                                              const Move* __restrict__ moves, u64 n,
                                                              const CastleInfo* ci_g, Board* __restrict__ children) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) bfs_make<Us>(boards[parents[j]], moves[j], ci, children[j]);
}

__device__ __forceinline__ void block_add(u64 v, unsigned long long* total) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v) atomicAdd(total, (unsigned long long)v);
}

#ifndef PC_WARP_LEAF_CAP
#define PC_WARP_LEAF_CAP 512  // grandchildren per warp and window (256: 1-2 % slower, 1024: 2-5 %)
#endif
// The fused two-level leaf, shared by the warp. Each lane makes its child and lists the child's
// moves that are not quiet (pc_quiet.h: a quiet one counts the child's base count, with no make and
// no count); then the warp makes and counts all its lanes' remaining grandchildren, 32 at a time, in
// windows of PC_WARP_LEAF_CAP staged in shared memory with their owner lanes: a lane whose child
// has few moves works on another lane's instead of idling while the longest list runs out (which
// cost CPW 3 and CPW 4 19 % and 12 % of their lanes: NOTES.md session 7).
// Own = false (the leaf without tables): returns this lane's share of the warp's grandchild counts,
// only the block's sum means anything. Own = true (the TT leaf): returns this lane's child's own
// count, each count added to its owner's sum in shared memory.
// Heads = true (the leaf of a merged level, leaf_heads_kernel): lane j's child is made by move
// heads[j] rather than move j.
template <int Us, bool Own, bool Heads = false>
__device__ __forceinline__ u64 leaf3_warp(const Board* __restrict__ boards, const u32* __restrict__ parents,
                                          const Move* __restrict__ moves, u64 n, const CastleInfo& ci,
                                          const u32* __restrict__ heads = nullptr) {
    __shared__ Board s_child[PC_LEAF_THREADS];
    __shared__ Move s_move[PC_LEAF_THREADS / 32][PC_WARP_LEAF_CAP];
    __shared__ u8 s_owner[PC_LEAF_THREADS / 32][PC_WARP_LEAF_CAP];
    __shared__ u32 s_own[Own ? PC_LEAF_THREADS : 1];  // <= 1,098 grandchildren of <= 1,098 moves each
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    Move list[PC_MOVES_BOUND];
    int cnt = 0;
    u64 v = 0;
    if (j < n) {
        const u64 mj = Heads ? (u64)heads[j] : j;
        Board c = boards[parents[mj]];
        make_move<Us>(c, moves[mj], ci);
        s_child[threadIdx.x] = c;
        cnt = generate_not_quiet<Us>(c, ci, list, v);
    }
    if constexpr (Own) s_own[threadIdx.x] = 0;
    int end = cnt;  // inclusive prefix sum over the warp: one past this lane's last grandchild
    for (int o = 1; o < 32; o <<= 1) {
        const int x = __shfl_up_sync(0xffffffffu, end, o);
        if (lane >= o) end += x;
    }
    const int total = __shfl_sync(0xffffffffu, end, 31), start = end - cnt;
    const Board* child = s_child + (threadIdx.x & ~31);
    for (int base = 0; base < total; base += PC_WARP_LEAF_CAP) {
        const int lo = max(start, base), hi = min(end, base + PC_WARP_LEAF_CAP);
        for (int k = lo; k < hi; ++k) {
            s_move[w][k - base] = list[k - start];
            s_owner[w][k - base] = (u8)lane;
        }
        __syncwarp();
        const int m = min(PC_WARP_LEAF_CAP, total - base);
        for (int k = lane; k < m; k += 32) {
            const int o = s_owner[w][k];
            Board g = child[o];
            make_move<Us ^ 1>(g, s_move[w][k], ci);
            const u32 x = count_moves<Us>(g, ci);
            if constexpr (Own) atomicAdd(&s_own[(threadIdx.x & ~31) + o], x);
            else v += x;
        }
        __syncwarp();  // the window is read (and the sums added) before the next one overwrites it
    }
    if constexpr (Own) v += s_own[threadIdx.x];
    return v;
}

// LEVELS = 2: make + bulk count. LEVELS = 3: the fused two-level leaf (move list, shared by the warp);
// LEVELS = 4: the same count as 3, streaming the grandchildren from the generator (no list).
template <int Us, int LEVELS>
__global__ void PC_LEAF_BOUNDS leaf_kernel(const Board* __restrict__ boards,
                                                               const u32* __restrict__ parents,
                                                               const Move* __restrict__ moves, u64 n,
                                                               const CastleInfo* ci_g, unsigned long long* total) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u64 v = 0;
    if constexpr (LEVELS == 3) {
        v = leaf3_warp<Us, false>(boards, parents, moves, n, ci);
    } else {
        u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
        if (j < n) {
            const Board& p = boards[parents[j]];
            v = LEVELS == 2 ? bfs_leaf2<Us>(p, moves[j], ci) : bfs_leaf3_stream<Us>(p, moves[j], ci);
        }
    }
    block_add(v, total);
}

template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) count_sum_kernel(const Board* __restrict__ boards, u32 n,
                                                                   const CastleInfo* ci_g, unsigned long long* total) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    block_add(i < n ? (u64)bfs_count<Us>(boards[i], ci) : 0, total);
}


// ----- statistics (pc_stats.h): the statistics leaf beside the bulk-counting leaf --------------------
// A statistics count (perft_core.perft_stats on the GPU) expands BFS levels down to the leaf parents
// and classifies their moves into the 13 counters of StatCounts. Separate kernels: the plain
// count's kernels above call nothing of pc_stats.h and compile to the same code as without it.
#include "pc_stats.h"

#define PC_STATS_THREADS 128  // threads per block of the statistics kernels (stats_block_add's layout)
// Statistics blocks per multiprocessor that __launch_bounds__ asks registers for (0: no cap; 8 caps
// them at 64 as the plain leaf's): an experiment's option (ci/stats_gpu_check.py --variants), not
// yet measured.
#ifndef PC_STATS_MIN_BLOCKS
#define PC_STATS_MIN_BLOCKS 0
#endif
#if PC_STATS_MIN_BLOCKS > 0
#define PC_STATS_BOUNDS __launch_bounds__(PC_STATS_THREADS, PC_STATS_MIN_BLOCKS)
#else
#define PC_STATS_BOUNDS __launch_bounds__(PC_STATS_THREADS)
#endif

// Adds each thread's counters to totals[0 .. STATS_WORDS - 1] (uint64, perft_core.stats.STATS_FIELDS
// order): each warp sums its lanes' counters by shuffles, one thread per counter sums the warps' and
// makes one atomic add per non-zero counter and block. Every thread of the block must call it.
__device__ __forceinline__ void stats_block_add(const StatCounts& s, unsigned long long* totals) {
    __shared__ u64 warp_sums[PC_STATS_THREADS / 32][STATS_WORDS];
    u64 w[STATS_WORDS];
    stats_words(s, w);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < STATS_WORDS; ++k) {
        u64 v = w[k];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) warp_sums[warp][k] = v;
    }
    __syncthreads();
    if (threadIdx.x < STATS_WORDS) {
        u64 v = 0;
        for (int i = 0; i < PC_STATS_THREADS / 32; ++i) v += warp_sums[i][threadIdx.x];
        if (v) atomicAdd(totals + threadIdx.x, (unsigned long long)v);
    }
}

// The statistics leaf: move j (of n) makes a leaf parent from boards[parents[j]] (Us to move), whose
// moves are classified (bfs_stats_leaf); the block's counters are added to totals.
template <int Us>
__global__ void PC_STATS_BOUNDS stats_leaf_kernel(const Board* __restrict__ boards, const u32* __restrict__ parents,
                                                  const Move* __restrict__ moves, u64 n, const CastleInfo* ci_g,
                                                  unsigned long long* totals) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    StatCounts s;
    stats_zero(s);
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) bfs_stats_leaf<Us>(boards[parents[j]], moves[j], ci, s);
    stats_block_add(s, totals);
}

// The statistics of depth 1 below each of n boards (Us to move): their own moves classified.
template <int Us>
__global__ void PC_STATS_BOUNDS stats_sum_kernel(const Board* __restrict__ boards, u32 n, const CastleInfo* ci_g,
                                                 unsigned long long* totals) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    StatCounts s;
    stats_zero(s);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) leaf_stats<Us>(boards[i], ci, s);
    stats_block_add(s, totals);
}

// ----- transposition-table mode ---------------------------------------------------------------------
template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) keys_kernel(const Board* __restrict__ boards, u32 n,
                                                              const CastleInfo* ci_g, const ZobristKeys* z,
                                                              Key128* __restrict__ keys) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) keys[i] = compute_hash<Us>(boards[i], ci, *z);
}

template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) count_probe_kernel(const Board* __restrict__ boards,
                                                                     const Key128* __restrict__ keys, u32 n,
                                                                     const CastleInfo* ci_g, const TTEntry16* tt,
                                                                     u64 slots, u32* __restrict__ counts,
                                                                     u64* __restrict__ values) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        u64 v;
        counts[i] = bfs_count_probe<Us>(boards[i], keys[i], tt, slots, ci, v);
        values[i] = v;
    }
}

template <int Us>
__global__ void __launch_bounds__(PC_GEN_THREADS) make_key_kernel(const Board* __restrict__ boards,
                                                                  const Key128* __restrict__ keys,
                                                                  const u32* __restrict__ parents,
                                                                  const Move* __restrict__ moves, u64 n,
                                                                  const CastleInfo* ci_g, const ZobristKeys* z,
                                                                  Board* __restrict__ children,
                                                                  Key128* __restrict__ child_keys) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        u32 p = parents[j];
        bfs_make_key<Us>(boards[p], keys[p], moves[j], ci, *z, children[j], child_keys[j]);
    }
}

// The leaf in TT mode: each move's count is added to its parent's value (LEVELS = 3: the warp-shared
// fused leaf, each lane's own child's count).
template <int Us, int LEVELS>
__global__ void PC_LEAF_BOUNDS leaf_values_kernel(const Board* __restrict__ boards, const u32* __restrict__ parents,
                                                  const Move* __restrict__ moves, u64 n, const CastleInfo* ci_g,
                                                  unsigned long long* values) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 v = 0;
    if constexpr (LEVELS == 3) v = leaf3_warp<Us, true>(boards, parents, moves, n, ci);
    else if (j < n) v = bfs_leaf2<Us>(boards[parents[j]], moves[j], ci);
    if (v) atomicAdd(values + parents[j], (unsigned long long)v);
}

// The leaf merge of TTBfsDriver: the moves of a remaining-depth-3 level are grouped by their
// children's keys (leaf_keys_claim_kernel), and only the first move of each
// group, heads[j] (j < n), is counted: values[heads[j]] = perft 2 of the child it makes (the
// warp-shared fused leaf). upsweep_heads_kernel then gives every move its head's count.
template <int Us>
__global__ void PC_LEAF_BOUNDS leaf_heads_kernel(const Board* __restrict__ boards, const u32* __restrict__ parents,
                                                 const Move* __restrict__ moves, const u32* __restrict__ heads,
                                                 u64 n, const CastleInfo* ci_g, u64* __restrict__ values) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 v = leaf3_warp<Us, true, true>(boards, parents, moves, n, ci, heads);
    if (j < n) values[heads[j]] = v;
}

// The upsweep of a leaf merge: move i adds its group head's count to its parent's value. The lanes
// of a warp first sum their counts over each run of equal parents (a segmented scan; a parent's moves
// are consecutive, and a parent split over runs is added once a run), and the run's last lane adds
// the sum: one atomic a run instead of one a move. Startpos perft 11 on an H200, NVRTC builds
// alternated: 0.506 -> 0.195 s (NOTES.md, session 30). Needs whole warps (blocks of a multiple of
// 32 threads; the callers launch 256).
__global__ void upsweep_heads_kernel(const u32* __restrict__ parents, const u32* __restrict__ head_of,
                                     const u64* __restrict__ values, u64 n, unsigned long long* parent_values) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 p = 0xFFFFFFFFu;  // lanes past n: a run of their own, adding 0
    u64 v = 0;
    if (i < n) {
        p = parents[i];
        v = values[head_of[i]];
    }
    const int lane = threadIdx.x & 31;
    const u32 before = __shfl_up_sync(0xffffffffu, p, 1);
    const u32 starts = __ballot_sync(0xffffffffu, lane == 0 || before != p);
    const int start = 31 - __clz(starts & (0xffffffffu >> (31 - lane)));  // the first lane of this lane's run
    for (int o = 1; o < 32; o <<= 1) {
        const u64 x = __shfl_up_sync(0xffffffffu, v, o);
        if (lane - o >= start) v += x;
    }
    const u32 after = __shfl_down_sync(0xffffffffu, p, 1);
    if (i < n && v && (lane == 31 || after != p)) atomicAdd(parent_values + p, (unsigned long long)v);
}

__global__ void upsweep_kernel(const u32* __restrict__ parents, const u64* __restrict__ child_values, u64 n,
                               unsigned long long* parent_values) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && child_values[i]) atomicAdd(parent_values + parents[i], (unsigned long long)child_values[i]);
}

__global__ void store_kernel(const Board* __restrict__ boards, const Key128* __restrict__ keys,
                             const u64* __restrict__ values, u32 n, TTEntry16* tt, u64 slots, u64* audit, u64 tag) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bfs_store(tt, slots, keys[i], values[i], audit, boards[i], tag);
}

// ----- data movement of the BFS driver ---------------------------------------------------------------
// Prefix sums, widening, hit counting and the merge of equal keys are our own kernels rather than
// CuPy operations: CuPy compiles each of its elementwise, reduction and scan kernels with NVRTC at
// first use (seconds on a machine with an empty kernel cache), ours are built once with the rest.

#define PC_SCAN_THREADS 256
#define PC_SCAN_ITEMS 8
#define PC_SCAN_TILE (PC_SCAN_THREADS * PC_SCAN_ITEMS)  // elements per block of the scan kernels

// Block-wide exclusive prefix of one value per thread (PC_SCAN_THREADS threads); *total gets the sum.
__device__ __forceinline__ u64 block_exclusive(u64 v, u64* total) {
    __shared__ u64 warp_sums[PC_SCAN_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 x = v;
    for (int o = 1; o < 32; o <<= 1) {
        u64 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u64 w = lane < PC_SCAN_THREADS / 32 ? warp_sums[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            u64 y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += y;
        }
        if (lane < PC_SCAN_THREADS / 32) warp_sums[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    u64 before = (warp ? warp_sums[warp - 1] : 0) + x - v;
    *total = warp_sums[PC_SCAN_THREADS / 32 - 1];
    __syncthreads();  // warp_sums is reused by the next call
    return before;
}

// Pass 1 of the scan: the sum of each tile of PC_SCAN_TILE inputs.
template <typename T>
__device__ __forceinline__ void scan_tiles(const T* __restrict__ in, u64 n, u64* __restrict__ tile_sums) {
    u64 first = (u64)blockIdx.x * PC_SCAN_TILE + (u64)threadIdx.x * PC_SCAN_ITEMS;
    u64 v = 0;
    for (int k = 0; k < PC_SCAN_ITEMS; ++k)
        if (first + k < n) v += in[first + k];
    u64 total;
    block_exclusive(v, &total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Pass 2: out[i + 1] = tile_offsets[tile of i] + the sum of the tile's inputs up to i; out[0] = 0,
// so out holds n + 1 exclusive offsets and out[n] the total. tile_offsets may be null (one tile).
template <typename T>
__device__ __forceinline__ void scan_apply(const T* __restrict__ in, u64 n, const u64* __restrict__ tile_offsets,
                                           u64* __restrict__ out) {
    u64 first = (u64)blockIdx.x * PC_SCAN_TILE + (u64)threadIdx.x * PC_SCAN_ITEMS;
    T items[PC_SCAN_ITEMS];
    u64 v = 0;
    for (int k = 0; k < PC_SCAN_ITEMS; ++k) {
        items[k] = first + k < n ? in[first + k] : (T)0;
        v += items[k];
    }
    u64 total;
    u64 run = block_exclusive(v, &total) + (tile_offsets ? tile_offsets[blockIdx.x] : 0);
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 0;
    for (int k = 0; k < PC_SCAN_ITEMS; ++k) {
        run += items[k];
        if (first + k < n) out[first + k + 1] = run;
    }
}

__global__ void __launch_bounds__(PC_SCAN_THREADS) scan_tiles_u32_kernel(const u32* in, u64 n, u64* tile_sums) {
    scan_tiles<u32>(in, n, tile_sums);
}
__global__ void __launch_bounds__(PC_SCAN_THREADS) scan_tiles_u64_kernel(const u64* in, u64 n, u64* tile_sums) {
    scan_tiles<u64>(in, n, tile_sums);
}
__global__ void __launch_bounds__(PC_SCAN_THREADS) scan_apply_u32_kernel(const u32* in, u64 n, const u64* tile_offsets,
                                                                         u64* out) {
    scan_apply<u32>(in, n, tile_offsets, out);
}
__global__ void __launch_bounds__(PC_SCAN_THREADS) scan_apply_u64_kernel(const u64* in, u64 n, const u64* tile_offsets,
                                                                         u64* out) {
    scan_apply<u64>(in, n, tile_offsets, out);
}

// out[i] = in[i], uint32 -> uint64 (a last level's move counts become its values).
__global__ void widen_kernel(const u32* __restrict__ in, u64 n, u64* __restrict__ out) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// TT hits of a probed level: boards whose probe found a value (count 0, value > 0), added to *hits.
__global__ void count_hits_kernel(const u32* __restrict__ counts, const u64* __restrict__ values, u64 n,
                                  unsigned long long* hits) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    block_add(i < n && counts[i] == 0 && values[i] > 0 ? 1 : 0, hits);
}

// A level split into parts (TTBfsDriver parts, pc_tt.h level_part; side `us` to move): boards of
// another part are not expanded and count 0 (their zero value is never stored, bfs_store); *own
// gets the number of this part's boards (the probes the part really made at this level: its table
// statistics).
__global__ void part_filter_kernel(const Key128* __restrict__ keys, const Board* __restrict__ boards, u64 n, u32 us,
                                   u64 salt, u32 cut, u32 parts, u32 part, u32* __restrict__ counts,
                                   u64* __restrict__ values, unsigned long long* own) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool mine = i < n && level_part(keys[i], boards[i], (int)us, salt, cut, parts) == part;
    if (i < n && !mine) {
        counts[i] = 0;
        values[i] = 0;
    }
    block_add(mine ? 1 : 0, own);
}

// Merge of equal keys: element i (key lo, hi) claims a slot of an open-addressing table (owner:
// element index + 1, 0 = empty; slots a power of two, at least 2n) or finds the element whose key
// equals its own there (keys: every element's, lo and hi). Returns that element's index (i itself
// when i claimed a free slot: i heads its key's group); `slot` is the slot. A slot is read before it
// is claimed: a slot's owner is written once (0 -> index, by the claim), so a non-zero read is final
// and needs no atomic; a zero read (empty, or not yet seen) goes to the claim. Startpos perft 11 on
// an H200, NVRTC builds alternated: the leaf merge's insert 1.745 -> 1.519 s, the levels' 0.223 ->
// 0.191 s (NOTES.md, session 30).
// Fresh = true: the keys are written in the same launch, each by its element just before its claim
// (leaf_keys_claim_kernel). The claim is then a release CAS (its MEMBAR orders the key's stores
// before the owner's write reaches L2, the GPU's point of coherence), and an owner's key is read
// from L2 (__ldcg: a strong GPU-scope load, never a stale L1 line) after the owner read that its
// address depends on: whoever sees an owner sees its key. A key seen too early could only fail to
// match (a second group for one key: more work, the same count); it cannot be seen, by the order
// above.
template <bool Fresh>
__device__ __forceinline__ u64 claimed_key(const u64* __restrict__ keys, u64 at) {
    if constexpr (Fresh) return __ldcg(keys + at);
    else return keys[at];
}
template <bool Fresh = false>
__device__ __forceinline__ u32 merge_claim(const u64* __restrict__ keys, u64 lo, u64 hi, u32 i, u32* owner, u64 mask, int shift,
                                           u64& slot) {
    u64 s = (lo * 0x9E3779B97F4A7C15ULL) >> shift;  // Fibonacci hashing of the low word
    while (true) {
        u32 prev = __ldcg(owner + s);
        if (prev == 0) {
            if constexpr (Fresh)
                asm volatile("atom.release.gpu.global.cas.b32 %0, [%1], 0, %2;"
                             : "=r"(prev) : "l"(owner + s), "r"(i + 1) : "memory");
            else
                prev = atomicCAS(owner + s, 0u, i + 1);
        }
        if (prev == 0) {
            slot = s;
            return i;
        }
        const u64 j = prev - 1;
        if (claimed_key<Fresh>(keys, 2 * j) == lo && claimed_key<Fresh>(keys, 2 * j + 1) == hi) {
            slot = s;
            return (u32)j;
        }
        s = (s + 1) & mask;
    }
}

// Merge of equal keys, step 1: the board that claims a free slot heads its key's group (head = 1);
// a board whose key equals the owner's joins that group (head = 0).
__global__ void merge_insert_kernel(const u64* __restrict__ keys, u32 n, u32* owner, u64 mask, int shift,
                                    u32* __restrict__ slot_of, u32* __restrict__ head) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64 s;
    const u32 h = merge_claim(keys, keys[2 * (u64)i], keys[2 * (u64)i + 1], i, owner, mask, shift, s);
    slot_of[i] = (u32)s;
    head[i] = h == i;
}

// The leaf merges' step 1 (TTBfsDriver's remaining-depth-3 leaf and the statistics leaf): move i
// makes the key of the child it leads to (the child itself is not made) from its parent's board and
// key, writes it to child_keys[i] and claims or finds its slot (merge_claim<true>): head_of[i] = its
// group's head (the move that claimed the key), head[i] = whether i is one. Making the keys in the
// insert instead of a kernel before it (one pass less over them): startpos perft 11 on an H200,
// alternated, 14.32 -> 14.06 s (child keys 0.444 s + insert 1.538 s -> 1.727 s; NOTES.md, session 31).
template <int Us>
__global__ void leaf_keys_claim_kernel(const Board* __restrict__ boards, const Key128* __restrict__ keys,
                                       const u32* __restrict__ parents, const Move* __restrict__ moves, u32 n,
                                       const CastleInfo* ci_g, const ZobristKeys* z, Key128* child_keys,
                                       u32* owner, u64 mask, int shift, u32* __restrict__ head_of,
                                       u32* __restrict__ head) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 p = parents[i];
    const Key128 k = update_hash<Us>(keys[p], boards[p], moves[i], ci, *z);
    child_keys[i] = k;
    u64 s;
    const u32 h = merge_claim<true>(reinterpret_cast<const u64*>(child_keys), k.lo, k.hi, i, owner, mask, shift, s);
    head_of[i] = h;
    head[i] = h == i;
}

// A stream compaction's step for one thread of a tile: its PC_SCAN_ITEMS 0/1 flags from element
// `first` into items, and the rank of its first flagged element among all (the tile's offset, from
// tile_offsets, scan_tiles_u32_kernel's sums scanned, null with one tile; plus the block's prefix).
__device__ __forceinline__ u64 compaction_rank(const u32* __restrict__ flag, u64 n, const u64* __restrict__ tile_offsets,
                                               u64 first, u32 (&items)[PC_SCAN_ITEMS]) {
    u64 v = 0;
    for (int k = 0; k < PC_SCAN_ITEMS; ++k) {
        items[k] = first + k < n ? flag[first + k] : 0u;
        v += items[k];
    }
    u64 total;
    return block_exclusive(v, &total) + (tile_offsets ? tile_offsets[blockIdx.x] : 0);
}

// The leaf merge's step 2: heads[k] = the index of the k-th head (head[i] != 0), in index order.
// A stream compaction over the scan's tiles (scan_tiles_u32_kernel's sums, scanned into
// tile_offsets; null with one tile): each tile ranks its heads itself, so no rank array is made.
__global__ void __launch_bounds__(PC_SCAN_THREADS) leaf_merge_heads_kernel(const u32* __restrict__ head, u64 n,
                                                                           const u64* __restrict__ tile_offsets,
                                                                           u32* __restrict__ heads) {
    const u64 first = (u64)blockIdx.x * PC_SCAN_TILE + (u64)threadIdx.x * PC_SCAN_ITEMS;
    u32 items[PC_SCAN_ITEMS];
    u64 at = compaction_rank(head, n, tile_offsets, first, items);
    for (int k = 0; k < PC_SCAN_ITEMS; ++k)
        if (items[k]) heads[at++] = (u32)(first + k);
}

// ----- selection and gathers of the host's array steps (parts, table statistics, table images) -----
// Each replaces a CuPy array operation (flatnonzero, argmin, take, full, count_nonzero), which CuPy
// compiles with NVRTC at its first use in a process whose kernel cache is empty: a fresh machine's
// first deep run paid seconds for them (NOTES.md, session 32). These are in the precompiled cubin.

// merge.keep_part, step 1: flag[i] = 1 for the boards of part `part` of `parts` (level_part, as
// part_filter_kernel), 0 for the others; *first_other (set to all ones before) gets the least index
// of a board of another part (one atomic a warp that has one, after a plain read of the word).
__global__ void part_flags_kernel(const Key128* __restrict__ keys, const Board* __restrict__ boards, u64 n, u32 us,
                                  u64 salt, u32 cut, u32 parts, u32 part, u32* __restrict__ flag,
                                  unsigned long long* first_other) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool other = i < n && level_part(keys[i], boards[i], (int)us, salt, cut, parts) != part;
    if (i < n) flag[i] = other ? 0u : 1u;
    const u32 ballot = __ballot_sync(0xffffffffu, other);
    if (ballot && (threadIdx.x & 31) == __ffs(ballot) - 1) {
        const unsigned long long v = i;
        if (v < *(volatile unsigned long long*)first_other) atomicMin(first_other, v);
    }
}

// A stream compaction with ranks (after scan_tiles_u32_kernel over flag, its sums scanned into
// tile_offsets; null with one tile): rows[r] = the index of the r-th flagged element, in index order.
// With group_of (non-null): group_of[i] = the rank of a flagged i, `other` for the rest. With
// first_other (non-null): rows[other] = *first_other (keep_part's one board of the other parts).
__global__ void __launch_bounds__(PC_SCAN_THREADS) rank_rows_kernel(const u32* __restrict__ flag, u64 n,
                                                                    const u64* __restrict__ tile_offsets, u32 other,
                                                                    const unsigned long long* first_other,
                                                                    u32* __restrict__ rows, u32* __restrict__ group_of) {
    const u64 first = (u64)blockIdx.x * PC_SCAN_TILE + (u64)threadIdx.x * PC_SCAN_ITEMS;
    u32 items[PC_SCAN_ITEMS];
    u64 at = compaction_rank(flag, n, tile_offsets, first, items);
    for (int k = 0; k < PC_SCAN_ITEMS && first + k < n; ++k) {
        if (items[k]) {
            if (group_of) group_of[first + k] = (u32)at;
            rows[at++] = (u32)(first + k);
        } else if (group_of) {
            group_of[first + k] = other;
        }
    }
    if (first_other && blockIdx.x == 0 && threadIdx.x == 0) rows[other] = (u32)*first_other;
}

// dst row r = src row rows[r] (rows of `words` uint64), for r < m: one thread a word.
__global__ void gather_rows_kernel(const u64* __restrict__ src, const u32* __restrict__ rows, u64 m, u32 words,
                                   u64* __restrict__ dst) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < m * words) {
        const u64 r = t / words;
        dst[t] = src[(u64)rows[r] * words + (t - r * words)];
    }
}

// dst row rows[r] = src row r (rows of `words` uint64, rows distinct), for r < m: one thread a word.
__global__ void scatter_rows_kernel(const u64* __restrict__ src, const u32* __restrict__ rows, u64 m, u32 words,
                                    u64* __restrict__ dst) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < m * words) {
        const u64 r = t / words;
        dst[(u64)rows[r] * words + (t - r * words)] = src[t];
    }
}

// out[i] = table[index[i]] (uint32): merge.then_group's composition of two group maps.
__global__ void take_u32_kernel(const u32* __restrict__ table, const u32* __restrict__ index, u64 n,
                                u32* __restrict__ out) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = table[index[i]];
}

// Nonzero words a[i * stride], i < n: flagged (flag non-null: flag[i] = 0 or 1) and counted into *total.
__global__ void nonzero_kernel(const u64* __restrict__ a, u64 n, u64 stride, u32* __restrict__ flag,
                               unsigned long long* total) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool set = i < n && a[i * stride] != 0;
    if (flag && i < n) flag[i] = set ? 1u : 0u;
    block_add(set ? 1 : 0, total);
}

// Step 2 (after the scan of head into rank): each head copies its board and key to its rank among
// the heads and records that rank as its slot's group.
__global__ void merge_heads_kernel(const u64* __restrict__ boards, const u64* __restrict__ keys,
                                   const u32* __restrict__ head, const u64* __restrict__ rank,
                                   const u32* __restrict__ slot_of, u32 n, u32* group_of_slot,
                                   u64* __restrict__ merged_boards, u64* __restrict__ merged_keys) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !head[i]) return;
    u64 g = rank[i];
    for (int w = 0; w < 5; ++w) merged_boards[5 * g + w] = boards[5 * (u64)i + w];
    merged_keys[2 * g] = keys[2 * (u64)i];
    merged_keys[2 * g + 1] = keys[2 * (u64)i + 1];
    group_of_slot[slot_of[i]] = (u32)g;
}

// Step 3: every board's group (the merged board that stands for it).
__global__ void merge_group_kernel(const u32* __restrict__ slot_of, const u32* __restrict__ group_of_slot, u32 n,
                                   u32* __restrict__ group_of) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) group_of[i] = group_of_slot[slot_of[i]];
}

// The upsweep of a merged level: each made board takes its group's value and adds it to its parent.
__global__ void upsweep_grouped_kernel(const u32* __restrict__ parents, const u32* __restrict__ group_of,
                                       const u64* __restrict__ group_values, u64 n,
                                       unsigned long long* parent_values) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        u64 v = group_values[group_of[i]];
        if (v) atomicAdd(parent_values + parents[i], (unsigned long long)v);
    }
}

// ----- statistics with tables (pc_tt_stats.h): TTBfsDriver.perft_stats --------------------------------
// A level's values are 13 slices of n counters (values[c * n + i], perft_core.stats.STATS_FIELDS
// order); the upsweep runs upsweep_kernel / upsweep_grouped_kernel once per slice. Separate kernels
// again, so that the plain count's code stays as it was.
#include "pc_tt_stats.h"

// Depth 1 below each of n boards (Us to move): its moves classified into its 13 values.
template <int Us>
__global__ void PC_STATS_BOUNDS stats_values_kernel(const Board* __restrict__ boards, u32 n, const CastleInfo* ci_g,
                                                    u64* __restrict__ values) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        StatCounts s;
        stats_zero(s);
        leaf_stats<Us>(boards[i], ci, s);
        u64 w[STATS_WORDS];
        stats_words(s, w);
        for (int c = 0; c < STATS_WORDS; ++c) values[(u64)c * n + i] = w[c];
    }
}

// The statistics leaf with tables: move j (of n) makes a leaf parent from boards[parents[j]] (Us to
// move), whose moves are classified and added to the parent board's 13 values (values[c * boards +
// parents[j]]). The moves of one board are one run of j (gen_kernel writes them at its offset), so a
// warp's moves are runs of equal parents: a segmented inclusive scan over the warp sums each run,
// and the run's last lane makes one atomic add per non-zero counter.
template <int Us>
__global__ void PC_STATS_BOUNDS stats_leaf_values_kernel(const Board* __restrict__ boards,
                                                         const u32* __restrict__ parents,
                                                         const Move* __restrict__ moves, u64 n,
                                                         const CastleInfo* ci_g, unsigned long long* values,
                                                         u64 n_boards) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    StatCounts s;
    stats_zero(s);
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 p = 0xFFFFFFFFu;  // lanes past n: a run of their own at the warp's end, never added
    if (j < n) {
        p = parents[j];
        bfs_stats_leaf<Us>(boards[p], moves[j], ci, s);
    }
    u64 w[STATS_WORDS];
    stats_words(s, w);
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        const u32 q = __shfl_up_sync(0xffffffffu, p, o);
        const bool same = lane >= o && q == p;
#pragma unroll
        for (int c = 0; c < STATS_WORDS; ++c) {
            const u64 x = __shfl_up_sync(0xffffffffu, w[c], o);
            if (same) w[c] += x;
        }
    }
    const u32 next = __shfl_down_sync(0xffffffffu, p, 1);
    if (j < n && (lane == 31 || next != p)) {
#pragma unroll
        for (int c = 0; c < STATS_WORDS; ++c)
            if (w[c]) atomicAdd(values + (u64)c * n_boards + p, (unsigned long long)w[c]);
    }
}

// The statistics leaf merge (TTBfsDriver.perft_stats): the moves of a remaining-depth-2 level are
// grouped by the keys of the leaf parents they make (leaf_keys_claim_kernel), and
// only the first move of each group, heads[j] (j < n), is classified: counts[c * n_moves + heads[j]] =
// counter c of the leaf parent it makes. upsweep_heads_kernel, once a counter, then gives every move
// its head's counters.
template <int Us>
__global__ void PC_STATS_BOUNDS stats_heads_kernel(const Board* __restrict__ boards, const u32* __restrict__ parents,
                                                   const Move* __restrict__ moves, const u32* __restrict__ heads,
                                                   u64 n, const CastleInfo* ci_g, u64* __restrict__ counts,
                                                   u64 n_moves) {
    PC_SLOW();
    PC_LOAD_CI(ci_g);
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        const u64 mj = heads[j];
        StatCounts s;
        stats_zero(s);
        bfs_stats_leaf<Us>(boards[parents[mj]], moves[mj], ci, s);
        u64 w[STATS_WORDS];
        stats_words(s, w);
        for (int c = 0; c < STATS_WORDS; ++c) counts[(u64)c * n_moves + mj] = w[c];
    }
}

// Probe the statistics tables: a board found takes its entry's 13 values and count 0 (not expanded);
// the others keep the move count count_probe_kernel (without a table) gave them.
__global__ void stats_probe_kernel(const Key128* __restrict__ keys, u32 n, const u64* __restrict__ tt, u64 slots,
                                   u32* __restrict__ counts, u64* __restrict__ values) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && bfs_stats_probe(tt, slots, keys[i], values, n, i)) counts[i] = 0;
}

__global__ void stats_store_kernel(const Board* __restrict__ boards, const Key128* __restrict__ keys,
                                   const u64* __restrict__ values, u32 n, u64* tt, u64 slots, u64* audit, u64 tag) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bfs_stats_store(tt, slots, keys[i], values, n, i, audit, boards[i], tag);
}

#if !defined(__CUDACC_RTC__)
// Offline builds (nvcc -Xptxas -v for the resource report; CPU CI's compile check) instantiate every
// kernel the driver uses; NVRTC gets the same list as name expressions from perft_core/gpu/kernels.py.
#define PC_BOTH_SIDES(X) X(0) X(1)
#define PC_INST(S)                                                                                          \
    template __global__ void count_kernel<S>(const Board*, u32, const CastleInfo*, u32*);                   \
    template __global__ void gen_kernel<S>(const Board*, u32, const CastleInfo*, const u64*, Move*, u32*,    \
                                           unsigned long long*);                                           \
    template __global__ void make_kernel<S>(const Board*, const u32*, const Move*, u64, const CastleInfo*,  \
                                            Board*);                                                       \
    template __global__ void leaf_kernel<S, 2>(const Board*, const u32*, const Move*, u64, const CastleInfo*, \
                                               unsigned long long*);                                        \
    template __global__ void leaf_kernel<S, 3>(const Board*, const u32*, const Move*, u64, const CastleInfo*, \
                                               unsigned long long*);                                        \
    template __global__ void leaf_kernel<S, 4>(const Board*, const u32*, const Move*, u64, const CastleInfo*, \
                                               unsigned long long*);                                        \
    template __global__ void count_sum_kernel<S>(const Board*, u32, const CastleInfo*, unsigned long long*); \
    template __global__ void keys_kernel<S>(const Board*, u32, const CastleInfo*, const ZobristKeys*, Key128*); \
    template __global__ void count_probe_kernel<S>(const Board*, const Key128*, u32, const CastleInfo*,     \
                                                   const TTEntry16*, u64, u32*, u64*);                     \
    template __global__ void make_key_kernel<S>(const Board*, const Key128*, const u32*, const Move*, u64,  \
                                                const CastleInfo*, const ZobristKeys*, Board*, Key128*);     \
    template __global__ void leaf_values_kernel<S, 2>(const Board*, const u32*, const Move*, u64,          \
                                                      const CastleInfo*, unsigned long long*);             \
    template __global__ void leaf_values_kernel<S, 3>(const Board*, const u32*, const Move*, u64,          \
                                                      const CastleInfo*, unsigned long long*);             \
    template __global__ void leaf_heads_kernel<S>(const Board*, const u32*, const Move*, const u32*, u64,    \
                                                  const CastleInfo*, u64*);                                \
    template __global__ void leaf_keys_claim_kernel<S>(const Board*, const Key128*, const u32*, const Move*, u32, \
                                                       const CastleInfo*, const ZobristKeys*, Key128*, u32*, u64, int, \
                                                       u32*, u32*);                                             \
    template __global__ void stats_leaf_kernel<S>(const Board*, const u32*, const Move*, u64, const CastleInfo*, \
                                                  unsigned long long*);                                      \
    template __global__ void stats_sum_kernel<S>(const Board*, u32, const CastleInfo*, unsigned long long*);   \
    template __global__ void stats_values_kernel<S>(const Board*, u32, const CastleInfo*, u64*);               \
    template __global__ void stats_leaf_values_kernel<S>(const Board*, const u32*, const Move*, u64,           \
                                                         const CastleInfo*, unsigned long long*, u64);        \
    template __global__ void stats_heads_kernel<S>(const Board*, const u32*, const Move*, const u32*, u64,         \
                                                   const CastleInfo*, u64*, u64);
PC_BOTH_SIDES(PC_INST)
#endif
