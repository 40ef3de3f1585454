// Per-element work of the breadth-first perft, shared by the CUDA kernels (pc_kernels.cu, one thread
// per element) and the host batch kernels of the emulated device (perft_core/src/batch.cpp, a loop).
//
// A BFS level is an array of Boards (all with the same side to move). Expanding a level:
//   count  -> counts[i] = number of legal moves of boards[i]
//   scan   -> offsets = exclusive prefix sum of counts (CuPy / NumPy)
//   gen    -> moves[offsets[i] + k] = k-th move of boards[i], parents[...] = i (interval expand)
//   make   -> children[j] = boards[parents[j]] after moves[j]
// The last plies are counted without storing boards: leaf2 (make + bulk count) and the fused
// two-level leaf leaf3 (make, generate, make + bulk count each grandchild that is not quiet:
// pc_quiet.h).
#pragma once
#include "pc_quiet.h"

template <int Us>
PC_HD u32 bfs_count(const Board& b, const CastleInfo& ci) {
    return count_moves<Us>(b, ci);
}

template <int Us>
PC_HD void bfs_make(const Board& parent, Move m, const CastleInfo& ci, Board& child) {
    child = parent;
    make_move<Us>(child, m, ci);
}

template <int Us>
PC_HD u64 bfs_leaf2(const Board& parent, Move m, const CastleInfo& ci) {
    Board c = parent;
    make_move<Us>(c, m, ci);
    return count_moves<Us ^ 1>(c, ci);
}

// Make + bulk count one move. Out of line on the GPU so the generator's sink call sites share one
// copy of count_moves.
template <int Us>
PC_HD_NOINLINE u32 make_and_count(const Board& b, Move m, const CastleInfo& ci) {
    Board g = b;
    make_move<Us>(g, m, ci);
    return count_moves<Us ^ 1>(g, ci);
}

// A generator sink that counts the children of each generated move as it is generated: perft 2
// without a move list (no per-thread array in local memory on the GPU).
template <int Us>
struct PerftSink {
    const Board& b;
    const CastleInfo& ci;
    u64 n = 0;
    PC_HD PerftSink(const Board& board, const CastleInfo& castle) : b(board), ci(castle) {}
    PC_HD void visit(int from, int to, int flag) { n += make_and_count<Us>(b, make_mv(from, to, flag), ci); }
    PC_HD void piece(int from, u64 to) {
        while (to) visit(from, pop_lsb(to), MF_NORMAL);
    }
    PC_HD void slider(int from, u64 to) { piece(from, to); }
    PC_HD void pawns(u64 to, int delta, int flag) {
        while (to) {
            int t = pop_lsb(to);
            visit(t - delta, t, flag);
        }
    }
    PC_HD void promos(u64 to, int delta) {
        while (to) {
            int t = pop_lsb(to);
            for (int f = MF_PROMO_N; f <= MF_PROMO_Q; ++f) visit(t - delta, t, f);
        }
    }
    PC_HD void one(int from, int to, int flag) { visit(from, to, flag); }
    PC_HD void pins(u64) {}
};

// The fused two-level leaf, streaming: generate the child's moves into a PerftSink.
template <int Us>
PC_HD u64 bfs_leaf3_stream(const Board& parent, Move m, const CastleInfo& ci) {
    Board c = parent;
    make_move<Us>(c, m, ci);
    PerftSink<Us ^ 1> sink(c, ci);
    generate_legal<Us ^ 1>(c, ci, sink);
    return sink.n;
}

// The fused two-level leaf with a move list: the child's quiet moves (pc_quiet.h) add its base count
// each without a make or a count. The emulated device's leaf; the GPU's leaves share the warp's
// grandchildren (leaf3_warp in pc_kernels.cu) with the same generate_not_quiet.
template <int Us>
PC_HD u64 bfs_leaf3(const Board& parent, Move m, const CastleInfo& ci) {
    Board c = parent;
    make_move<Us>(c, m, ci);
    Move list[PC_MOVES_BOUND];
    u64 total = 0;
    const int n = generate_not_quiet<Us>(c, ci, list, total);
    for (int i = 0; i < n; ++i) {
        Board g = c;
        make_move<Us ^ 1>(g, list[i], ci);
        total += count_moves<Us>(g, ci);
    }
    return total;
}

