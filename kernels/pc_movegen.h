// Legal move generation, templated on the side to move and on a sink that either counts moves
// (bulk counting at the last ply) or writes them to a list. One legality rule site: checkers and
// pins are found once per position; king moves and castling test one set of attacked squares built
// with the king lifted; en passant replays the capture on the occupancy and asks whether the king is
// attacked.
#pragma once
#include "pc_board.h"

// PC_MAX_MOVES: the lists kept where a position of a game is met (at most 218 moves) and a longer one
// is handled (the GPU generate kernel writes each board's moves at offsets its count reserved; the
// host recursions' MoveList spills to the heap). PC_MOVES_BOUND: no board has more legal moves, so a
// list of that many never overflows whatever the parser accepted. Each of the 64 destination squares
// is reached by at most 16 moves (the nearest piece on each of its 8 rays, and 8 knights); the up to
// 24 promotion moves (8 pawns on the last rank but one, 3 targets each) count 3 more each, and there
// are 2 castles: 64 x 16 + 24 x 3 + 2 = 1,098.
#define PC_MAX_MOVES 256
#define PC_MOVES_BOUND 1098

template <int Us> PC_HD u64 shift_up(u64 b) { return Us == WHITE ? b << 8 : b >> 8; }
// Towards the a-file / the h-file, one rank forward.
template <int Us> PC_HD u64 shift_up_a(u64 b) { return Us == WHITE ? (b & ~PC_FILE_A) << 7 : (b & ~PC_FILE_A) >> 9; }
template <int Us> PC_HD u64 shift_up_h(u64 b) { return Us == WHITE ? (b & ~PC_FILE_H) << 9 : (b & ~PC_FILE_H) >> 7; }

// A sink takes a piece's target squares (piece: king and knights; slider: bishops, rooks, queens),
// pawn targets by kind, and single moves (castling, en passant).

// Counts moves; promotions count four.
struct CountSink {
    u32 n = 0;
    PC_HD void piece(int, u64 to) { n += popcnt(to); }
    PC_HD void slider(int, u64 to) { n += popcnt(to); }
    PC_HD void pawns(u64 to, int, int) { n += popcnt(to); }
    PC_HD void promos(u64 to, int) { n += 4 * popcnt(to); }
    PC_HD void one(int, int, int) { n += 1; }
    PC_HD void pins(u64) {}
};

// Writes moves to an array. ListSink: the array has at least PC_MAX_MOVES entries. CappedSink: it
// writes at most `cap` moves and counts all of them: the GPU generate kernel writes into the slots
// that counting reserved, so a generator that disagrees with its count (a move generator bug) must
// not write over its neighbours' moves; the kernel compares `n` with `cap` and reports it.
struct Unbounded {
    PC_HD bool room(int) const { return true; }
};
struct Bounded {
    int cap;
    PC_HD bool room(int n) const { return n < cap; }
};
template <class Room>
struct MoveListSink : Room {
    Move* out;
    int n = 0;
    PC_HD explicit MoveListSink(Move* o) : out(o) {}
    PC_HD MoveListSink(Move* o, int cap) : Room{cap}, out(o) {}
    PC_HD void put(Move m) {
        if (this->room(n)) out[n++] = m;
        else ++n;
    }
    PC_HD void piece(int from, u64 to) {
        while (to) put(make_mv(from, pop_lsb(to), MF_NORMAL));
    }
    PC_HD void slider(int from, u64 to) { piece(from, to); }
    // `delta` is to - from for every target of this set.
    PC_HD void pawns(u64 to, int delta, int flag) {
        while (to) {
            int t = pop_lsb(to);
            put(make_mv(t - delta, t, flag));
        }
    }
    PC_HD void promos(u64 to, int delta) {
        while (to) {
            int t = pop_lsb(to);
            for (int f = MF_PROMO_Q; f >= MF_PROMO_N; --f) put(make_mv(t - delta, t, f));
        }
    }
    PC_HD void one(int from, int to, int flag) { put(make_mv(from, to, flag)); }
    PC_HD void pins(u64) {}
};
typedef MoveListSink<Unbounded> ListSink;
typedef MoveListSink<Bounded> CappedSink;

