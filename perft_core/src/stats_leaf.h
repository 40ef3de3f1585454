// The CPU's statistics leaf: the classification of kernels/pc_stats.h (StatsSink: its comment gives
// the rules), in a host-only form that the GPU kernels never see, so their machine code stays the
// one a GPU has checked. The GPU form stays in pc_stats.h (and in the emulated device's batch.cpp);
// ci/stats_device_form.py compares the two counter by counter.
//
// What this form does differently, for less time a leaf move (issue 36; each step measured against
// the one before, alternated in one sitting, with ci/bench_stats.py):
//   - hot and cold halves: LeafSink, the generator's sink, keeps its own nodes and captures and the
//     sets the per-piece tests read, and its address never escapes, so they stay in registers;
//     LeafCold holds what the rare paths (checks, promotions, castling, en passant) need, and they
//     add straight into the caller's counters (no 13-counter sum per leaf parent);
//   - LeafCold keeps a copy of the board: with a reference, the board the generator reads had its
//     address passed to the out-of-line paths, so it lived in memory and every store of the rare
//     paths could change it (5-10 % of the statistics' time);
//   - the sink is a template on whether any piece of ours is a discovery blocker or we have two
//     queens; most leaf parents have neither, and each piece's test is then a direct-check mask
//     alone;
//   - a checking plain move is counted as a check, without the move made, when a square next to
//     their king is proved safe for it after the move (LeafCold::escape); the mate test of the
//     rest answers a single check by a capture or a block (mated_fast) instead of generating all
//     the replies;
//   - escape is the call out of line and direct_only, its loop over a piece's checking targets,
//     is inlined into the sink (not the other way round): 1-1.5 % less time at startpos 7 and
//     Kiwipete 6 (session 30);
//   - a single direct check (plain move or promotion) is also proved no mate when a
//     piece of theirs that cannot be pinned takes the checker or steps between (answerable): at
//     Kiwipete 6, 73 M of 91 M direct checks, and the promotions' checks no longer all go to the
//     full test (25.5 M full mate tests -> 3.7 M); startpos 7 3.54 -> 3.45 s, Kiwipete 6 7.21 ->
//     7.09 s (session 30);
//   - the squares their king may flee to are found once a leaf parent, at its first check
//     (LeafCold::zone: one attack set of our pieces near their king), not square by square in each
//     escape; and a direct check is tried for a flight square before a capture or block when their
//     king has one (most checks in open positions are answered by a king step: 99 % at CPW 3 and
//     CPW 6): CPW 3 13 % fewer instructions and 21 % fewer branch mispredictions (session 37,
//     NOTES.md, where the other positions' figures are).
//   - and that attack set is made once a leaf grandparent for the children whose last move keeps
//     it a superset of theirs (LeafParentStatsSink): 0.2-5.2 % fewer instructions on the seven
//     positions of NOTES.md session 38;
//   - promotions are counted by popcounts in LeafSink, and only a target that may give check goes
//     out of line (CPW 5 4.1 % fewer instructions; the other six between 1.3 % fewer and 0.2 %
//     more; NOTES.md session 42).
#pragma once
#include "pc_stats.h"

