// Lossy 16-byte transposition-table entries, shared by the host tables and the device tables.
//
// One table per remaining depth, so an entry holds only the key check and the count:
//     data  = the perft count of the position at that remaining depth (1 .. 2^64 - 1)
//     check = key.hi ^ data
// The slot is chosen by key.lo (tt16_slot; a bucket of slots, tt16_bucket); a probe accepts the
// entry only if check ^ data == key.hi. A reader that meets a torn entry (check from one store,
// data from another, as can happen when two threads store into one slot without a lock) computes a value that equals its key.hi only by
// chance (2^-64): the XOR check of R. Hyatt and T. Mann, "A lockless transposition-table
// implementation for parallel search", ICGA Journal 25(1), 2002. data == 0 marks an empty slot, so
// zero counts (mate or stalemate below) are never stored, and a zeroed table matches nothing.
#pragma once
#include "pc_zobrist.h"

struct TTEntry16 {
    u64 check, data;
};

// High 64 bits of a 64 x 64-bit product.
PC_HD u64 mulhi64(u64 a, u64 b) {
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    return (u64)(((unsigned __int128)a * b) >> 64);
#endif
}

// The slot of key k in a table of n slots (any n >= 1): floor(k.lo * n / 2^64), D. Lemire's
// "fastrange" (a fair map of a 64-bit hash onto 0..n-1 without a division).
PC_HD u64 tt16_slot(const Key128& k, u64 n) { return mulhi64(k.lo, n); }

// The node-count tables of the BFS (pc_bfs.h) are PC_TT_WAYS-way: key k may sit in any slot of its
// bucket, PC_TT_WAYS consecutive slots (n >= PC_TT_WAYS; with n not a multiple, the last slots
// stay unused). Two ways are one 32-byte sector, the unit a GPU reads anyway for a 16-byte entry.
#ifndef PC_TT_WAYS
#define PC_TT_WAYS 2
#endif
PC_HD u64 tt16_bucket(const Key128& k, u64 n) { return (u64)PC_TT_WAYS * mulhi64(k.lo, n / PC_TT_WAYS); }

// The PC_TT_WAYS entries of a bucket read whole and at once: on the device one asm statement of
// 16-byte loads, which the compiler can neither split nor sink behind a test (left to itself it read
// a way's data word, tested it, then its check word, then the next way's: up to four dependent round
// trips a miss, +4 % on one-GPU perft 12, NOTES.md session 32); the tables are 256-byte aligned.
PC_HD void tt16_load_bucket(const TTEntry16* p, TTEntry16 (&e)[PC_TT_WAYS]) {
#if defined(__CUDA_ARCH__) && PC_TT_WAYS == 2
    asm volatile("ld.global.v2.u64 {%0, %1}, [%4];\n\tld.global.v2.u64 {%2, %3}, [%4+16];"
                 : "=l"(e[0].check), "=l"(e[0].data), "=l"(e[1].check), "=l"(e[1].data) : "l"(p));
#else
    for (int w = 0; w < PC_TT_WAYS; ++w) e[w] = p[w];
#endif
}

// Is (check, data), read from a slot, the count of key k? (data is then the count.)
PC_HD bool tt16_match(u64 check, u64 data, const Key128& k) { return data != 0 && (check ^ data) == k.hi; }

// The check word to store next to `count` (count must be non-zero).
PC_HD u64 tt16_check(u64 count, const Key128& k) { return k.hi ^ count; }

// The part of key k among `parts` (0 .. parts-1) when a deep count is split by key at one BFS level
// (perft_core/gpu/ttdriver.py, "parts"): fastrange on the top 32 bits of k.hi, independent of the
// slot (k.lo) and of the merge table's bits, so each part uses every slot of its tables.
PC_HD u32 key_part(const Key128& k, u32 parts) { return (u32)(((k.hi >> 32) * (u64)parts) >> 32); }

// One step of the board cut's hash: splitmix64's finaliser (S. Vigna) of (h ^ x) + the golden gamma.
PC_HD u64 part_mix(u64 h, u64 x) {
    u64 z = (h ^ x) + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The part of board b (side `us` to move) among `parts` by the board cut (perft_core/gpu/ttdriver.py,
// set_part): a hash, salted by `salt`, of the pieces of the side that is NOT to move, the side whose
// move made the split level. The boards of one part's split level are then the parents of most of
// their children's repeats: a child reached from two split-level boards by two orders of the mover's
// quiet moves (X = W+a+o, Y = W+b+o, both then to W+a+o+b) has the same other side in both parents,
// so the same part, and the part's leaf merge counts it once. The key cut (key_part) sent X and Y
// to parts at random: startpos perft 11 in 4 parts summed 1.50x the leaf work of one process on an
// H200, and on the host the ply-5 children of the ply-4 positions summed over 4 parts were 1.81x
// the distinct ones by key, 1.01x by this cut (NOTES.md, session 33).
PC_HD u32 board_part(const Board& b, int us, u64 salt, u32 parts) {
    const u64 them = us == BLACK ? ~b.black : b.black;
    u64 h = part_mix(salt, b.pbq & them);
    h = part_mix(h, b.nbk & them);
    h = part_mix(h, b.rqk & them);
    return (u32)(((h >> 32) * (u64)parts) >> 32);
}

// The part of a split-level board by the run's cut: 1 the board cut (board_part), 0 the key cut
// (key_part: runs stored before schema 9).
PC_HD u32 level_part(const Key128& k, const Board& b, int us, u64 salt, u32 cut, u32 parts) {
    return cut ? board_part(b, us, salt, parts) : key_part(k, parts);
}