// The moves of every piece but the king (generate_legal), given the squares that answer a check
// (checkmask, all squares when not in check) and the pin rays (pin_hv, pin_d).
template <int Us, class Sink>
PC_HD void generate_others(const Board& b, Sink& sink, u64 occ, u64 us, u64 them, u64 pawns, u64 knights, u64 diag,
                           u64 orth, int ksq, u64 checkmask, u64 pin_hv, u64 pin_d) {
    constexpr int Them = Us ^ 1;
    constexpr int Up = Us == WHITE ? 8 : -8;
    const u64 target = ~us & checkmask;
    const u64 pinned = pin_hv | pin_d;

    for (u64 p = knights & us & ~pinned; p;) {
        int s = pop_lsb(p);
        sink.piece(s, knight_att(s) & target);
    }
    // A piece pinned along a line keeps to that line: a rank/file pin allows only orthogonal moves
    // inside pin_hv, a diagonal pin only diagonal moves inside pin_d.
    for (u64 p = diag & us & ~pinned; p;) {
        int s = pop_lsb(p);
        sink.slider(s, bishop_att(s, occ) & target);
    }
    for (u64 p = diag & us & pin_d; p;) {
        int s = pop_lsb(p);
        sink.slider(s, bishop_att(s, occ) & target & pin_d);
    }
    for (u64 p = orth & us & ~pinned; p;) {
        int s = pop_lsb(p);
        sink.slider(s, rook_att(s, occ) & target);
    }
    for (u64 p = orth & us & pin_hv; p;) {
        int s = pop_lsb(p);
        sink.slider(s, rook_att(s, occ) & target & pin_hv);
    }

    // Pawns. Pushes: not by diagonally pinned pawns; a file-pinned pawn stays inside pin_hv.
    const u64 our_pawns = pawns & us;
    const u64 promo_rank = Us == WHITE ? PC_RANK_8 : PC_RANK_1;
    const u64 empty = ~occ;
    {
        const u64 pp = our_pawns & ~pin_d;
        u64 one = (shift_up<Us>(pp & ~pin_hv) | (shift_up<Us>(pp & pin_hv) & pin_hv)) & empty;
        u64 two = shift_up<Us>(one & (Us == WHITE ? PC_RANK_3 : PC_RANK_6)) & empty & checkmask;
        one &= checkmask;
        sink.pawns(one & ~promo_rank, Up, MF_NORMAL);
        sink.promos(one & promo_rank, Up);
        sink.pawns(two, 2 * Up, MF_DOUBLE);
    }
    // Captures: not by rank/file-pinned pawns; a diagonally pinned pawn captures inside pin_d.
    {
        const u64 pc = our_pawns & ~pin_hv;
        const u64 free = pc & ~pin_d, pin = pc & pin_d;
        const u64 tmask = them & checkmask;
        u64 ca = (shift_up_a<Us>(free) | (shift_up_a<Us>(pin) & pin_d)) & tmask;
        u64 ch = (shift_up_h<Us>(free) | (shift_up_h<Us>(pin) & pin_d)) & tmask;
        constexpr int DA = Up - 1, DH = Up + 1;
        sink.pawns(ca & ~promo_rank, DA, MF_NORMAL);
        sink.promos(ca & promo_rank, DA);
        sink.pawns(ch & ~promo_rank, DH, MF_NORMAL);
        sink.promos(ch & promo_rank, DH);
    }
    // En passant: replay the capture on the occupancy and ask whether our king is then attacked.
    // This one test covers every trap: the rank pin through both pawns, a discovered check, and
    // capturing (or not) the pawn that gives check.
    const int epf = ep_file(b);
    if (epf >= 0) {
        const int ep = (Us == WHITE ? 40 : 16) + epf;
        const int victim = ep - Up;
        if (pawns & them & bit(victim)) {
            for (u64 cand = pawn_att(Them, ep) & our_pawns; cand;) {
                int s = pop_lsb(cand);
                u64 occ2 = occ ^ bit(s) ^ bit(ep) ^ bit(victim);
                if (bishop_att(ksq, occ2) & diag & them) continue;
                if (rook_att(ksq, occ2) & orth & them) continue;
                if (knight_att(ksq) & knights & them) continue;
                if (pawn_att(Us, ksq) & pawns & them & ~bit(victim)) continue;
                sink.one(s, ep, MF_EP);
            }
        }
    }
}

