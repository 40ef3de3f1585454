// Host-only: fills g_tables_host. Never seen by NVRTC (the GPU backend uploads these bytes).
//
// Magic multipliers are found at start-up by the usual sparse-random search (as Stockfish does,
// with its per-rank seeds for the xorshift64* generator), so the tables are deterministic.
#pragma once
#include "pc_tables.h"

namespace pc_init {

inline u64 ray_attacks(int sq, u64 occ, const int (*dirs)[2]) {
    u64 att = 0;
    int f0 = sq & 7, r0 = sq >> 3;
    for (int d = 0; d < 4; ++d) {
        int f = f0 + dirs[d][0], r = r0 + dirs[d][1];
        while (f >= 0 && f < 8 && r >= 0 && r < 8) {
            int s = r * 8 + f;
            att |= bit(s);
            if (occ & bit(s)) break;
            f += dirs[d][0];
            r += dirs[d][1];
        }
    }
    return att;
}

static const int ROOK_DIRS[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
static const int BISHOP_DIRS[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

struct Prng {  // xorshift64* (Vigna), as in Stockfish's magic search
    u64 s;
    u64 next() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return s * 2685821657736338717ULL;
    }
    u64 sparse() { return next() & next() & next(); }
};

inline void init_magics(Magic* magics, const int (*dirs)[2], u32 base) {
    static const u64 seeds[8] = {728, 10316, 55013, 32803, 12281, 15100, 16645, 255};
    static u64 occupancy[4096], reference[4096];
    static int epoch[4096];
    int cnt = 0;
    u32 offset = base;
    for (int sq = 0; sq < 64; ++sq) {
        u64 edges = ((PC_RANK_1 | PC_RANK_8) & ~(PC_RANK_1 << (8 * (sq >> 3)))) |
                    ((PC_FILE_A | PC_FILE_H) & ~(PC_FILE_A << (sq & 7)));
        Magic& m = magics[sq];
        m.mask = ray_attacks(sq, 0, dirs) & ~edges;
        m.shift = 64 - popcnt(m.mask);
        m.offset = offset;
        int size = 0;
        u64 b = 0;
        do {  // Carry-Rippler enumeration of all subsets of the mask
            occupancy[size] = b;
            reference[size] = ray_attacks(sq, b, dirs);
            ++size;
            b = (b - m.mask) & m.mask;
        } while (b);
        Prng rng{seeds[sq >> 3]};
        for (int i = 0; i < size;) {
            for (m.magic = 0; popcnt((m.magic * m.mask) >> 56) < 6;) m.magic = rng.sparse();
            ++cnt;
            for (i = 0; i < size; ++i) {
                u32 idx = (u32)((occupancy[i] * m.magic) >> m.shift);
                if (epoch[idx] < cnt) {
                    epoch[idx] = cnt;
                    g_tables_host.slider[offset + idx] = reference[i];
                } else if (g_tables_host.slider[offset + idx] != reference[i]) {
                    break;
                }
            }
        }
        offset += (u32)size;
    }
}

// g_sliders (pc_tables.h) from the magics of one kind (0: rook, 1: bishop); PEXT builds copy each
// square's attacks for every subset of its mask from the magic table to the subset's PEXT index.
inline void init_host_sliders(const Magic* magics, int kind) {
    for (int sq = 0; sq < 64; ++sq) {
        const Magic& m = magics[sq];
        g_sliders.mask[kind][sq] = m.mask;
#ifdef PC_HOST_PEXT
        g_sliders.base[kind][sq] = g_sliders.pext_slider + m.offset;
        u64 b = 0;
        do {
            g_sliders.pext_slider[m.offset + __builtin_ia32_pext_di(b, m.mask)] =
                g_tables_host.slider[m.offset + (u32)((b * m.magic) >> m.shift)];
            b = (b - m.mask) & m.mask;
        } while (b);
#else
        g_sliders.base[kind][sq] = g_tables_host.slider + m.offset;
        g_sliders.magic[kind][sq] = m.magic;
        g_sliders.shift[kind][sq] = m.shift;
#endif
    }
}

inline u64 leaper(int sq, const int (*d)[2], int n) {
    u64 att = 0;
    for (int i = 0; i < n; ++i) {
        int f = (sq & 7) + d[i][0], r = (sq >> 3) + d[i][1];
        if (f >= 0 && f < 8 && r >= 0 && r < 8) att |= bit(r * 8 + f);
    }
    return att;
}

// Fills every table. Idempotent; call once before any move generation on the host.
inline void init_tables() {
    static bool done = false;
    if (done) return;
    static const int KN[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int KG[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    static const int WP[2][2] = {{-1, 1}, {1, 1}};
    static const int BP[2][2] = {{-1, -1}, {1, -1}};
    Tables& t = g_tables_host;
    init_magics(t.small.rook, ROOK_DIRS, 0);
    init_magics(t.small.bishop, BISHOP_DIRS, PC_ROOK_ENTRIES);
    init_host_sliders(t.small.rook, 0);
    init_host_sliders(t.small.bishop, 1);
    for (int s = 0; s < 64; ++s) {
        t.small.knight[s] = leaper(s, KN, 8);
        t.small.king[s] = leaper(s, KG, 8);
        t.small.pawn[WHITE][s] = leaper(s, WP, 2);
        t.small.pawn[BLACK][s] = leaper(s, BP, 2);
        t.small.rook_empty[s] = ray_attacks(s, 0, ROOK_DIRS);
        t.small.bishop_empty[s] = ray_attacks(s, 0, BISHOP_DIRS);
    }
    for (int s = 0; s < 64; ++s) {
        u64 zn = 0, zd = 0, zo = 0;
        for (u64 z = t.small.king[s]; z;) {
            const int q = pop_lsb(z);
            zn |= t.small.knight[q];
            zd |= t.small.bishop_empty[q];
            zo |= t.small.rook_empty[q];
        }
        t.small.zone_knight[s] = zn;
        t.small.zone_diag[s] = zd;
        t.small.zone_orth[s] = zo;
    }
    for (int a = 0; a < 64; ++a)
        for (int b = 0; b < 64; ++b) {
            t.between[a][b] = 0;
            if (a == b) continue;
            if (t.small.rook_empty[a] & bit(b))
                t.between[a][b] = ray_attacks(a, bit(b), ROOK_DIRS) & ray_attacks(b, bit(a), ROOK_DIRS);
            else if (t.small.bishop_empty[a] & bit(b))
                t.between[a][b] = ray_attacks(a, bit(b), BISHOP_DIRS) & ray_attacks(b, bit(a), BISHOP_DIRS);
        }
    done = true;
}

}  // namespace pc_init
