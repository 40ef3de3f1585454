// Lossy 16-byte transposition-table entries, shared by the host tables and the device tables.
//
// One table per remaining depth, so an entry holds only the key check and the count:
//     data  = the perft count of the position at that remaining depth (1 .. 2^64 - 1)
//     check = key.hi ^ data
// The slot is chosen by key.lo (tt16_slot); a probe accepts the entry only if check ^ data == key.hi. A
// reader that meets a torn entry (check from one store, data from another, as can happen when
// two threads store into one slot without a lock) computes a value that equals its key.hi only by
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

// Is (check, data), read from a slot, the count of key k? (data is then the count.)
PC_HD bool tt16_match(u64 check, u64 data, const Key128& k) { return data != 0 && (check ^ data) == k.hi; }

// The check word to store next to `count` (count must be non-zero).
PC_HD u64 tt16_check(u64 count, const Key128& k) { return k.hi ^ count; }

// The part of key k among `parts` (0 .. parts-1) when a deep count is split by key at one BFS level
// (perft_core/gpu/ttdriver.py, "parts"): fastrange on the top 32 bits of k.hi, independent of the
// slot (k.lo) and of the merge table's bits, so each part uses every slot of its tables.
PC_HD u32 key_part(const Key128& k, u32 parts) { return (u32)(((k.hi >> 32) * (u64)parts) >> 32); }