// Castling = false leaves out every castling test, for a caller that knows the side to move has no
// castling right (the host's leaf parent, perft_core/src/host.h); the GPU kernels use the default.
template <int Us, class Sink, bool Castling = true>
PC_HD void generate_legal(const Board& b, const CastleInfo& ci, Sink& sink) {
    constexpr int Them = Us ^ 1;
    const u64 occ = occupied(b);
    const u64 us = Us == WHITE ? occ & ~b.black : occ & b.black;
    const u64 them = occ ^ us;
    const u64 pawns = pawns_of(b), knights = knights_of(b);
    const u64 diag = diag_of(b), orth = orth_of(b);
    const int ksq = lsb(kings_of(b) & us);

    // Checkers and pins: a slider aligned with our king checks if nothing stands between, and pins
    // our piece if exactly that one piece stands between. One loop over both kinds of aligned slider
    // (a warp runs fewer iterations than with a loop per kind: NOTES.md session 7).
    u64 checkers = (knight_att(ksq) & knights & them) | (pawn_att(Us, ksq) & pawns & them);
    u64 pin_hv = 0, pin_d = 0;
    const u64 orth_lines = rook_empty(ksq);
    for (u64 sn = ((orth_lines & orth) | (bishop_empty(ksq) & diag)) & them; sn;) {
        int s = pop_lsb(sn);
        u64 ray = between_bb(ksq, s), blockers = ray & occ;
        if (!blockers) checkers |= bit(s);
        else if (!more_than_one(blockers) && (blockers & us)) {
            if (orth_lines & bit(s)) pin_hv |= ray | bit(s);
            else pin_d |= ray | bit(s);
        }
    }

    sink.pins(pin_hv | pin_d);

    // Castling needs: the right, no check, and the squares between king, rook and their
    // destinations empty; the attacks on the king's path are tested below.
    bool castle[2] = {false, false};
    if (Castling && !checkers) {
        PC_HOST_UNROLL(2)
        for (int side = 0; side < 2; ++side)
            castle[side] = (b.state & castle_bit(Us, side)) && !(occ & ci.side[Us][side].empty);
    }

    // Squares they attack with our king lifted (so a slider's ray through the king's square counts):
    // the king may not move there, and castling may not cross them. One attack set, with no
    // per-square branches, serves both; only enemy pieces whose empty-board attacks reach a square
    // next to our king, or a square the king crosses when castling, take part (the zones).
    u64 zn = zone_knight(ksq), zd = zone_diag(ksq), zo = zone_orth(ksq);
    if (Castling) {
        PC_HOST_UNROLL(2)
        for (int side = 0; side < 2; ++side)
            if (castle[side]) {
                const CastleSide& cs = ci.side[Us][side];
                zn |= cs.zone_knight;
                zd |= cs.zone_diag;
                zo |= cs.zone_orth;
            }
    }
    const u64 occ_nk = occ ^ bit(ksq);
    const u64 their_pawns = pawns & them;
    u64 danger = shift_up_a<Them>(their_pawns) | shift_up_h<Them>(their_pawns) | king_att(lsb(kings_of(b) & them));
    for (u64 p = knights & them & zn; p;) danger |= knight_att(pop_lsb(p));
    for (u64 p = diag & them & zd; p;) danger |= bishop_att(pop_lsb(p), occ_nk);
    for (u64 p = orth & them & zo; p;) danger |= rook_att(pop_lsb(p), occ_nk);
    sink.piece(ksq, king_att(ksq) & ~us & ~danger);
    if (more_than_one(checkers)) return;  // double check: only the king may move

    // Lifting the king reveals no attack on the path when it is not in check; lifting the rook
    // matters only when an enemy rook or queen stands beyond it on the back rank (cs.xray; Chess960:
    // an a-side rook on the b-file shields c1 from a1), and then each square is tested with both
    // pieces lifted.
    if (Castling) {
        PC_HOST_UNROLL(2)
        for (int side = 0; side < 2; ++side) {
            if (!castle[side]) continue;
            const CastleSide& cs = ci.side[Us][side];
            bool safe = !(cs.king_path & danger);
            if (safe && (cs.xray & orth & them)) {
                const u64 occ_c = occ ^ bit(ksq) ^ bit(cs.rook);
                for (u64 path = cs.king_path; path && safe;) safe = !attacked_by(b, pop_lsb(path), Them, occ_c);
            }
            if (safe) sink.one(ksq, cs.rook, MF_CASTLE);
        }
    }

    // Host builds give the common case, no check and no pin, a copy of its own in which the masks are
    // constants and their tests fold away (7-10 % fewer instructions, NOTES.md session 11); the GPU
    // keeps one copy (its code is unchanged: a warp would run both copies).
    const u64 checkmask = checkers ? between_bb(ksq, lsb(checkers)) | checkers : ~0ULL;
    if (PC_HOST_CODE && !(checkers | pin_hv | pin_d))
        generate_others<Us>(b, sink, occ, us, them, pawns, knights, diag, orth, ksq, ~0ULL, 0, 0);
    else
        generate_others<Us>(b, sink, occ, us, them, pawns, knights, diag, orth, ksq, checkmask, pin_hv, pin_d);
}

template <int Us>
PC_HD u32 count_moves(const Board& b, const CastleInfo& ci) {
    CountSink s;
    generate_legal<Us>(b, ci, s);
    return s.n;
}

template <int Us>
PC_HD int generate_moves(const Board& b, const CastleInfo& ci, Move* out) {
    ListSink s(out);
    generate_legal<Us>(b, ci, s);
    return s.n;
}