// ----- transposition-table mode: keys carried per board, values per board, upsweep ----------------
// Downsweep: a board whose key hits the table of its remaining depth takes the stored count and is
// not expanded (count 0). Upsweep (after the leaf): each board's value is the sum of its children's,
// then stored. A count is stored only once every board below it has been counted, so an
// interrupted call (out of memory) stores nothing.
#include "pc_tt.h"

template <int Us>
PC_HD u32 bfs_count_probe(const Board& b, const Key128& k, const TTEntry16* tt, u64 slots, const CastleInfo& ci,
                          u64& value) {
    if (tt) {
        const TTEntry16* bucket = tt + tt16_bucket(k, slots);
        TTEntry16 e[PC_TT_WAYS];
        tt16_load_bucket(bucket, e);
        u64 found = 0;  // every way tested before one branch, so that no way's load waits for another's test
        for (int w = 0; w < PC_TT_WAYS; ++w) found = tt16_match(e[w].check, e[w].data, k) ? e[w].data : found;
        if (found) {
            value = found;
            return 0;
        }
    }
    value = 0;
    return count_moves<Us>(b, ci);
}

template <int Us>
PC_HD void bfs_make_key(const Board& parent, const Key128& pk, Move m, const CastleInfo& ci, const ZobristKeys& z,
                        Board& child, Key128& ck) {
    ck = update_hash<Us>(pk, parent, m, ci, z);
    child = parent;
    make_move<Us>(child, m, ci);
}

// Stores a finished count; `audit` (optional) records what was stored, 8 words a slot:
// board (5), key lo, key hi, tag. tag = store launch number << 1 | side to move (launch numbers
// start at 1). In audit mode one board per slot and launch writes both the entry and its record
// (the first to claim the slot's tag word), so two boards of one launch that share a slot cannot
// leave an entry with another board's record; without audit, racing stores may tear an entry,
// which its check word then rejects.
// With two ways (PC_TT_WAYS) a store goes to the way that holds its key, else way 0 when its count
// is at least way 0's (an empty way reads as 0) and way 1 otherwise: way 0 keeps the bigger count
// (the subtree that costs more to recount), way 1 takes the rest (the classic two-tier replacement,
// the count standing in for the depth, as the CPU tables' lossy levels, perft_core/src/tt.h). The
// ways are read without a lock: a racing store may make the choice stale, never an entry wrong.
PC_HD void bfs_store(TTEntry16* tt, u64 slots, const Key128& k, u64 value, u64* audit, const Board& b, u64 tag) {
    if (!value) return;  // zero counts are never stored (an empty slot reads as data 0)
    u64 s = tt16_bucket(k, slots);
#if PC_TT_WAYS == 2
    {
        TTEntry16 e[2];
        tt16_load_bucket(tt + s, e);
        if (!tt16_match(e[0].check, e[0].data, k) && (tt16_match(e[1].check, e[1].data, k) || value < e[0].data)) ++s;
    }
#elif PC_TT_WAYS != 1
#error "PC_TT_WAYS must be 1 or 2"
#endif
    if (audit) {
        u64* a = audit + 8 * s;
        const u64 old = a[7];
        if ((old >> 1) == (tag >> 1)) return;  // this launch already stored into this slot
#ifdef __CUDA_ARCH__
        if (atomicCAS(reinterpret_cast<unsigned long long*>(a + 7), old, tag) != old) return;
#else
        a[7] = tag;
#endif
        a[0] = b.pbq; a[1] = b.nbk; a[2] = b.rqk; a[3] = b.black; a[4] = b.state;
        a[5] = k.lo; a[6] = k.hi;
    }
    TTEntry16 e;
    e.check = tt16_check(value, k);
    e.data = value;
    tt[s] = e;
}