namespace pc_host {

#define PC_LEAF_COLD __attribute__((noinline))
#define PC_LEAF_INLINE inline __attribute__((always_inline))

// Has the side to move in c (Side, in check) no legal move? As mated() (pc_stats.h), with the full
// generation after the king's steps replaced by the only other replies to a single check: the
// checker captured, or a square between it and the king blocked, by a piece that is not pinned (a
// pinned piece can do neither: it keeps to its pin ray, which meets the checking ray only at the
// king). En passant, the one reply that removes a piece from another square, takes the full
// generation whenever the child has an en passant file.

template <int Side>
PC_LEAF_COLD bool mated_fast(const Board& c, const CastleInfo& ci) {
    const u64 occ = occupied(c);
    const u64 own = Side == WHITE ? occ & ~c.black : c.black, opp = occ ^ own;
    const int ksq = lsb(kings_of(c) & own);
    const u64 occ_nk = occ ^ bit(ksq);
    for (u64 t = king_att(ksq) & ~own; t;)
        if (!attacked_by(c, pop_lsb(t), Side ^ 1, occ_nk)) return false;
    const u64 pawns = pawns_of(c), knights = knights_of(c), diag = diag_of(c), orth = orth_of(c);
    const u64 checkers = ((knight_att(ksq) & knights) | (pawn_att(Side, ksq) & pawns) | (bishop_att(ksq, occ) & diag) |
                          (rook_att(ksq, occ) & orth)) & opp;
    if (more_than_one(checkers)) return true;  // only the king may move
    if (ep_file(c) >= 0) return count_moves<Side>(c, ci) == 0;
    u64 pinned = 0;
    for (u64 p = ((rook_empty(ksq) & orth) | (bishop_empty(ksq) & diag)) & opp; p;) {
        const u64 in = between_bb(ksq, pop_lsb(p)) & occ;
        if (!more_than_one(in)) pinned |= in & own;
    }
    const u64 movers = own & ~pinned & ~kings_of(c);
    const int cs = lsb(checkers);
    if (((knight_att(cs) & knights) | (pawn_att(Side ^ 1, cs) & pawns) | (bishop_att(cs, occ) & diag) |
         (rook_att(cs, occ) & orth)) & movers)
        return false;
    const u64 block = between_bb(ksq, cs), our_pawns = pawns & movers;
    const u64 push_to = Side == WHITE ? PC_RANK_3 << 8 : PC_RANK_6 >> 8;  // a double push's target rank
    if (shift_up<Side ^ 1>(block) & our_pawns) return false;
    if (shift_up<Side ^ 1>(shift_up<Side ^ 1>(block & push_to) & ~occ) & our_pawns) return false;
    for (u64 t = block; t;) {
        const int sq = pop_lsb(t);
        if (((knight_att(sq) & knights) | (bishop_att(sq, occ) & diag) | (rook_att(sq, occ) & orth)) & movers)
            return false;
    }
    return true;
}

// Our attacks near their king, with it lifted (LeafCold::zone() reads them). Only our pieces whose
// empty-board attacks reach a square next to it take part (the generator's zones,
// kernels/pc_movegen.h).
struct KingZone {
    u64 near;            // squares next to their king that none of our pieces attacks
    u64 seen_d, seen_o;  // what our diagonal / orthogonal sliders near it attack
};

// The KingZone of b for their king on ksq, Us's pieces `mine`.
template <int Us>
PC_HD KingZone king_zone(const Board& b, int ksq, u64 mine) {
    const u64 occk = occupied(b) ^ bit(ksq);
    const u64 pawns = pawns_of(b) & mine;
    u64 att = shift_up_a<Us>(pawns) | shift_up_h<Us>(pawns) | king_att(lsb(kings_of(b) & mine));
    for (u64 p = knights_of(b) & mine & zone_knight(ksq); p;) att |= knight_att(pop_lsb(p));
    KingZone z;
    z.seen_d = z.seen_o = 0;
    for (u64 p = diag_of(b) & mine & zone_diag(ksq); p;) z.seen_d |= bishop_att(pop_lsb(p), occk);
    for (u64 p = orth_of(b) & mine & zone_orth(ksq); p;) z.seen_o |= rook_att(pop_lsb(p), occk);
    z.near = king_att(ksq) & ~(att | z.seen_d | z.seen_o);
    return z;
}

// What the rare paths need, and the counters they update (the caller's).
template <int Us>
struct LeafCold {
    static constexpr int Them = Us ^ 1;
    static constexpr int Up = Us == WHITE ? 8 : -8;
    const Board b;  // a copy (see the top of this file)
    const CastleInfo& ci;
    StatCounts& s;
    u64 occ, them, blockers;
    u64 lines;          // squares between their king and our sliders that see it on an empty board
    int ksq;            // their king
    u64 chk[ROOK + 1];  // check squares by piece code, PAWN..ROOK (a queen's: BISHOP's and ROOK's)
    u64 keep[64];       // keep[sq] for sq in blockers: where that blocker still blocks
    bool zoned;         // free, seen_d and seen_o are set (zone(), at the first check that needs them)
    u64 free;           // squares next to their king, not theirs, that no piece of ours attacks
    u64 seen_d, seen_o; // squares our diagonal / orthogonal sliders near their king attack

