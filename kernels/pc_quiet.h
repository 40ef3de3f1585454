// Quiet moves: bulk counting two plies at once without making most of the last-but-one ply's moves.
//
// The fused leaf counts, for a child position c (Them to move), Us's legal moves after each of
// Them's moves. count_moves<Us> reads the board only through: the occupancy along our sliders'
// rays, in front of and beside our pawns, on the castling squares; the checks and pins on our king;
// which squares next to our king, and on its castling paths, Them attacks; and the en passant file.
// A move of Them that is not a capture, a castling, en passant or a promotion, and that leaves from
// and lands on none of the squares that can change those, leaves Us with exactly the moves Us has
// in c itself with Them passing (the null move, en passant cleared). Such a move is "quiet": its
// child's count is that one base count, with no make and no count. The squares (`sensitive`, for
// any mover):
//   - our pieces (a capture);
//   - our sliders' target squares (a ray gets longer or shorter only on its attack set; a pinned
//     slider's count changes only on its pin line);
//   - our pawns' push squares (one and two steps) and capture squares;
//   - our pins' lines, pinner included (a piece landing there, or the pinner leaving, ends the pin);
//   - a Them piece whose leaving would pin one of ours: it stands between our king and a Them
//     slider of the line's kind with exactly one piece of ours (one whose leaving would check is
//     on the rays from D below);
//   - for each square d of D (the squares next to our king that we do not occupy, and the king
//     paths of castlings we still have the right to): the squares next to d, and the squares a
//     rook (a bishop) on d attacks, occupancy without our king, when Them has a rook or queen (a
//     bishop or queen): Them's attack on d changes only if a slider's segment to d passes the
//     move's from or to square, or the mover attacks d from one of them, and by symmetry both
//     squares are then on such a slider's rays from d (a pawn or king attacks only from next to d).
//     This covers the squares next to our king too (a piece leaving or reaching one of D comes from
//     or goes to a square next to it, on its rays or a knight's move away), and the squares that
//     castling needs empty (on or next to the king's path) or free of an x-ray (pc_board.h: the
//     a-file square beside a b-file rook, which that rook attacks).
// Besides, for a mover that attacks along ranks and files (`orth`; diagonals: `diag`): our king's
// lines of that kind up to and including the second piece on each (it may check, or pin the first
// piece); for a knight (`knight`): the squares a knight on D or on our king's square attacks.
// A double push is quiet when, besides, the square it passes is not sensitive (no pawn of ours can
// then take en passant).
// Derivation and the measured share of quiet moves: NOTES.md, sessions 8 and 9. The emulated GPU
// driver's counts against the CPU perft (which never uses this) on random walks are its test.
#pragma once
#include "pc_movegen.h"

struct QuietInfo {
    u64 sensitive;   // a Them move from or to one of these squares may change Us's count
    u64 knight;      // the same for a knight move (sensitive included)
    u64 orth, diag;  // the same for a mover that attacks along ranks and files / diagonals
    u32 base;        // Us's legal moves in the position itself, Them passing (en passant cleared)
};

// Counts Us's moves, collects our sliders' target squares and our pins' lines.
struct QuietBaseSink : CountSink {
    u64 rays = 0, pin_lines = 0;
    PC_HD void slider(int, u64 to) {
        n += popcnt(to);
        rays |= to;
    }
    PC_HD void pins(u64 p) { pin_lines = p; }
};

// The squares of Them's pieces whose leaving would pin one of ours: each stands between our king
// (ksq) and a Them slider of the line's kind (`sliders`) with exactly one piece of ours (lines2:
// ksq's rays of that kind to the second piece). A Them piece that alone blocks such a line (a
// discovered check) needs no entry: the square next to our king on that line is in D, so the
// piece's square is on a rook's or bishop's ray from D, or next to it.
template <bool Orth>
PC_HD u64 pin_openers(int ksq, u64 occ, u64 them, u64 sliders, u64 lines2) {
    u64 r = 0;
    const u64 third = Orth ? rook_att(ksq, occ & ~lines2) : bishop_att(ksq, occ & ~lines2);
    for (u64 p = third & sliders & ~lines2; p;) {
        const u64 b = between_bb(ksq, pop_lsb(p)) & occ, bt = b & them;  // two pieces
        if (bt && !more_than_one(bt)) r |= bt;
    }
    return r;
}

