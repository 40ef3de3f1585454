// Perft statistics: the leaf moves classified by bitboard set operations (perft_core.Stats gives
// the definitions; the python-chess reference, oracle/stats.py, counts the same by other means).
//
// The GPU kernels' form (pc_kernels.cu: the statistics leaf, one thread per leaf parent), in the
// core's dialect (PC_HD, no standard library), also run on the CPU by the emulated device
// (perft_core/src/batch.cpp) and by a divide at depth 1 (move_stats). The CPU's own recursion uses
// a host form of the same rules with fewer instructions a leaf move (perft_core/src/stats_leaf.h);
// ci/stats_device_form.py compares the two counter by counter. The plain count's kernels include
// this header but call nothing of it: their code is unchanged.
//
// At the leaf parent (Us to move, the last ply's moves are Us's), once per position:
//   - the check squares of each piece type: the squares from which a piece of that type attacks
//     their king with the present occupancy. A plain move's destination square is on the line
//     from their king only if the move did not pass the king, and the square it leaves is never
//     between its destination and the king (it would then have given check before the move, along
//     the same line), so the occupancy before the move gives the same answer as after;
//   - the discovery blockers: our pieces that alone stand between one of our sliders and their
//     king, each with the squares on which it keeps blocking (the segment to the slider, and the
//     slider's square). A plain move of a blocker to any other square uncovers one check.
// Then each piece's target set is counted by popcounts: nodes, captures (targets on their pieces),
// direct checks (targets among the check squares) and discovered checks (a blocker's targets off
// its segment). Promotions look at each promoted piece with the pawn lifted (its square may be on
// the new piece's line to the king); castling and en passant (rare) are made and their checkers
// counted in full when a check is possible at all. A mate needs the child's legal moves: they are counted only for checking moves.
#pragma once
#include "chess.h"

// Out of line: the sink's rare paths (checks, promotions, castling, en passant) and the leaf below
// each of the leaf parent's moves. Inlined at every call site of the generator, they made the host
// code several times larger and the count 15-20 % slower (NOTES.md, session 14); on the GPU each
// inlined copy of the mate test would be another copy of the whole generator in the kernel.
#if PC_HOST_CODE
#define PC_STATS_COLD __attribute__((noinline))
#else
#define PC_STATS_COLD PC_HD_NOINLINE
#endif

// Counters of the leaf moves below a position (perft_core.Stats, same order as STATS_FIELDS in
// perft_core/stats.py). checks[k], mates[k]: the checking moves of kind k that do not mate / mate;
// kinds: 0 direct, 1 single discovered, 2 direct-discovered, 3 double-discovered.
struct StatCounts {
    u64 nodes, captures, en_passant, castles, promotions;
    u64 checks[4], mates[4];
};

enum { CHECK_DIRECT = 0, CHECK_SINGLE_DISCOVERED = 1, CHECK_DIRECT_DISCOVERED = 2, CHECK_DOUBLE_DISCOVERED = 3 };

PC_HD void stats_zero(StatCounts& s) {
    s.nodes = s.captures = s.en_passant = s.castles = s.promotions = 0;
    for (int k = 0; k < 4; ++k) s.checks[k] = s.mates[k] = 0;
}

PC_HD void stats_add(StatCounts& s, const StatCounts& o) {
    s.nodes += o.nodes;
    s.captures += o.captures;
    s.en_passant += o.en_passant;
    s.castles += o.castles;
    s.promotions += o.promotions;
    for (int k = 0; k < 4; ++k) {
        s.checks[k] += o.checks[k];
        s.mates[k] += o.mates[k];
    }
}

// The kind of a check given by `checkers` (our pieces attacking their king after the move, at least
// one) when the moved piece stands on `dest` (for castling: the rook's destination).
PC_HD int check_kind(u64 checkers, int dest) {
    const bool direct = (checkers >> dest) & 1;
    if (!more_than_one(checkers)) return direct ? CHECK_DIRECT : CHECK_SINGLE_DISCOVERED;
    return direct ? CHECK_DIRECT_DISCOVERED : CHECK_DOUBLE_DISCOVERED;
}

// Attacks of a piece of type `code` (KNIGHT..QUEEN) on `sq` with occupancy `occ`.
PC_HD u64 piece_attacks(int code, int sq, u64 occ) {
    switch (code) {
        case KNIGHT: return knight_att(sq);
        case BISHOP: return bishop_att(sq, occ);
        case ROOK: return rook_att(sq, occ);
        default: return bishop_att(sq, occ) | rook_att(sq, occ);
    }
}

