// Statistics transposition-table entries: the tables of a statistics count with tables
// (perft_core/gpu/ttdriver.py, TTBfsDriver.perft_stats), shared by the host batch kernels and the
// device kernels. Separate from the node-count entries of pc_tt.h (whose code stays as it was).
//
// One table per remaining depth; an entry is 8 words (64 bytes, half an aligned 128-byte line):
//     w[0]        check = key.hi ^ tts_mix(counters)
//     w[1]        nodes (64 bits)
//     w[2 .. 7]   the other 12 counters of StatCounts (perft_core.stats.STATS_FIELDS order), 32 bits
//                 each: counter c (1 .. 12) in the low half of w[1 + (c + 1) / 2] when c is odd,
//                 in its high half when c is even
// A count whose other counters do not all fit in 32 bits is not stored (a miss later, never a
// truncated value): every counter but nodes counts some of the leaf moves, so it takes a subtree
// with more than 2^32 captures (or checks, ...) for that: Kiwipete's perft 6 has 1.6 x 10^9
// captures (CPW), its perft 7 6.9 x 10^10 (Grand Chess Tree); startpos's perft 7 has 1.1 x 10^8.
// Session 27 halved the entry from 16 words (check, 13 counters of 64 bits, 2 unused): twice the
// slots for the same bytes.
// The slot is chosen by key.lo (tt16_slot). A probe accepts the entry only if nodes != 0 and
// check ^ tts_mix(counters) == key.hi. Entries are written without a lock, word by word, so two
// stores into one slot in one launch can leave a torn entry (words of two stores): its check word
// then fails but with probability 2^-64, as the XOR check of pc_tt.h (Hyatt and Mann, ICGA Journal
// 25(1), 2002), here over every counter through a mix in which each counter changes the result.
// nodes == 0 marks an empty slot, so a subtree without leaves is never stored.
#pragma once
#include "pc_stats.h"
#include "pc_tt.h"

enum { TTS_WORDS = 8 };  // uint64 words of a statistics entry

// A 64-bit digest of the counters w[0 .. STATS_WORDS - 1]: each step xors one counter (offset by its
// index) into the state and applies splitmix64's finaliser, a bijection, so two counter lists that
// differ in one counter give different digests, and lists that differ in several collide by chance.
PC_HD u64 tts_mix(const u64* w) {
    u64 h = 0x243F6A8885A308D3ull;
    for (int k = 0; k < STATS_WORDS; ++k) {
        h ^= w[k] + 0x9E3779B97F4A7C15ull * (u64)(k + 1);
        h ^= h >> 30;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 27;
        h *= 0x94D049BB133111EBull;
        h ^= h >> 31;
    }
    return h;
}

// Probe the statistics table of board i (of n) with key k: on a hit, its counters go to
// values[c * n + i] (c = 0 .. 12, the level's values as 13 slices of n) and true is returned.
PC_HD bool bfs_stats_probe(const u64* tt, u64 slots, const Key128& k, u64* values, u64 n, u64 i) {
    const u64* e = tt + (u64)TTS_WORDS * tt16_slot(k, slots);
    u64 w[STATS_WORDS];
    w[0] = e[1];
    for (int c = 1; c < STATS_WORDS; ++c) w[c] = (e[1 + (c + 1) / 2] >> ((c & 1) ? 0 : 32)) & 0xFFFFFFFFull;
    if (w[0] == 0 || (e[0] ^ tts_mix(w)) != k.hi) return false;
    for (int c = 0; c < STATS_WORDS; ++c) values[(u64)c * n + i] = w[c];
    return true;
}

// Stores board i's finished counters (values[c * n + i]); audit as bfs_store (pc_bfs.h): 8 words a
// slot, one board per slot and launch writes entry and record.
PC_HD void bfs_stats_store(u64* tt, u64 slots, const Key128& k, const u64* values, u64 n, u64 i, u64* audit,
                           const Board& b, u64 tag) {
    u64 w[STATS_WORDS];
    for (int c = 0; c < STATS_WORDS; ++c) w[c] = values[(u64)c * n + i];
    if (!w[0]) return;  // no leaves below: never stored (an empty slot reads as nodes 0)
    for (int c = 1; c < STATS_WORDS; ++c)
        if (w[c] >> 32) return;  // wider than its 32-bit half: not stored
    const u64 s = tt16_slot(k, slots);
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
    u64* e = tt + (u64)TTS_WORDS * s;
    e[0] = k.hi ^ tts_mix(w);
    e[1] = w[0];
    for (int j = 2; j < TTS_WORDS; ++j) e[j] = w[2 * j - 3] | (w[2 * j - 2] << 32);
}
