// Board representation, castling geometry and make_move.
//
// The board is a quad bitboard: a piece's 3-bit code (P=1 N=2 B=3 R=4 Q=5 K=6) is spread over
// pbq (bit 0), nbk (bit 1) and rqk (bit 2); `black` marks black pieces. One state byte holds the
// castling rights (bits 0-3) and the en passant file + 1 (bits 4-7, 0 = none). The side to move is
// not stored: it is a template parameter (every position of a BFS level has the same side).
#pragma once
#include "pc_tables.h"

struct Board {
    u64 pbq, nbk, rqk, black;
    u8 state;
};

// Castling rights bits: WH = white h-side (king side), WA = white a-side (queen side), etc.
enum { CR_WH = 1, CR_WA = 2, CR_BH = 4, CR_BA = 8 };
PC_HD int castle_bit(int color, int side) { return 1 << (color * 2 + side); }

// Geometry of one castling move. Chess960 rule: king and rook end on g/f (h-side) or c/d (a-side);
// every square either crosses (and both destinations) must be empty but for the two castling
// pieces, and no square the king stands on or crosses, destination included, may be attacked.
struct CastleSide {
    u64 empty;      // must be empty (king and rook squares themselves excluded)
    u64 king_path;  // squares from king start to destination (inclusive) that must not be attacked
    u64 xray;       // back-rank squares beyond the rook, when the rook is not on king_path (else 0)
    u64 zone_knight, zone_diag, zone_orth;  // where enemy pieces that can attack king_path stand (empty board)
    u8 rook, king_to, rook_to, pad;
};

struct CastleInfo {
    CastleSide side[2][2];  // [colour][0 = h-side, 1 = a-side]
    u8 keep[64];            // rights that survive a move from or to this square
};

// Derived piece sets of a quad bitboard.
PC_HD u64 occupied(const Board& b) { return b.pbq | b.nbk | b.rqk; }
PC_HD u64 pawns_of(const Board& b) { return b.pbq & ~b.nbk & ~b.rqk; }
PC_HD u64 knights_of(const Board& b) { return b.nbk & ~b.pbq & ~b.rqk; }
PC_HD u64 diag_of(const Board& b) { return b.pbq & (b.nbk ^ b.rqk); }  // bishops + queens
PC_HD u64 orth_of(const Board& b) { return b.rqk & ~b.nbk; }          // rooks + queens
PC_HD u64 kings_of(const Board& b) { return b.nbk & b.rqk; }

PC_HD int piece_code(const Board& b, int sq) {
    return (int)(((b.pbq >> sq) & 1) | (((b.nbk >> sq) & 1) << 1) | (((b.rqk >> sq) & 1) << 2));
}

PC_HD int ep_file(const Board& b) { return (b.state >> 4) - 1; }  // -1: none

// Is `sq` attacked by colour `by`, with occupancy `occ` (which may differ from the board's)?
PC_HD bool attacked_by(const Board& b, int sq, int by, u64 occ) {
    u64 them = by == BLACK ? b.black : ~b.black;
    if (knight_att(sq) & knights_of(b) & them) return true;
    if (pawn_att(by ^ 1, sq) & pawns_of(b) & them) return true;
    if (king_att(sq) & kings_of(b) & them) return true;
    // A slider lookup only when an enemy slider stands on that square's empty-board ray.
    const u64 d = diag_of(b) & them, o = orth_of(b) & them;
    if ((bishop_empty(sq) & d) && (bishop_att(sq, occ) & d)) return true;
    return (rook_empty(sq) & o) && (rook_att(sq, occ) & o);
}

// Moves: from (6 bits) | to (6 bits) | flag (4 bits). Castling is encoded king-takes-rook.
typedef u16 Move;
enum { MF_NORMAL = 0, MF_DOUBLE = 1, MF_EP = 2, MF_CASTLE = 3, MF_PROMO_N = 4, MF_PROMO_B = 5,
       MF_PROMO_R = 6, MF_PROMO_Q = 7 };