// Has the side to move (Us, in check) no legal move? Out of line: it runs for checking moves only
// (one leaf move in 50 to 100). Most checks are not mate and the king steps out of most: a square
// next to the king that no enemy piece attacks with the king lifted (a slider's ray through the
// king's square counts) answers without the full generation. (Answering captures and blocks by
// unpinned pieces the same way too made no measurable difference: NOTES.md, session 14.)
template <int Us>
PC_STATS_COLD bool mated(const Board& c, const CastleInfo& ci) {
    const u64 occ = occupied(c);
    const u64 us = Us == WHITE ? occ & ~c.black : c.black;
    const int ksq = lsb(kings_of(c) & us);
    const u64 occ_nk = occ ^ bit(ksq);
    for (u64 t = king_att(ksq) & ~us; t;)
        if (!attacked_by(c, pop_lsb(t), Us ^ 1, occ_nk)) return false;
    return count_moves<Us>(c, ci) == 0;
}

// Classifies the legal moves of b (Us to move) into `s`: generate_legal<Us>(b, ci, sink).
template <int Us>
struct StatsSink {
    static constexpr int Them = Us ^ 1;
    static constexpr int Up = Us == WHITE ? 8 : -8;
    const Board& b;
    const CastleInfo& ci;
    StatCounts s;  // this position's counts (a member, not a reference: the counters stay in registers)
    u64 occ, them, blockers;
    u64 lines;     // squares between their king and our sliders that see it on an empty board
    int ksq;       // their king
    u64 chk[ROOK + 1];  // check squares by piece code, PAWN..ROOK (a queen's: BISHOP's and ROOK's)
    u64 keep[64];  // keep[sq] for sq in blockers: where that blocker still blocks

    PC_HD StatsSink(const Board& board, const CastleInfo& info) : b(board), ci(info) {
        stats_zero(s);
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
    }

    // One checking move (from, to, flag) of kind `kind`: a mate when their side has no legal reply.
    PC_STATS_COLD void checking(int from, int to, int flag, int kind) {
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        if (mated<Them>(c, ci)) ++s.mates[kind];
        else ++s.checks[kind];
    }

    // Plain moves (flag MF_NORMAL or MF_DOUBLE) from `from` to the squares `to`, with `direct`
    // the targets that give direct check.
    PC_STATS_COLD void plain(int from, u64 to, u64 direct, int flag) {
        const u64 disc = (blockers >> from) & 1 ? to & ~keep[from] : 0;
        for (u64 t = direct | disc; t;) {
            const int sq = pop_lsb(t);
            const u64 m = bit(sq);
            checking(from, sq, flag, (direct & m) ? ((disc & m) ? CHECK_DIRECT_DISCOVERED : CHECK_DIRECT)
                                                  : CHECK_SINGLE_DISCOVERED);
        }
    }

    // Knights and the king (generate_others and generate_legal call piece() for no other piece);
    // sliders: bishops and queens on the diagonals, rooks and queens on ranks and files.
    PC_HD void piece(int from, u64 to) {
        s.nodes += popcnt(to);
        s.captures += popcnt(to & them);
        const u64 direct = (knights_of(b) >> from) & 1 ? to & chk[KNIGHT] : 0;
        if (direct || ((blockers >> from) & 1)) plain(from, to, direct, MF_NORMAL);
    }
    PC_HD void slider(int from, u64 to) {
        s.nodes += popcnt(to);
        s.captures += popcnt(to & them);
        const u64 direct =
            to & (((diag_of(b) >> from) & 1 ? chk[BISHOP] : 0) | ((orth_of(b) >> from) & 1 ? chk[ROOK] : 0));
        if (direct || ((blockers >> from) & 1)) plain(from, to, direct, MF_NORMAL);
    }

    // Pawn targets; `delta` = to - from for each. A delta of Up or 2 * Up is a push, else a capture.
    PC_HD static u64 forward(u64 set, int delta) { return delta > 0 ? set << delta : set >> -delta; }
    PC_HD void pawns(u64 to, int delta, int flag) {
        const int n = popcnt(to);
        s.nodes += n;
        if (delta != Up && delta != 2 * Up) s.captures += n;
        const u64 direct = to & chk[PAWN];
        const u64 from_blocker = to & forward(blockers, delta);  // targets whose pawn is a blocker
        for (u64 t = direct | from_blocker; t;) {
            const int sq = pop_lsb(t);
            const int from = sq - delta;
            plain(from, bit(sq), direct & bit(sq), flag);
        }
    }

