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

// The small, hot part (7.5 KiB): GPU kernels may copy it into shared memory (PC_SHARED_TABLES).
struct SmallTables {
    Magic rook[64];
    Magic bishop[64];
    u64 knight[64];
    u64 king[64];
    u64 pawn[2][64];        // squares a pawn of that colour on sq attacks
    u64 rook_empty[64];     // rook attacks on an empty board
    u64 bishop_empty[64];   // bishop attacks on an empty board
    // Squares from which a knight / a bishop or queen / a rook or queen, on an empty board, attacks
    // a square next to a king on sq: the enemy pieces that can matter to the king's moves.
    u64 zone_knight[64];
    u64 zone_diag[64];
    u64 zone_orth[64];
};

struct Tables {
    SmallTables small;
    u64 slider[PC_ROOK_ENTRIES + PC_BISHOP_ENTRIES];
    u64 between[64][64];    // squares strictly between two aligned squares, else 0
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

// PC_S: where the small tables are read. With PC_SHARED_TABLES every block copies them into this
// file-scope shared variable first (PC_LOAD_SMALL_TABLES in pc_kernels.cu).
#if (defined(__CUDACC__) || defined(__CUDACC_RTC__)) && defined(PC_SHARED_TABLES)
__shared__ SmallTables s_small_tables;
#endif
#if defined(__CUDA_ARCH__) && defined(PC_SHARED_TABLES)
#define PC_S s_small_tables
#define PC_SLD(x) (x)
#else
#define PC_S PC_T.small
#define PC_SLD(x) PC_LD(x)
#endif

PC_HD u64 knight_att(int sq) { return PC_SLD(PC_S.knight[sq]); }
PC_HD u64 king_att(int sq) { return PC_SLD(PC_S.king[sq]); }
PC_HD u64 pawn_att(int color, int sq) { return PC_SLD(PC_S.pawn[color][sq]); }
PC_HD u64 between_bb(int a, int b) { return PC_LD(PC_T.between[a][b]); }
PC_HD u64 rook_empty(int sq) { return PC_SLD(PC_S.rook_empty[sq]); }
PC_HD u64 bishop_empty(int sq) { return PC_SLD(PC_S.bishop_empty[sq]); }
PC_HD u64 zone_knight(int sq) { return PC_SLD(PC_S.zone_knight[sq]); }
PC_HD u64 zone_diag(int sq) { return PC_SLD(PC_S.zone_diag[sq]); }
PC_HD u64 zone_orth(int sq) { return PC_SLD(PC_S.zone_orth[sq]); }

// Host builds look sliders up through g_sliders (filled by pc_init_host.h after the magic search):
// each square's mask, a pointer to its first entry and (magic builds) its magic and shift sit in
// arrays indexed by square, so a lookup needs no offset arithmetic (2 instructions fewer than
// through Magic: NOTES.md session 13).
// PC_HOST_PEXT (set by setup.py for the CPU extension built for x86-64-v3, never by a GPU build): the
// index is BMI2 PEXT of the occupancy under the mask, into a table of its own laid out like the magic
// one (same per-square offsets and sizes). GPU builds use Magic and Tables::slider as they are.
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
struct HostSliders {
    u64 mask[2][64];  // [0: rook, 1: bishop][square]
    const u64* base[2][64];
#ifdef PC_HOST_PEXT
    u64 pext_slider[PC_ROOK_ENTRIES + PC_BISHOP_ENTRIES];
#else
    u64 magic[2][64];
    u64 shift[2][64];
#endif
};
inline HostSliders g_sliders;
template <int Kind>
PC_HD u64 host_slider_att(int sq, u64 occ) {
#ifdef PC_HOST_PEXT
    return g_sliders.base[Kind][sq][__builtin_ia32_pext_di(occ, g_sliders.mask[Kind][sq])];
#else
    return g_sliders.base[Kind][sq][((occ & g_sliders.mask[Kind][sq]) * g_sliders.magic[Kind][sq]) >> g_sliders.shift[Kind][sq]];
#endif
}
PC_HD u64 rook_att(int sq, u64 occ) { return host_slider_att<0>(sq, occ); }
PC_HD u64 bishop_att(int sq, u64 occ) { return host_slider_att<1>(sq, occ); }
#else
PC_HD u64 magic_lookup(const Magic& m, u64 occ) {
    u64 mask = PC_SLD(m.mask), mul = PC_SLD(m.magic);
    u32 off = PC_SLD(m.offset), sh = PC_SLD(m.shift);
    return PC_LD(PC_T.slider[off + (u32)(((occ & mask) * mul) >> sh)]);
}
PC_HD u64 rook_att(int sq, u64 occ) { return magic_lookup(PC_S.rook[sq], occ); }
PC_HD u64 bishop_att(int sq, u64 occ) { return magic_lookup(PC_S.bishop[sq], occ); }
#endif
