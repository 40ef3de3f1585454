// Host-side helpers shared by the CPU extension's translation units: the core-args tuple parsed
// into a Board + CastleInfo, UCI formatting, and the templated perft recursion.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chess.h"
#include "pc_init_host.h"
#include "pc_bfs.h"

namespace py = pybind11;

namespace pc_host {

// ----- limits and stop requests ---------------------------------------------------------------
// Checked before any work (perft_core/limits.py documents the same numbers). The recursion takes
// one stack frame of about 600 bytes a ply, and a count over MAX_DEPTH plies overflows the 64-bit
// counter for any position with two moves a ply, so no meaningful count is refused.
constexpr int MAX_DEPTH = 64;
constexpr int MAX_THREADS = 1024;

// A count stops early when g_stop is set (by the SIGINT/SIGTERM handler that _core.cpp installs
// around a long call from Python's main thread) or when its thread's deadline passes. Only the
// threads of that call watch g_stop (t_stop, inherited by its workers): a count on another thread
// never sees it. The recursion looks at both only at nodes STOP_PLIES or more plies above the
// leaves (about one node in ten thousand), the workers between work items. A stopped count
// returns a wrong sum: its caller sees stop_requested() (it stays true) and discards it.
inline std::atomic<int> g_stop{0};                   // the signal that asked to stop, 0: none
inline thread_local const std::atomic<int>* t_stop = nullptr;  // &g_stop in the call that installed the handlers
inline thread_local std::int64_t t_deadline_ns = 0;  // steady-clock deadline of this thread's count, 0: none
constexpr int STOP_PLIES = 4;

inline std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline bool stop_requested() {
    return (t_stop != nullptr && t_stop->load(std::memory_order_relaxed) != 0) ||
           (t_deadline_ns != 0 && steady_ns() >= t_deadline_ns);
}


struct Root {
    Board board;
    CastleInfo ci;
    int us;
    bool chess960;
};

inline int king_square(const Board& b, int color) {
    u64 k = kings_of(b) & (color == BLACK ? b.black : ~b.black);
    if (!k || more_than_one(k)) throw std::invalid_argument("each side needs exactly one king");
    return lsb(k);
}

// Castling geometry from the rook squares that carry rights (-1: no right). Kings and rooks are
// on their back rank (Position validates that); the destinations are the standard g/f and c/d.
inline CastleInfo make_castle_info(const Board& b, const int rooks[4], u8& rights) {
    CastleInfo ci;
    std::memset(&ci, 0, sizeof ci);
    std::memset(ci.keep, 15, sizeof ci.keep);
    rights = 0;
    for (int color = 0; color < 2; ++color) {
        for (int side = 0; side < 2; ++side) {
            int r = rooks[color * 2 + side];
            if (r < 0) continue;
            int k = king_square(b, color);
            int back = color == WHITE ? 0 : 56;
            if (r < 0 || r > 63 || piece_code(b, r) != ROOK || ((b.black >> r) & 1) != (u64)color ||
                (r & ~7) != back || (k & ~7) != back || (side == 0 ? r < k : r > k))
                throw std::invalid_argument("castling right without its king and rook");
            CastleSide& cs = ci.side[color][side];
            cs.rook = (u8)r;
            cs.king_to = (u8)(back + (side == 0 ? 6 : 2));
            cs.rook_to = (u8)(back + (side == 0 ? 5 : 3));
            cs.king_path = between_bb(k, cs.king_to) | bit(cs.king_to);
            cs.empty = (cs.king_path | between_bb(r, cs.rook_to) | bit(cs.rook_to)) & ~bit(k) & ~bit(r);
            // An enemy rook or queen beyond the rook attacks the king's path through the rook's
            // square once the rook has moved, unless the path contains that square itself.
            const u64 rank = 0xFFULL << back;
            const u64 beyond = side == 0 ? rank & ~((bit(r) << 1) - 1) : rank & (bit(r) - 1);
            cs.xray = (cs.king_path & bit(r)) ? 0 : beyond;
            cs.zone_knight = cs.zone_diag = cs.zone_orth = 0;
            for (u64 z = cs.king_path; z;) {
                const int q = pop_lsb(z);
                cs.zone_knight |= knight_att(q);
                cs.zone_diag |= bishop_empty(q);
                cs.zone_orth |= rook_empty(q);
            }
            int cb = castle_bit(color, side);
            rights |= (u8)cb;
            ci.keep[k] &= (u8)~(castle_bit(color, 0) | castle_bit(color, 1));
            ci.keep[r] &= (u8)~cb;
        }
    }
    return ci;
}

inline u64 to_u64(const py::handle& h) { return h.cast<u64>(); }

inline Root parse_args(const py::tuple& t) {
    if (t.size() != 8) throw std::invalid_argument("core args: expected an 8-tuple");
    Root r;
    r.board.pbq = to_u64(t[0]);
    r.board.nbk = to_u64(t[1]);
    r.board.rqk = to_u64(t[2]);
    r.board.black = to_u64(t[3]);
    r.us = t[4].cast<bool>() ? WHITE : BLACK;
    auto cr = t[5].cast<std::vector<int>>();
    if (cr.size() != 4) throw std::invalid_argument("core args: castle_rooks needs 4 entries");
    int ep = t[6].cast<int>();
    r.chess960 = t[7].cast<bool>();
    king_square(r.board, WHITE);
    king_square(r.board, BLACK);
    u8 rights;
    r.ci = make_castle_info(r.board, cr.data(), rights);
    int epf = 0;
    if (ep >= 0) {
        if (ep > 63 || (ep >> 3) != (r.us == WHITE ? 5 : 2))
            throw std::invalid_argument("en passant square on the wrong rank");
        epf = (ep & 7) + 1;
    }
    r.board.state = (u8)(rights | (epf << 4));
    return r;
}

inline std::string square_name(int s) { return std::string{(char)('a' + (s & 7)), (char)('1' + (s >> 3))}; }

inline std::string uci(const Root& r, Move m) {
    int from = mv_from(m), to = mv_to(m), flag = mv_flag(m);
    if (flag == MF_CASTLE && !r.chess960) {
        const CastleSide& cs = r.ci.side[r.us][to > from ? 0 : 1];
        to = cs.king_to;
    }
    std::string s = square_name(from) + square_name(to);
    if (flag >= MF_PROMO_N) s += "nbrq"[flag - MF_PROMO_N];
    return s;
}

// ----- move lists ------------------------------------------------------------------------------
// A node's legal moves, for the recursions that keep a list (the leaf parents count without one).
// The first PC_MAX_MOVES (256) sit on the stack: a position of a game has at most 218 moves. A
// position the parser accepts may hold more pieces than a game allows (26 queens: 263 moves), so a
// node with more regenerates its list on the heap (at most PC_MOVES_BOUND = 1,098 moves, the bound
// kernels/pc_movegen.h proves).
struct MoveList {
    Move local[PC_MAX_MOVES];
    std::vector<Move> heap;
    const Move* moves = local;
    int n = 0;