// c: Them (Us ^ 1) to move.
template <int Us>
PC_HD void quiet_info(const Board& c, const CastleInfo& ci, QuietInfo& q) {
    Board nul = c;
    nul.state &= 15;  // Them's en passant file says nothing about ours
    QuietBaseSink base;
    generate_legal<Us>(nul, ci, base);
    q.base = base.n;
    const u64 occ = occupied(c);
    const u64 us = Us == WHITE ? occ & ~c.black : occ & c.black, them = occ ^ us;
    const u64 t_orth = orth_of(c) & them, t_diag = diag_of(c) & them;
    const int ksq = lsb(kings_of(c) & us);
    const u64 pw = pawns_of(c) & us, one = shift_up<Us>(pw);
    u64 s = us | base.rays | one | shift_up<Us>(one & (Us == WHITE ? PC_RANK_3 : PC_RANK_6)) | shift_up_a<Us>(pw) |
            shift_up_h<Us>(pw) | base.pin_lines;
    q.orth = q.diag = 0;
    if (t_orth) {
        const u64 r1 = rook_att(ksq, occ);
        q.orth = r1 | rook_att(ksq, occ & ~r1);
        s |= pin_openers<true>(ksq, occ, them, t_orth, q.orth);
    }
    if (t_diag) {
        const u64 b1 = bishop_att(ksq, occ);
        q.diag = b1 | bishop_att(ksq, occ & ~b1);
        s |= pin_openers<false>(ksq, occ, them, t_diag, q.diag);
    }
    u64 d = king_att(ksq) & ~us;
    for (int side = 0; side < 2; ++side)
        if (c.state & castle_bit(Us, side)) d |= ci.side[Us][side].king_path;
    const u64 occ_nk = occ ^ bit(ksq);
    u64 k = knight_att(ksq);
    for (u64 p = d; p;) {
        const int x = pop_lsb(p);
        s |= king_att(x);
        if (t_diag) s |= bishop_att(x, occ_nk);
        if (t_orth) s |= rook_att(x, occ_nk);
        k |= knight_att(x);
    }
    q.sensitive = s;
    q.knight = s | k;
    q.orth |= s;
    q.diag |= s;
}

// Them's moves in c, the rule above applied to whole target sets: the quiet ones are only counted,
// the others written to `out` (PC_MOVES_BOUND entries: room for any board's moves).
struct QuietListSink : ListSink {
    const QuietInfo& q;
    u64 knights, orth, diag;  // Them's knights and sliders
    u32 quiet = 0;
    PC_HD QuietListSink(Move* o, const QuietInfo& info, u64 their_knights, u64 their_orth, u64 their_diag)
        : ListSink(o), q(info), knights(their_knights), orth(their_orth), diag(their_diag) {}
    PC_HD void targets(int from, u64 to, u64 s) {
        if (!(s & bit(from))) {
            quiet += popcnt(to & ~s);
            to &= s;
        }
        ListSink::piece(from, to);
    }
    PC_HD void piece(int from, u64 to) { targets(from, to, (knights & bit(from)) ? q.knight : q.sensitive); }
    PC_HD void slider(int from, u64 to) {
        const u64 f = bit(from);
        targets(from, to, (orth & f ? q.orth : 0) | (diag & f ? q.diag : 0));
    }
    // A pawn move to t comes from t - delta (t - delta / 2: the square a double push passes).
    PC_HD static u64 from_shift(u64 s, int delta) { return delta > 0 ? s << delta : s >> -delta; }
    PC_HD void pawns(u64 to, int delta, int flag) {
        u64 s = q.sensitive | from_shift(q.sensitive, delta);
        if (flag == MF_DOUBLE) s |= from_shift(q.sensitive, delta / 2);
        quiet += popcnt(to & ~s);
        ListSink::pawns(to & s, delta, flag);
    }
};

// The moves of a child c (Them to move) that are not quiet, written to list (PC_MOVES_BOUND entries);
// returns how many, and adds the quiet ones' counts (Us's base count each) to `quiet_nodes`.
template <int Us>
PC_HD int generate_not_quiet(const Board& c, const CastleInfo& ci, Move* list, u64& quiet_nodes) {
    QuietInfo q;
    quiet_info<Us>(c, ci, q);
    const u64 occ = occupied(c);
    const u64 them = Us == WHITE ? c.black : occ & ~c.black;
    QuietListSink sink(list, q, knights_of(c) & them, orth_of(c) & them, diag_of(c) & them);
    generate_legal<Us ^ 1>(c, ci, sink);
    quiet_nodes += (u64)q.base * sink.quiet;
    return sink.n;
}