    const KingZone* gz; // the leaf grandparent's, where it serves this board (LeafParentStatsSink), else null

    LeafCold(const Board& board, const CastleInfo& info, StatCounts& out, const KingZone* z)
        : b(board), ci(info), s(out), gz(z) {
        occ = occupied(b);
        them = Us == WHITE ? b.black : occ & ~b.black;
        const u64 us = occ ^ them;
        ksq = lsb(kings_of(b) & them);
        const u64 diag = bishop_att(ksq, occ), orth = rook_att(ksq, occ);
        chk[0] = 0;
        chk[PAWN] = pawn_att(Them, ksq);  // a pawn of ours there attacks their king
        chk[KNIGHT] = knight_att(ksq);
        chk[BISHOP] = diag;
        chk[ROOK] = orth;
        blockers = lines = 0;
        const u64 sliders = ((rook_empty(ksq) & orth_of(b)) | (bishop_empty(ksq) & diag_of(b))) & us;
        for (u64 p = sliders; p;) {
            const int sl = pop_lsb(p);
            const u64 seg = between_bb(ksq, sl), in = seg & occ;
            lines |= seg;
            if (in && !more_than_one(in) && (in & us)) {
                blockers |= in;
                keep[lsb(in)] = seg | bit(sl);
            }
        }
        zoned = false;
    }

    // Is their king sure to have a legal move after our plain move from -> to (a check)? It may step
    // to a square next to it, not theirs, that no piece of ours attacks with their king lifted:
    //   - not the moved piece, from `to` (with the child's occupancy);
    //   - not a slider of ours through `from`: when one of ours sees `from` (seen_d, seen_o), every
    //     square seen from `from` in the child is left out (a superset of what the move uncovers);
    //   - no other piece of ours: their attacks in the child are a subset of this position's (free,
    //     made by zone() on this board or taken from the leaf grandparent's, which holds a superset
    //     of them; both count the moved piece's attacks from `from`), as the child's occupancy
    //     differs only by `from` (the rule above) and `to` (one more blocker).
    // False: not proved; the check is then answered by answerable() or made and tested in full.
    // Code: the moved piece's code when the caller knows it (PAWN..QUEEN; direct_only), else 0
    // (plain(): read from the board); known, its attacks need no piece_code and no switch.
    // Needs zone() first.
    template <int Code = 0>
    PC_LEAF_COLD bool escape(int from, int to) {
        const u64 cocc = ((occ ^ bit(from)) | bit(to)) ^ bit(ksq);
        const int code = Code ? Code : piece_code(b, from);
        const u64 moved = code == PAWN   ? pawn_att(Us, to)
                          : code == KING ? king_att(to)
                          : code == KNIGHT ? knight_att(to)
                          : code == BISHOP ? bishop_att(to, cocc)
                          : code == ROOK   ? rook_att(to, cocc)
                                           : bishop_att(to, cocc) | rook_att(to, cocc);
        u64 cand = free & ~moved;
        if (!cand) return false;
        if ((seen_d >> from) & 1) cand &= ~bishop_att(from, cocc);
        if ((seen_o >> from) & 1) cand &= ~rook_att(from, cocc);
        return cand != 0;
    }

    // Sets free, seen_d and seen_o: from gz where the leaf grandparent's serve (our attacks there
    // are a superset of ours here, LeafParentStatsSink), else made on this board. A move from a
    // square that none of our sliders near their king sees (outside seen_d and seen_o) uncovers no
    // attack on a square next to it.
    PC_LEAF_COLD void zone() {
        zoned = true;
        const KingZone z = gz ? *gz : king_zone<Us>(b, ksq, occ & ~them);
        free = z.near & ~them;
        seen_d = z.seen_d;
        seen_o = z.seen_o;
    }