    template <int Us>
    void generate(const Board& b, const CastleInfo& ci) {
        CappedSink s(local, PC_MAX_MOVES);
        generate_legal<Us>(b, ci, s);
        n = s.n;
        if (n > PC_MAX_MOVES) {
            heap.resize(n);
            ListSink all(heap.data());
            generate_legal<Us>(b, ci, all);
            moves = heap.data();
        }
    }
    void generate(const Board& b, const CastleInfo& ci, int us) {
        if (us == WHITE) generate<WHITE>(b, ci);
        else generate<BLACK>(b, ci);
    }
    Move operator[](int i) const { return moves[i]; }
};

// Perft 2 without a move list: PerftSink (pc_bfs.h) with the moves of pieces and the pushes and
// captures of pawns (nearly all moves) made and bulk-counted inline; castling, en passant and
// promotions keep PerftSink's make_and_count. 7 % fewer instructions and 2-5 % less time than
// PerftSink alone, whose call per move GCC keeps out of line (NOTES.md, session 10).
// ThemCastle = false when the side to move in the children has no castling right (none comes back):
// their counts are compiled without castling code (NOTES.md, session 11).
template <int Us, bool ThemCastle>
struct LeafParentSink : PerftSink<Us> {
    using PerftSink<Us>::PerftSink;
    template <int Mover = 0>
    PC_HD void hot(int from, int to, int flag) {  // flag: a constant once inlined
        Board g = this->b;
        make_move<Us, Mover>(g, from, to, flag, this->ci);
        CountSink c;
        generate_legal<Us ^ 1, CountSink, ThemCastle>(g, this->ci, c);
        this->n += c.n;
    }
    PC_HD void piece(int from, u64 to) {
        while (to) hot(from, pop_lsb(to), MF_NORMAL);
    }
    PC_HD void slider(int from, u64 to) { piece(from, to); }
    PC_HD void pawns(u64 to, int delta, int flag) {
        while (to) {
            const int t = pop_lsb(to);
            hot<PAWN>(t - delta, t, flag);
        }
    }
};

// Perft 2 of b (Us to move), in nodes, through LeafParentSink.
template <int Us, bool ThemCastle>
PC_HD u64 perft2(const Board& b, const CastleInfo& ci) {
    LeafParentSink<Us, ThemCastle> s(b, ci);
    generate_legal<Us>(b, ci, s);
    return s.n;
}

template <int Us>
u64 perft_rec(const Board& b, const CastleInfo& ci, int depth) {
    if (depth == 1) return count_moves<Us>(b, ci);
    if (depth >= STOP_PLIES && stop_requested()) return 0;
    if (depth == 2) {  // stream the children into make + bulk count (measured ~3 % faster than a list)
        const bool them_castle = b.state & (castle_bit(Us ^ 1, 0) | castle_bit(Us ^ 1, 1));
        return them_castle ? perft2<Us, true>(b, ci) : perft2<Us, false>(b, ci);
    }
    MoveList list;
    list.generate<Us>(b, ci);
    const int n = list.n;
    u64 total = 0;
    for (int i = 0; i < n; ++i) {
        Board c = b;
        make_move<Us>(c, list[i], ci);
        total += perft_rec<Us ^ 1>(c, ci, depth - 1);
    }
    return total;
}

inline u64 perft_any(const Board& b, const CastleInfo& ci, int us, int depth) {
    if (depth == 0) return 1;
    return us == WHITE ? perft_rec<WHITE>(b, ci, depth) : perft_rec<BLACK>(b, ci, depth);
}

inline void play(const Board& b, const CastleInfo& ci, int us, Move m, Board& out) {
    out = b;
    if (us == WHITE) make_move<WHITE>(out, m, ci);
    else make_move<BLACK>(out, m, ci);
}

// Runs `worker` on `threads` threads (inline when one thread or fewer than two work items); each
// worker takes items from a shared counter until none is left, so when the system refuses a thread
// the ones already started share the work. Each thread inherits the caller's deadline and stop flag.
template <class F>
inline void run_workers(int threads, size_t items, F&& worker) {
    int nt = threads < 1 ? 1 : threads;
    if (nt == 1 || items < 2) {
        worker();
        return;
    }
    const std::int64_t deadline = t_deadline_ns;
    const std::atomic<int>* stop = t_stop;
    auto body = [&worker, deadline, stop]() {
        t_deadline_ns = deadline;
        t_stop = stop;
        worker();
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < nt; ++t) {
        try {
            pool.emplace_back(body);
        } catch (const std::system_error&) {  // out of threads: count with those running
            break;
        }
    }
    if (pool.empty()) body();
    for (auto& th : pool) th.join();
}

inline int count_legal(const Board& b, const CastleInfo& ci, int us) {
    return (int)(us == WHITE ? count_moves<WHITE>(b, ci) : count_moves<BLACK>(b, ci));
}

// Work items of a threaded count: never split below SPLIT_MIN_PLIES plies left; split until the
// largest estimated item is below 1 / (SPLIT_PER_THREAD * threads) of the estimated total (or
// SPLIT_MAX_ITEMS items exist).
constexpr int SPLIT_MIN_PLIES = 3;
constexpr double SPLIT_PER_THREAD = 32;
constexpr size_t SPLIT_MAX_ITEMS = 1 << 14;

// The subtrees a divide hands to its workers. One item per root move; with threads > 1 the item
// of largest estimated size is replaced by its children, again and again, until every item is a
// small share of the whole (above): a root move that dominates is split deeper than the others,
// never a fixed number of plies. Estimated size of an item with m legal moves and d plies left:
// m * B^(d-1), B = the root moves' mean number of replies. The items come back largest first, so
// the workers, taking them in turn from a shared counter, end together.
// `child(parent, move, board, root)` makes the item for `board`, reached by `move` from item
// `parent`, below root move number `root`; items need fields b (Board), us (side to move), root
// and depth (plies left below the item, set here).
template <class Item, class Child>
inline void split_divide(const Root& r, const Item& top, const std::vector<Move>& moves, int depth, int threads,
                         std::vector<Item>& items, Child child) {
    items.clear();
    for (size_t i = 0; i < moves.size(); ++i) {
        Board c;
        play(top.b, r.ci, top.us, moves[i], c);
        items.push_back(child(top, moves[i], c, (int)i));
        items.back().depth = depth - 1;
    }
    if (threads <= 1 || items.size() == 0) return;
    std::vector<double> est(items.size());
    double branch = 0;
    for (size_t i = 0; i < items.size(); ++i) branch += (est[i] = count_legal(items[i].b, r.ci, items[i].us));
    branch = branch / (double)items.size() + 1;
    auto size_of = [&](double m, int d) { return d <= 0 ? 1.0 : m * std::pow(branch, d - 1); };
    double total = 0;
    std::vector<std::pair<double, size_t>> heap;  // (estimated size, item index), largest on top
    for (size_t i = 0; i < items.size(); ++i) {
        est[i] = size_of(est[i], items[i].depth);
        total += est[i];
        heap.emplace_back(est[i], i);
    }
    std::make_heap(heap.begin(), heap.end());
    std::vector<bool> dead(items.size(), false);
    size_t live = items.size();
    while (!heap.empty() && live < SPLIT_MAX_ITEMS) {
        std::pop_heap(heap.begin(), heap.end());
        const auto [size, i] = heap.back();
        heap.pop_back();
        if (size < total / (SPLIT_PER_THREAD * threads)) break;
        if (items[i].depth - 1 < SPLIT_MIN_PLIES) continue;  // too small to split: stays one item
        const Item parent = items[i];
        MoveList list;
        list.generate(parent.b, r.ci, parent.us);
        const int n = list.n;
        dead[i] = true;
        total -= size;
        --live;
        for (int j = 0; j < n; ++j) {
            Board c;
            play(parent.b, r.ci, parent.us, list[j], c);
            items.push_back(child(parent, list[j], c, parent.root));
            items.back().depth = parent.depth - 1;
            const double e = size_of(count_legal(c, r.ci, parent.us ^ 1), parent.depth - 1);
            est.push_back(e);
            dead.push_back(false);
            total += e;
            ++live;
            heap.emplace_back(e, items.size() - 1);
            std::push_heap(heap.begin(), heap.end());
        }
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < items.size(); ++i)
        if (!dead[i]) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return est[a] > est[b]; });
    std::vector<Item> kept;
    kept.reserve(order.size());
    for (size_t i : order) kept.push_back(items[i]);
    items.swap(kept);
}

