// Quiet moves: bulk counting two plies at once without making most of the last-but-one ply's moves.
//
// The fused leaf counts, for a child position c (Them to move), Us's legal moves after each of
// Them's moves. count_moves<Us> reads the board only through: the occupancy along our sliders'
// rays, in front of and beside our pawns, on the castling squares; the first two pieces on each of
// our king's lines (checks and pins); which squares next to our king, and on its castling paths,
// Them attacks; and the en passant file. A move of Them that is not a capture, a castling, en
// passant or a promotion, and that leaves from and lands on none of the squares that can change
// those, leaves Us with exactly the moves Us has in c itself with Them passing (the null move, en
// passant cleared). Such a move is "quiet": its child's count is that one base count, with
// no make and no count. The squares (`sensitive`):
//   - our pieces (a capture);
//   - our sliders' target squares (a ray gets longer or shorter only on its attack set; a pinned
//     slider's count changes only on its pin line);
//   - our pawns' push squares (one and two steps) and capture squares;
//   - our king's lines up to and including the second piece on each (checks, pins);
//   - the castling squares that must be empty, and the back-rank x-ray squares (pc_board.h);
//   - every square a queen on a square of D would attack (occupancy without our king), D being the
//     squares next to our king that we do not occupy and the king paths of castlings we still have
//     the right to: a slider's attack on D changes only if its segment to D passes through the
//     move's from or to square, or the mover attacks D from one of them, and by symmetry both
//     squares are then on such a queen's rays (a pawn or king attacks only adjacent squares, which
//     are on them too);
//   - for a knight move only (`knight`): the squares a knight on D or on our king's square attacks.
// A double push is quiet when, besides, the square it passes is not sensitive (no pawn of ours can
// then take en passant).
// Derivation and the measured share of quiet moves: NOTES.md, session 8. The emulated GPU driver's
// counts against the CPU perft (which never uses this) on random walks are its test.
#pragma once
#include "pc_movegen.h"

struct QuietInfo {
    u64 sensitive;  // a Them move from or to one of these squares may change Us's count
    u64 knight;     // the same, for a knight move (sensitive included)
    u32 base;       // Us's legal moves in the position itself, Them passing (en passant cleared)
};

// Counts Us's moves and collects our sliders' target squares.
struct QuietBaseSink : CountSink {
    u64 rays = 0;
    PC_HD void slider(int, u64 to) {
        n += popcnt(to);
        rays |= to;
    }
};

// c: Them (Us ^ 1) to move.
template <int Us>
PC_HD void quiet_info(const Board& c, const CastleInfo& ci, QuietInfo& q) {
    Board nul = c;
    nul.state &= 15;  // Them's en passant file says nothing about ours
    QuietBaseSink base;
    generate_legal<Us>(nul, ci, base);
    q.base = base.n;
    const u64 occ = occupied(c);
    const u64 us = Us == WHITE ? occ & ~c.black : occ & c.black;
    const int ksq = lsb(kings_of(c) & us);
    const u64 pw = pawns_of(c) & us, one = shift_up<Us>(pw);
    u64 s = us | base.rays | one | shift_up<Us>(one & (Us == WHITE ? PC_RANK_3 : PC_RANK_6)) | shift_up_a<Us>(pw) |
            shift_up_h<Us>(pw);
    // Our king's lines: occupancy without the first piece on each gives the rays to the second.
    const u64 r1 = rook_att(ksq, occ), b1 = bishop_att(ksq, occ);
    s |= r1 | b1 | rook_att(ksq, occ & ~r1) | bishop_att(ksq, occ & ~b1);
    u64 d = king_att(ksq) & ~us;
    for (int side = 0; side < 2; ++side)
        if (c.state & castle_bit(Us, side)) {
            const CastleSide& cs = ci.side[Us][side];
            d |= cs.king_path;
            s |= cs.empty | cs.xray;
        }
    const u64 occ_nk = occ ^ bit(ksq);
    u64 k = knight_att(ksq);
    for (u64 p = d; p;) {
        const int x = pop_lsb(p);
        s |= bishop_att(x, occ_nk) | rook_att(x, occ_nk);
        k |= knight_att(x);
    }
    q.sensitive = s;
    q.knight = s | k;
}

// Them's moves in c, the rule above applied to whole target sets: the quiet ones are only counted,
// the others written to `out` (at least PC_MAX_MOVES entries).
struct QuietListSink : ListSink {
    u64 sens, sens_knight, knights;  // knights: Them's
    u32 quiet = 0;
    PC_HD QuietListSink(Move* o, const QuietInfo& q, u64 their_knights)
        : ListSink(o), sens(q.sensitive), sens_knight(q.knight), knights(their_knights) {}
    PC_HD void targets(int from, u64 to, u64 s) {
        if (!(s & bit(from))) {
            quiet += popcnt(to & ~s);
            to &= s;
        }
        ListSink::piece(from, to);
    }
    PC_HD void piece(int from, u64 to) { targets(from, to, (knights & bit(from)) ? sens_knight : sens); }
    PC_HD void slider(int from, u64 to) { targets(from, to, sens); }
    // A pawn move to t comes from t - delta (t - delta / 2: the square a double push passes).
    PC_HD static u64 from_shift(u64 s, int delta) { return delta > 0 ? s << delta : s >> -delta; }
    PC_HD void pawns(u64 to, int delta, int flag) {
        u64 s = sens | from_shift(sens, delta);
        if (flag == MF_DOUBLE) s |= from_shift(sens, delta / 2);
        quiet += popcnt(to & ~s);
        ListSink::pawns(to & s, delta, flag);
    }
};

// The moves of a child c (Them to move) that are not quiet, written to list (PC_MAX_MOVES entries);
// returns how many, and adds the quiet ones' counts (Us's base count each) to `quiet_nodes`.
template <int Us>
PC_HD int generate_not_quiet(const Board& c, const CastleInfo& ci, Move* list, u64& quiet_nodes) {
    QuietInfo q;
    quiet_info<Us>(c, ci, q);
    const u64 occ = occupied(c);
    QuietListSink sink(list, q, knights_of(c) & (Us == WHITE ? c.black : occ & ~c.black));
    generate_legal<Us ^ 1>(c, ci, sink);
    quiet_nodes += (u64)q.base * sink.quiet;
    return sink.n;
}