    // Can a piece of theirs other than the king take the checker on `to`, or step between it and
    // their king, after our move from -> to that gives the only check? Then the check is no mate.
    // A piece off every line between their king and our sliders (`lines`, on the empty board)
    // cannot be pinned in the child: the moved piece checks along its one line to their king, so
    // it pins nothing.
    PC_LEAF_INLINE bool answerable(int from, int to) const {
        const u64 takers = them & ~kings_of(b) & ~bit(to) & ~lines;
        if (!takers) return false;
        const u64 cocc = (occ ^ bit(from)) | bit(to);
        if (((knight_att(to) & knights_of(b)) | (pawn_att(Us, to) & pawns_of(b))) & takers) return true;
        const u64 d = diag_of(b) & takers, o = orth_of(b) & takers;  // a slider lookup only where one may see `to`
        if ((bishop_empty(to) & d) && (bishop_att(to, cocc) & d)) return true;
        if ((rook_empty(to) & o) && (rook_att(to, cocc) & o)) return true;
        const u64 gap = between_bb(ksq, to);  // empty: a contact check, or a knight's or pawn's
        return gap && blockable(gap, takers, cocc);
    }
    PC_LEAF_COLD bool blockable(u64 gap, u64 takers, u64 cocc) const {
        const u64 pawns = pawns_of(b) & takers;
        const u64 one = shift_up<Them>(pawns) & ~cocc;
        const u64 two = shift_up<Them>(one & (Them == WHITE ? PC_RANK_3 : PC_RANK_6)) & ~cocc;
        if ((one | two) & gap) return true;
        const u64 knights = knights_of(b) & takers, diag = diag_of(b) & takers, orth = orth_of(b) & takers;
        for (u64 t = gap; t;) {
            const int sq = pop_lsb(t);
            if ((knight_att(sq) & knights) | (bishop_att(sq, cocc) & diag) | (rook_att(sq, cocc) & orth)) return true;
        }
        return false;
    }

    // One checking move (from, to, flag) of kind `kind`: a mate when their side has no legal reply.
    PC_LEAF_COLD void checking(int from, int to, int flag, int kind) {
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        if (mated_fast<Them>(c, ci)) ++s.mates[kind];
        else ++s.checks[kind];
    }

    // Plain moves (flag MF_NORMAL or MF_DOUBLE) from `from` to the squares `to`, with `direct`
    // the targets that give direct check.
    PC_LEAF_COLD void plain(int from, u64 to, u64 direct, int flag) {
        const u64 disc = (blockers >> from) & 1 ? to & ~keep[from] : 0;
        for (u64 t = direct | disc; t;) {
            const int sq = pop_lsb(t);
            const u64 m = bit(sq);
            const int kind = (direct & m) ? ((disc & m) ? CHECK_DIRECT_DISCOVERED : CHECK_DIRECT)
                                          : CHECK_SINGLE_DISCOVERED;
            if (!zoned) zone();
            if (escape(from, sq)) ++s.checks[kind];
            else checking(from, sq, flag, kind);
        }
    }

    // The same where no piece of ours is a discovery blocker: every check is direct.
    // Code: the moving piece's code (PAWN..QUEEN).
    template <int Code>
    PC_LEAF_INLINE void direct_only(int from, u64 direct, int flag) {
        for (u64 t = direct; t;) direct_check<Code>(from, pop_lsb(t), flag);
    }

    // A move (from, to, flag) of a piece that is `Code` on `to`, giving the only check (a direct
    // one, nothing discovered): a mate only if their side can neither step away (escape, tried
    // first when their king has a square to flee to at all) nor take the checker or step between
    // (answerable), the rest made and tested in full.
    template <int Code>
    PC_LEAF_INLINE void direct_check(int from, int to, int flag) {
        if (!zoned) zone();
        if ((free && escape<Code>(from, to)) || answerable(from, to)) ++s.checks[CHECK_DIRECT];
        else checking(from, to, flag, CHECK_DIRECT);
    }