// Divide: the count below each root move. With threads > 1 the work is split into subtrees of
// balanced size (split_divide), taken in turn from a shared counter. When the count is stopped
// (stop_requested()), `done` (if given) says which root moves were counted in full.
inline std::vector<u64> divide_counts(const Root& r, const std::vector<Move>& moves, int depth, int threads,
                                      std::vector<bool>* done = nullptr) {
    std::vector<u64> out(moves.size(), 0);
    if (depth <= 0) return out;
    struct Item { Board b; int root; int us; int depth; };
    std::vector<Item> items;
    split_divide(r, Item{r.board, -1, r.us, depth}, moves, depth, threads, items,
                 [](const Item& p, Move, const Board& c, int root) { return Item{c, root, p.us ^ 1, 0}; });
    std::vector<std::atomic<u64>> sums(moves.size());
    std::vector<std::atomic<int>> left(moves.size());  // items of each root move not yet counted
    for (auto& s : sums) s = 0;
    for (auto& n : left) n = 0;
    for (const Item& it : items) ++left[it.root];
    std::atomic<size_t> next{0};
    run_workers(threads, items.size(), [&]() {
        for (size_t k; !stop_requested() && (k = next.fetch_add(1)) < items.size();) {
            const u64 n = perft_any(items[k].b, r.ci, items[k].us, items[k].depth);
            if (stop_requested()) break;  // n may be cut short: discard it
            sums[items[k].root] += n;
            --left[items[k].root];
        }
    });
    for (size_t i = 0; i < moves.size(); ++i) out[i] = sums[i];
    if (done) {
        done->assign(moves.size(), false);
        for (size_t i = 0; i < moves.size(); ++i) (*done)[i] = left[i] == 0;
    }
    return out;
}

inline std::vector<Move> legal_list(const Root& r) {
    MoveList list;
    list.generate(r.board, r.ci, r.us);
    return std::vector<Move>(list.moves, list.moves + list.n);
}

inline void check_depth(int depth) {
    if (depth < 0 || depth > MAX_DEPTH)
        throw std::invalid_argument("depth must be in 0.." + std::to_string(MAX_DEPTH) + ", got " + std::to_string(depth));
}

inline void check_threads(int threads) {
    if (threads < 1 || threads > MAX_THREADS)
        throw std::invalid_argument("threads must be in 1.." + std::to_string(MAX_THREADS) + ", got " +
                                    std::to_string(threads));
}

}  // namespace pc_host