    // Promotions: four moves per target (knight, bishop, rook, queen).
    PC_HD void promos(u64 to, int delta) {
        for (u64 t = to; t;) {
            const int sq = pop_lsb(t);
            for (int code = KNIGHT; code <= QUEEN; ++code) promo(sq - delta, sq, code);
        }
    }
    // One promotion to piece `code`: its check squares with the pawn lifted.
    PC_STATS_COLD void promo(int from, int to, int code) {
        ++s.nodes;
        ++s.promotions;
        if ((them >> to) & 1) ++s.captures;
        const bool disc = ((blockers >> from) & 1) && !((keep[from] >> to) & 1);
        const bool direct = (piece_attacks(code, to, (occ ^ bit(from)) | bit(to)) >> ksq) & 1;
        if (direct || disc)
            checking(from, to, code + 2, direct ? (disc ? CHECK_DIRECT_DISCOVERED : CHECK_DIRECT) : CHECK_SINGLE_DISCOVERED);
    }

    // Castling and en passant: made, and the checkers of their king counted on the child, when a
    // check is possible at all: the moved piece (rook, capturing pawn) on a check square of its kind
    // (the rook: on a rank or file of the king), or a square left empty (the king's or the rook's,
    // the capturing or the captured pawn's) between their king and one of our sliders (a discovery).
    PC_STATS_COLD void one(int from, int to, int flag) {
        ++s.nodes;
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
            dest = ci.side[Us][to > from ? 0 : 1].rook_to;
            direct = (rook_empty(ksq) >> dest) & 1;
        }
        if (!direct && !(left & lines)) return;
        Board c = b;
        make_move<Us>(c, from, to, flag, ci);
        const u64 cocc = occupied(c);
        const u64 mine = Us == WHITE ? cocc & ~c.black : c.black;
        const u64 checkers = ((pawn_att(Them, ksq) & pawns_of(c)) | (knight_att(ksq) & knights_of(c)) |
                              (bishop_att(ksq, cocc) & diag_of(c)) | (rook_att(ksq, cocc) & orth_of(c))) & mine;
        if (!checkers) return;
        const int kind = check_kind(checkers, dest);
        if (mated<Them>(c, ci)) ++s.mates[kind];
        else ++s.checks[kind];
    }
    PC_HD void pins(u64) {}
};

// One legal move of b (Us to move) into `s`: the statistics of a divide at depth 1.
template <int Us>
PC_HD void move_stats(const Board& b, const CastleInfo& ci, Move m, StatCounts& s) {
    StatsSink<Us> sink(b, ci);
    const int from = mv_from(m), to = mv_to(m), flag = mv_flag(m);
    if (flag == MF_EP || flag == MF_CASTLE) sink.one(from, to, flag);
    else if (flag >= MF_PROMO_N) sink.promo(from, to, flag - 2);
    else if (piece_code(b, from) == PAWN) sink.pawns(bit(to), to - from, flag);
    else if (piece_code(b, from) == KNIGHT || piece_code(b, from) == KING) sink.piece(from, bit(to));
    else sink.slider(from, bit(to));
    stats_add(s, sink.s);
}

template <int Us>
PC_HD void leaf_stats(const Board& b, const CastleInfo& ci, StatCounts& s) {
    StatsSink<Us> sink(b, ci);
    generate_legal<Us>(b, ci, sink);
    stats_add(s, sink.s);
}

// ----- the BFS statistics leaf ------------------------------------------------------------------------
// Element work of the GPU's statistics leaf (pc_kernels.cu: stats_leaf_kernel and stats_sum_kernel,
// one thread per element) and of the emulated device's (perft_core/src/batch.cpp: batch_stats_leaf
// and batch_stats_sum, a loop). A statistics count expands BFS levels down to the leaf parents (one
// ply above the leaves) and classifies their moves: over the moves of the level above them, each
// thread makes its move and classifies the child's moves (bfs_stats_leaf); over a level of boards
// (a count of depth 1 below the BFS roots), each thread classifies its board's moves (leaf_stats).

enum { STATS_WORDS = 13 };  // the counters of StatCounts: perft_core.stats.STATS_FIELDS

// The counters of s as STATS_WORDS words, in perft_core.stats.STATS_FIELDS order.
PC_HD void stats_words(const StatCounts& s, u64* w) {
    w[0] = s.nodes;
    w[1] = s.captures;
    w[2] = s.en_passant;
    w[3] = s.castles;
    w[4] = s.promotions;
    for (int k = 0; k < 4; ++k) {
        w[5 + k] = s.checks[k];
        w[9 + k] = s.mates[k];
    }
}

// The child that move m (Us to move) makes from `parent` is a leaf parent: its legal moves, the leaf
// moves, are classified into s.
template <int Us>
PC_HD void bfs_stats_leaf(const Board& parent, Move m, const CastleInfo& ci, StatCounts& s) {
    Board c = parent;
    make_move<Us>(c, m, ci);
    leaf_stats<Us ^ 1>(c, ci, s);
}
