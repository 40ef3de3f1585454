// Lossy 16-byte transposition-table entries, shared by the host tables and the device tables.
//
// One table per remaining depth, so an entry holds only the key check and the count:
//     data  = the perft count of the position at that remaining depth (1 .. 2^64 - 1)
//     check = key.hi ^ data
// The slot is chosen by key.lo; a probe accepts the entry only if check ^ data == key.hi. A
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

PC_HD u64 tt16_slot(const Key128& k, u64 mask) { return k.lo & mask; }

// Is (check, data), read from a slot, the count of key k? (data is then the count.)
PC_HD bool tt16_match(u64 check, u64 data, const Key128& k) { return data != 0 && (check ^ data) == k.hi; }

// The check word to store next to `count` (count must be non-zero).
PC_HD u64 tt16_check(u64 count, const Key128& k) { return k.hi ^ count; }
