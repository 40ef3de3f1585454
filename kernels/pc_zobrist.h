// 128-bit Zobrist keys: the key tables, the key of a position from scratch (compute_hash), and the
// key after a move from the key before it (update_hash). Host and device code alike; kept apart
// from make_move so a key bug can never change a move, and a move bug can be caught by a key.
//
// A key is two independent 64-bit halves. Transposition tables index with `lo` and verify with
// `hi` (pc_tt.h), so a false hit needs two positions that agree in all 64 bits of `hi` and in the
// index bits of `lo`.
//
// What the key covers (A. Zobrist, "A New Hashing Method with Application for Game Playing", 1970):
//   * every piece: psq[colour][code][square];
//   * the side to move: `side` is XORed in when Black is to move;
//   * each castling right, by the square of the rook that carries it: castle[rook square]. The
//     rook square (not just "white h-side") is hashed because in Chess960 a right on an inner rook
//     and one on an outer rook are different positions with the same pieces;
//   * the en passant file: ep[file], only when the side to move has a pawn standing next to the
//     pawn that has just made a double push (a pseudo-legal en passant capture exists; the
//     Polyglot rule). After any other double push no en passant capture can follow, so the
//     position's move tree is the one without the en passant square and the key says so: more
//     transposition hits, same counts. Whether that capture is also legal (pinned capturer,
//     discovered check) is not looked at: such positions get a key of their own although their
//     trees equal the ones without en passant, which costs a hit but never a count.
//
// Key tables come from splitmix64 (S. Vigna; G. Steele, D. Lea, C. Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014) seeded with PC_ZOBRIST_DEFAULT_SEED or any other
// 64-bit seed; each Key128 of ZobristKeys, in memory order, takes two outputs: lo, then hi.
#pragma once
#include "pc_board.h"

#define PC_ZOBRIST_DEFAULT_SEED 0x5A0B215EEDC0FFEEULL

struct Key128 {
    u64 lo, hi;
};

PC_HD bool key_eq(const Key128& a, const Key128& b) { return a.lo == b.lo && a.hi == b.hi; }
PC_HD void key_xor(Key128& k, const Key128& x) {
    k.lo ^= x.lo;
    k.hi ^= x.hi;
}

// 17,552 bytes: psq entries for codes 0 and 7 exist (and are filled) but are never used.
struct ZobristKeys {
    Key128 psq[2][8][64];  // [colour][piece code][square]
    Key128 castle[64];     // [square of the rook that carries the right]
    Key128 ep[8];          // [file of the en passant square]
    Key128 side;           // black to move
};

#define PC_ZOBRIST_KEY_COUNT (sizeof(ZobristKeys) / sizeof(Key128))

PC_HD u64 splitmix64(u64& state) {
    u64 z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Fills every key of `z` from the splitmix64 stream of `seed`.
PC_HDN void zobrist_init(ZobristKeys& z, u64 seed) {
    Key128* k = &z.psq[0][0][0];
    u64 state = seed;
    for (u32 i = 0; i < (u32)PC_ZOBRIST_KEY_COUNT; ++i) {
        k[i].lo = splitmix64(state);
        k[i].hi = splitmix64(state);
    }
}

// The square of the pawn that made the double push, for an en passant file and the side to move.
template <int Us> PC_HD int ep_victim_square(int file) { return (Us == WHITE ? 32 : 24) + file; }

// Squares beside `sq` on its rank.
PC_HD u64 beside_bb(int sq) { return ((bit(sq) << 1) & ~PC_FILE_A) | ((bit(sq) >> 1) & ~PC_FILE_H); }

// The key's en passant rule (see the top of this file): is b's en passant file hashed, with Us to
// move? Yes when a pawn of ours stands beside the enemy pawn that made the double push.
template <int Us>
PC_HD bool ep_hashed(const Board& b) {
    const int f = ep_file(b);
    if (f < 0) return false;
    const int victim = ep_victim_square<Us>(f);
    const u64 pawns = pawns_of(b);
    const u64 ours = Us == WHITE ? ~b.black : b.black;
    return (pawns & ~ours & bit(victim)) && (pawns & ours & beside_bb(victim));
}

// XORs the keys of the castling rights in `rights` (CR_* bits), each by its rook's square.
PC_HD void xor_castle_rights(Key128& k, u32 rights, const CastleInfo& ci, const ZobristKeys& z) {
    while (rights) {
        const int i = lsb(rights);
        rights &= rights - 1;
        key_xor(k, z.castle[ci.side[i >> 1][i & 1].rook]);
    }
}

// The key of position b with Us to move, from scratch.
template <int Us>
PC_HD Key128 compute_hash(const Board& b, const CastleInfo& ci, const ZobristKeys& z) {
    Key128 k = {0, 0};
    for (u64 occ = occupied(b); occ;) {
        const int s = pop_lsb(occ);
        key_xor(k, z.psq[(b.black >> s) & 1][piece_code(b, s)][s]);
    }
    if (Us == BLACK) key_xor(k, z.side);
    xor_castle_rights(k, b.state & 15, ci, z);
    if (ep_hashed<Us>(b)) key_xor(k, z.ep[ep_file(b)]);
    return k;
}

// The key after Us plays the legal move m in b (b is the position before the move, k its key).
// Equal to compute_hash<Us ^ 1> of the position make_move<Us> produces.
template <int Us>
PC_HD Key128 update_hash(Key128 k, const Board& b, Move m, const CastleInfo& ci, const ZobristKeys& z) {
    constexpr int Them = Us ^ 1;
    const int from = mv_from(m), to = mv_to(m), flag = mv_flag(m);
    if (flag == MF_CASTLE) {  // king takes own rook: both land on their castling squares
        const CastleSide& cs = ci.side[Us][to > from ? 0 : 1];
        key_xor(k, z.psq[Us][KING][from]);
        key_xor(k, z.psq[Us][KING][cs.king_to]);
        key_xor(k, z.psq[Us][ROOK][to]);
        key_xor(k, z.psq[Us][ROOK][cs.rook_to]);
    } else {
        const int code = piece_code(b, from);
        key_xor(k, z.psq[Us][code][from]);
        key_xor(k, z.psq[Us][flag >= MF_PROMO_N ? flag - 2 : code][to]);
        if (flag == MF_EP) key_xor(k, z.psq[Them][PAWN][to ^ 8]);  // the captured pawn stands behind `to`
        else if (occupied(b) & bit(to)) key_xor(k, z.psq[Them][piece_code(b, to)][to]);
    }
    const u32 rights = b.state & 15;
    xor_castle_rights(k, rights & ~(u32)(ci.keep[from] & ci.keep[to]), ci, z);
    if (ep_hashed<Us>(b)) key_xor(k, z.ep[ep_file(b)]);
    // After our double push the opponent can capture en passant iff one of its pawns stands beside
    // ours; their pawns are not moved by our push, so the board before the move answers it.
    if (flag == MF_DOUBLE && (pawns_of(b) & (Us == WHITE ? b.black : ~b.black) & beside_bb(to)))
        key_xor(k, z.ep[to & 7]);
    key_xor(k, z.side);
    return k;
}