    // The checks of the four promotions from -> to (knight, bishop, rook, queen), a target that
    // LeafSink::promos found may give one (it counts the moves): each piece's check squares with
    // the pawn lifted, from one knight and two slider lookups for all four (one call a target, not
    // four: CPW 5, where a pawn promotes in most lines, 3 % less time, session 25).
    PC_LEAF_COLD void promos(int from, int to) {
        const u64 pocc = (occ ^ bit(from)) | bit(to);
        const bool disc = ((blockers >> from) & 1) && !((keep[from] >> to) & 1);
        const bool n = (knight_att(to) >> ksq) & 1, d = (bishop_att(to, pocc) >> ksq) & 1,
                   o = (rook_att(to, pocc) >> ksq) & 1;
        if (!disc) {  // a direct check is the only one: the tests without the move made
            if (n) direct_check<KNIGHT>(from, to, MF_PROMO_N);
            if (d) direct_check<BISHOP>(from, to, MF_PROMO_B);
            if (o) direct_check<ROOK>(from, to, MF_PROMO_R);
            if (d || o) direct_check<QUEEN>(from, to, MF_PROMO_Q);
            return;
        }
        const bool direct[4] = {n, d, o, d || o};  // KNIGHT..QUEEN
        for (int code = KNIGHT; code <= QUEEN; ++code) {
            const bool dir = direct[code - KNIGHT];
            if (dir || disc)
                checking(from, to, code + 2,
                         dir ? (disc ? CHECK_DIRECT_DISCOVERED : CHECK_DIRECT) : CHECK_SINGLE_DISCOVERED);
        }
    }

    // Castling and en passant (LeafSink::one counts them), made when a check is possible at all:
    // the moved piece (rook, capturing pawn) on a check square of its kind (the rook: seeing the
    // king in the child, not only on its rank or file: a king on the rook's file behind a pawn made
    // every castle in CPW 5, 4 % of its time, session 25), or a square left empty (the king's or
    // the rook's, the capturing or the captured pawn's) between their king and one of our sliders
    // (a discovery). Then the checkers are counted on the child. Inline: the test; out of line, the
    // make (castling is a move in every position that still has the right, too common for a call
    // each).
    PC_HD void one(int from, int to, int flag) {
        int dest = to;
        u64 left = bit(from) | bit(to);  // castling: king and rook squares
        bool direct;
        if (flag == MF_EP) {
            ++s.captures;
            ++s.en_passant;
            left = bit(from) | bit(to - Up);
            direct = (chk[PAWN] >> to) & 1;
        } else {  // MF_CASTLE, encoded king takes rook
            ++s.castles;
            const CastleSide& cs = ci.side[Us][to > from ? 0 : 1];
            dest = cs.rook_to;
            direct = ((rook_empty(ksq) >> dest) & 1) &&
                     ((rook_att(dest, (occ ^ left) | bit(dest) | bit(cs.king_to)) >> ksq) & 1);
        }
        if (direct || (left & lines)) made(from, to, flag, dest);
    }
    PC_LEAF_COLD void made(int from, int to, int flag, int dest) {
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        const u64 cocc = occupied(c);
        const u64 mine = Us == WHITE ? cocc & ~c.black : c.black;
        const u64 checkers = ((pawn_att(Them, ksq) & pawns_of(c)) | (knight_att(ksq) & knights_of(c)) |
                              (bishop_att(ksq, cocc) & diag_of(c)) | (rook_att(ksq, cocc) & orth_of(c))) & mine;
        if (!checkers) return;
        const int kind = check_kind(checkers, dest);
        if (mated_fast<Them>(c, ci)) ++s.mates[kind];
        else ++s.checks[kind];
    }
};

// The sink of generate_legal<Us> at a leaf parent: counts each target set by popcounts and hands
// the candidates for a check and the rare moves to LeafCold. General = false where no piece of ours
// is a discovery blocker and we have at most one queen (most leaf parents): then no piece's test
// looks for a blocker, every check is direct, and a slider's check squares are its queen's when it
// stands on `queen`, else its bishop's or rook's by one test (two tests a call, as General does,
// were 6 % of Kiwipete's instructions), asked only when its targets meet the queen's check squares.
template <int Us, bool General>
struct LeafSink {
    static constexpr int Up = Us == WHITE ? 8 : -8;
    LeafCold<Us>& cold;
    const u64 them, blockers, diag, orth, chk_p, chk_n, chk_b, chk_r, chk_q;
    const int own_king;   // our king: piece() gets it and knights
    const int queen;      // General = false: our queen's square, 64 if none
    u64 nodes, captures;  // of plain moves (the rare paths count theirs in the caller's counters)

    LeafSink(LeafCold<Us>& c, int king, int q)
        : cold(c), them(c.them), blockers(c.blockers), diag(diag_of(c.b)), orth(orth_of(c.b)), chk_p(c.chk[PAWN]),
          chk_n(c.chk[KNIGHT]), chk_b(c.chk[BISHOP]), chk_r(c.chk[ROOK]), chk_q(chk_b | chk_r), own_king(king),
          queen(q), nodes(0), captures(0) {}

