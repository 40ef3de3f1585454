// Attack tables: leaper tables, fancy magic bitboards for sliders, and between-square masks.
//
// One `Tables` struct holds everything. The host fills it once (pc_init_host.h); the GPU backend
// copies the same bytes into the device global `g_tables_dev`, so both targets use identical data.
// Magic bitboards: Pradyumna Kannan, "Magic Move-Bitboard Generation in Computer Chess" (2007);
// the "fancy" variable-shift layout with 102,400 rook and 5,248 bishop entries.
#pragma once
#include "pc_common.h"

#define PC_ROOK_ENTRIES 102400
#define PC_BISHOP_ENTRIES 5248

struct Magic {
    u64 mask;   // relevant occupancy (board edges excluded)
    u64 magic;  // multiplier
    u32 offset; // first entry of this square in Tables::slider
    u32 shift;  // 64 - popcount(mask)
};

struct Tables {
    u64 slider[PC_ROOK_ENTRIES + PC_BISHOP_ENTRIES];
    Magic rook[64];
    Magic bishop[64];
    u64 knight[64];
    u64 king[64];
    u64 pawn[2][64];        // squares a pawn of that colour on sq attacks
    u64 between[64][64];    // squares strictly between two aligned squares, else 0
    u64 rook_empty[64];     // rook attacks on an empty board
    u64 bishop_empty[64];   // bishop attacks on an empty board
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__device__ Tables g_tables_dev;
#endif
#if !defined(__CUDACC_RTC__)
inline Tables g_tables_host;  // one instance across the extension's translation units
#endif

#ifdef __CUDA_ARCH__
#define PC_T g_tables_dev
#define PC_LD(x) __ldg(&(x))
#else
#define PC_T g_tables_host
#define PC_LD(x) (x)
#endif

PC_HD u64 knight_att(int sq) { return PC_LD(PC_T.knight[sq]); }
PC_HD u64 king_att(int sq) { return PC_LD(PC_T.king[sq]); }
PC_HD u64 pawn_att(int color, int sq) { return PC_LD(PC_T.pawn[color][sq]); }
PC_HD u64 between_bb(int a, int b) { return PC_LD(PC_T.between[a][b]); }
PC_HD u64 rook_empty(int sq) { return PC_LD(PC_T.rook_empty[sq]); }
PC_HD u64 bishop_empty(int sq) { return PC_LD(PC_T.bishop_empty[sq]); }

PC_HD u64 magic_lookup(const Magic& m, u64 occ) {
    u64 mask = PC_LD(m.mask), mul = PC_LD(m.magic);
    u32 off = PC_LD(m.offset), sh = PC_LD(m.shift);
    return PC_LD(PC_T.slider[off + (u32)(((occ & mask) * mul) >> sh)]);
}
PC_HD u64 rook_att(int sq, u64 occ) { return magic_lookup(PC_T.rook[sq], occ); }
PC_HD u64 bishop_att(int sq, u64 occ) { return magic_lookup(PC_T.bishop[sq], occ); }
