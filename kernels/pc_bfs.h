// Per-element work of the breadth-first perft, shared by the CUDA kernels (pc_kernels.cu, one thread
// per element) and the host batch kernels of the emulated device (perft_core/src/batch.cpp, a loop).
//
// A BFS level is an array of Boards (all with the same side to move). Expanding a level:
//   count  -> counts[i] = number of legal moves of boards[i]
//   scan   -> offsets = exclusive prefix sum of counts (CuPy / NumPy)
//   gen    -> moves[offsets[i] + k] = k-th move of boards[i], parents[...] = i (interval expand)
//   make   -> children[j] = boards[parents[j]] after moves[j]
// The last plies are counted without storing boards: leaf2 (make + bulk count) and the fused
// two-level leaf leaf3 (make, generate, make + bulk count each grandchild).
#pragma once
#include "pc_movegen.h"

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

template <int Us>
PC_HD u64 bfs_leaf3(const Board& parent, Move m, const CastleInfo& ci) {
    Board c = parent;
    make_move<Us>(c, m, ci);
    Move list[PC_MAX_MOVES];
    int n = generate_moves<Us ^ 1>(c, ci, list);
    u64 total = 0;
    for (int i = 0; i < n; ++i) {
        Board g = c;
        make_move<Us ^ 1>(g, list[i], ci);
        total += count_moves<Us>(g, ci);
    }
    return total;
}