    // The moves from `from` to `to`, of which `direct` give direct check, to LeafCold when one may
    // give check. Code: the moving piece's code for direct_only (General: unused, plain() reads it
    // from the board, as a move there may be a king's or only a discovery).
    template <int Code>
    PC_HD void checks(int from, u64 to, u64 direct, int flag) {
        if (!General) {
            if (direct) cold.template direct_only<Code>(from, direct, flag);
        } else if (direct || ((blockers >> from) & 1)) {
            cold.plain(from, to, direct, flag);
        }
    }

    // Knights and the king (the king gives no direct check).
    PC_HD void piece(int from, u64 to) {
        nodes += popcnt(to);
        captures += popcnt(to & them);
        const u64 direct = from == own_king ? 0 : to & chk_n;
        checks<KNIGHT>(from, to, direct, MF_NORMAL);
    }
    // Bishops and queens on the diagonals, rooks and queens on ranks and files.
    PC_HD void slider(int from, u64 to) {
        nodes += popcnt(to);
        captures += popcnt(to & them);
        if (General) {
            checks<QUEEN>(from, to, to & (((diag >> from) & 1 ? chk_b : 0) | ((orth >> from) & 1 ? chk_r : 0)), MF_NORMAL);
        } else if (to & chk_q) {  // a queen's check squares hold every slider's
            if (from == queen) cold.template direct_only<QUEEN>(from, to & chk_q, MF_NORMAL);
            else if ((diag >> from) & 1) {
                if (to & chk_b) cold.template direct_only<BISHOP>(from, to & chk_b, MF_NORMAL);
            } else if (to & chk_r) cold.template direct_only<ROOK>(from, to & chk_r, MF_NORMAL);
        }
    }