PC_HD Move make_mv(int from, int to, int flag) { return (Move)(from | (to << 6) | (flag << 12)); }
PC_HD int mv_from(Move m) { return m & 63; }
PC_HD int mv_to(Move m) { return (m >> 6) & 63; }
PC_HD int mv_flag(Move m) { return m >> 12; }

// Puts piece `code` of colour `color` on `sq` (the square must be empty in all four boards).
PC_HD void put_piece(Board& b, int code, int color, int sq) {
    u64 s = bit(sq);
    b.pbq |= (u64)(-(i64)(code & 1)) & s;
    b.nbk |= (u64)(-(i64)((code >> 1) & 1)) & s;
    b.rqk |= (u64)(-(i64)((code >> 2) & 1)) & s;
    b.black |= (u64)(-(i64)color) & s;
}

PC_HD void clear_squares(Board& b, u64 squares) {
    u64 keep = ~squares;
    b.pbq &= keep;
    b.nbk &= keep;
    b.rqk &= keep;
    b.black &= keep;
}

// Plays a legal move for side Us, given as from, to and flag (a Move's fields). The en passant
// file is set after every double push (whether or not a capture is possible; move generation checks
// for capturers). Mover: the moving piece's code when the caller knows it at compile time (the
// host's leaf parent for pawn moves), 0: read from the board.
template <int Us, int Mover = 0>
PC_HD void make_move(Board& b, int from, int to, int flag, const CastleInfo& ci) {
    u8 rights = (u8)((b.state & 15) & ci.keep[from] & ci.keep[to]);
    int ep = 0;
    if (flag <= MF_DOUBLE) {
        // A plain move or double push (most moves): a captured piece leaves `to` on every board, and
        // the mover's code bits go from `from` to `to` (1-2 % less leaf time on an H200, NOTES.md session 7).
        const u64 bf = bit(from), bt = bit(to), mv = bf | bt;
        if (PC_HOST_CODE) {
            // Host builds: both squares cleared, then the mover's code bits set on `to`. The code is
            // read once for all the targets of one piece (GCC hoists it out of the sink's loop) or is
            // Mover: 1-3 % fewer instructions (NOTES.md session 13). The GPU keeps the form below.
            const u64 c = Mover ? (u64)Mover : (u64)piece_code(b, from);
            b.pbq = (b.pbq & ~mv) | (bt & (0 - (c & 1)));
            b.nbk = (b.nbk & ~mv) | (bt & (0 - ((c >> 1) & 1)));
            b.rqk = (b.rqk & ~mv) | (bt & (0 - ((c >> 2) & 1)));
        } else {
            b.pbq = (b.pbq & ~bt) ^ ((b.pbq & bf) ? mv : 0);
            b.nbk = (b.nbk & ~bt) ^ ((b.nbk & bf) ? mv : 0);
            b.rqk = (b.rqk & ~bt) ^ ((b.rqk & bf) ? mv : 0);
        }
        b.black = Us == BLACK ? (b.black ^ bf) | bt : b.black & ~bt;
        if (flag == MF_DOUBLE) ep = (to & 7) + 1;
    } else if (flag == MF_CASTLE) {
        int side = to > from ? 0 : 1;
        const CastleSide& cs = ci.side[Us][side];
        clear_squares(b, bit(from) | bit(to));
        put_piece(b, KING, Us, cs.king_to);
        put_piece(b, ROOK, Us, cs.rook_to);
    } else {  // en passant or a promotion
        int code = flag >= MF_PROMO_N ? flag - 2 : PAWN;
        u64 gone = bit(from) | bit(to);
        if (flag == MF_EP) gone |= bit(to ^ 8);  // the captured pawn stands behind the target square
        clear_squares(b, gone);
        put_piece(b, code, Us, to);
    }
    b.state = (u8)(rights | (ep << 4));
}

// The same with the move packed (Move). The host's leaf parent calls the form above with the
// generator's squares: GCC does not fold a packing and unpacking away (1-5 % more instructions,
// NOTES.md session 13).
template <int Us>
PC_HD void make_move(Board& b, Move m, const CastleInfo& ci) {
    make_move<Us>(b, mv_from(m), mv_to(m), mv_flag(m), ci);
}