    // Pawn targets; `delta` = to - from for each. A delta of Up or 2 * Up is a push, else a capture.
    PC_HD static u64 forward(u64 set, int delta) { return delta > 0 ? set << delta : set >> -delta; }
    PC_HD void pawns(u64 to, int delta, int flag) {
        const int n = popcnt(to);
        nodes += n;
        if (delta != Up && delta != 2 * Up) captures += n;
        const u64 direct = to & chk_p;
        const u64 from_blocker = General ? to & forward(blockers, delta) : 0;  // targets whose pawn is a blocker
        for (u64 t = direct | from_blocker; t;) {
            const int sq = pop_lsb(t);
            checks<PAWN>(sq - delta, bit(sq), direct & bit(sq), flag);
        }
    }
    // Promotions: counted here by popcounts (four moves a target); a target goes to LeafCold only
    // when one of its four may give check. A promoted piece on `to` checks directly only from a
    // knight's check square or along a line to their king that is empty but for the pawn's own
    // square: `to` on a slider's check square (chk_q), or the pawn's square on one with `to` behind
    // it (forward(chk_q)); a superset, which LeafCold::promos decides exactly. A discovery needs the
    // pawn to be a blocker (General). At CPW 5 d5, 572 K of 1.66 M targets go on, and the
    // statistics take 4.1 % fewer instructions (NOTES.md session 42).
    PC_HD void promos(u64 to, int delta) {
        if (!to) return;
        const int n = 4 * popcnt(to);
        nodes += n;
        cold.s.promotions += n;
        if (delta != Up) captures += n;  // a push's target is empty; a capture's holds a piece of theirs
        u64 cand = to & (chk_n | chk_q | forward(chk_q, delta));
        if (General) cand |= to & forward(blockers, delta);
        for (u64 t = cand; t;) {
            const int sq = pop_lsb(t);
            cold.promos(sq - delta, sq);
        }
    }
    PC_HD void one(int from, int to, int flag) {
        ++nodes;
        cold.one(from, to, flag);
    }
    PC_HD void pins(u64) {}
};

// The leaf moves of b (Us to move) classified into `out`; Castling = false when Us has no castling
// right (as the plain count's LeafParentSink, src/host.h).
template <int Us, bool Castling = true>
PC_HD void classify(const Board& b, const CastleInfo& ci, StatCounts& out, const KingZone* z = nullptr) {
    LeafCold<Us> cold(b, ci, out, z);
    const u64 mine = occupied(b) & ~cold.them;
    const int king = lsb(kings_of(b) & mine);
    const u64 queens = diag_of(b) & orth_of(b) & mine;
    u64 nodes, captures;
    if (cold.blockers || more_than_one(queens)) {
        LeafSink<Us, true> sink(cold, king, 64);
        generate_legal<Us, LeafSink<Us, true>, Castling>(b, ci, sink);
        nodes = sink.nodes, captures = sink.captures;
    } else {
        LeafSink<Us, false> sink(cold, king, queens ? lsb(queens) : 64);
        generate_legal<Us, LeafSink<Us, false>, Castling>(b, ci, sink);
        nodes = sink.nodes, captures = sink.captures;
    }
    out.nodes += nodes;
    out.captures += captures;
}

// Perft 2 statistics of b (Us to move): each of Us's moves made as it is generated and the child's
// moves classified, with no move list.
//
// The leaf side's attacks near our king (its "their king"), KingZone, are made once here on b, for
// every child that needs them (the first check of a leaf parent does; at CPW 3 nearly every leaf
// parent has one): our move from -> to leaves them a superset of the child's, and LeafCold's tests
// need no more than that (a square proved free is free), unless it moves our king or leaves a
// square that one of their sliders near it sees (`stale`: the slider then sees further), or it is
// castling (the king moves) or en passant (it also empties the captured pawn's square), which go
// through one() and leave the child to make its own. The piece our move lands on, or takes, only
// blocks or removes attacks. (3.3 % fewer instructions at CPW 3, 5.2 % at CPW 6, 0.2 % at startpos;
// NOTES.md session 38.)
template <int Us, bool ThemCastle>
struct LeafParentStatsSink {
    const Board& b;
    const CastleInfo& ci;
    StatCounts& s;
    KingZone z;   // the leaf side's attacks near our king, on b
    u64 stale;    // a move from one of these squares leaves z short of the child's attacks
    LeafParentStatsSink(const Board& board, const CastleInfo& info, StatCounts& out) : b(board), ci(info), s(out) {
        const u64 occ = occupied(b);
        const u64 mine = Us == WHITE ? occ & ~b.black : b.black;
        const int ksq = lsb(kings_of(b) & mine);
        z = king_zone<Us ^ 1>(b, ksq, occ ^ mine);
        stale = z.seen_d | z.seen_o | bit(ksq);
    }
    PC_LEAF_COLD void visit(int from, int to, int flag) {
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        classify<Us ^ 1, ThemCastle>(c, ci, s, (stale >> from) & 1 ? nullptr : &z);
    }
    PC_LEAF_COLD void visit_one(int from, int to, int flag) {
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        classify<Us ^ 1, ThemCastle>(c, ci, s);
    }
    PC_HD void piece(int from, u64 to) {
        while (to) visit(from, pop_lsb(to), MF_NORMAL);
    }
    PC_HD void slider(int from, u64 to) { piece(from, to); }
    PC_HD void pawns(u64 to, int delta, int flag) {
        while (to) {
            const int t = pop_lsb(to);
            visit(t - delta, t, flag);
        }
    }
    PC_HD void promos(u64 to, int delta) {
        while (to) {
            const int t = pop_lsb(to);
            for (int f = MF_PROMO_N; f <= MF_PROMO_Q; ++f) visit(t - delta, t, f);
        }
    }
    PC_HD void one(int from, int to, int flag) { visit_one(from, to, flag); }
    PC_HD void pins(u64) {}
};

template <int Us>
void host_perft2_stats(const Board& b, const CastleInfo& ci, StatCounts& s) {
    if (b.state & (castle_bit(Us ^ 1, 0) | castle_bit(Us ^ 1, 1))) {
        LeafParentStatsSink<Us, true> sink(b, ci, s);
        generate_legal<Us>(b, ci, sink);
    } else {
        LeafParentStatsSink<Us, false> sink(b, ci, s);
        generate_legal<Us>(b, ci, sink);
    }
}

template <int Us>
void host_leaf_stats(const Board& b, const CastleInfo& ci, StatCounts& s) {
    classify<Us>(b, ci, s);
}

}  // namespace pc_host
