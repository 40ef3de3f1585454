// Perft statistics on the CPU: a recursion of its own over the leaf classification of src/stats_leaf.h
// (the host form of kernels/pc_stats.h's), without tables (stats_rec) and through the statistics
// tables of src/tt_stats.h (stats_tt_rec).
// The plain count (perft_rec in src/host.h, tt_rec in src/tt.h) is a separate instantiation in
// other translation units: asking for nodes alone compiles and runs exactly as before.
#include <mutex>

#include "host.h"
#include "modules.h"
#include "pc_stats.h"
#include "stats_leaf.h"
#include "stop.h"
#include "tt_stats.h"

using namespace pc_host;
using pc_tt::LevelStats;
using pc_tt::StatsTable;

namespace {

template <int Us>
void stats_rec(const Board& b, const CastleInfo& ci, int depth, StatCounts& s) {
    if (depth == 1) {
        host_leaf_stats<Us>(b, ci, s);
        return;
    }
    if (depth >= STOP_PLIES && stop_requested()) return;
    if (depth == 2) {  // stream the children into their leaf classification (src/stats_leaf.h)
        host_perft2_stats<Us>(b, ci, s);
        return;
    }
    MoveList list;
    list.generate<Us>(b, ci);
    for (int i = 0; i < list.n; ++i) {
        Board c = b;
        make_move<Us>(c, list[i], ci);
        stats_rec<Us ^ 1>(c, ci, depth - 1, s);
    }
}

// Statistics of the leaf moves `depth` plies below b (us to move); depth 0: the node itself.
StatCounts stats_any(const Board& b, const CastleInfo& ci, int us, int depth) {
    StatCounts s;
    stats_zero(s);
    if (depth == 0) s.nodes = 1;
    else if (us == WHITE) stats_rec<WHITE>(b, ci, depth, s);
    else stats_rec<BLACK>(b, ci, depth, s);
    return s;
}

// The statistics below each root move, on `threads` threads: the subtrees of split_divide (as the
// plain divide), each counted into its own StatCounts and summed per root move. `done`: which root
// moves were counted in full when the count was stopped.
std::vector<StatCounts> divide_stats(const Root& r, const std::vector<Move>& moves, int depth, int threads,
                                     std::vector<bool>& done) {
    std::vector<StatCounts> out(moves.size());
    for (auto& s : out) stats_zero(s);
    done.assign(moves.size(), true);
    if (depth <= 0) return out;
    if (depth == 1) {  // the root moves are the leaf moves
        for (size_t i = 0; i < moves.size(); ++i) {
            if (r.us == WHITE) move_stats<WHITE>(r.board, r.ci, moves[i], out[i]);
            else move_stats<BLACK>(r.board, r.ci, moves[i], out[i]);
        }
        return out;
    }
    struct Item { Board b; int root; int us; int depth; };
    std::vector<Item> items;
    split_divide(r, Item{r.board, -1, r.us, depth}, moves, depth, threads, items,
                 [](const Item& p, Move, const Board& c, int root) { return Item{c, root, p.us ^ 1, 0}; });
    std::vector<int> left(moves.size(), 0);  // items of each root move not yet counted
    for (const Item& it : items) ++left[it.root];
    std::mutex lock;
    std::atomic<size_t> next{0};
    run_workers(threads, items.size(), [&]() {
        for (size_t k; !stop_requested() && (k = next.fetch_add(1)) < items.size();) {
            const StatCounts s = stats_any(items[k].b, r.ci, items[k].us, items[k].depth);
            if (stop_requested()) break;  // s may be cut short: discard it
            std::lock_guard<std::mutex> hold(lock);
            stats_add(out[items[k].root], s);
            --left[items[k].root];
        }
    });
    for (size_t i = 0; i < moves.size(); ++i) done[i] = left[i] == 0;
    return out;
}

// ----- through the statistics tables -------------------------------------------------------------

// The 13 counters in 128 bits (STATS_FIELDS order), for the sums of a count through the tables: a
// table hit brings a whole subtree's counters, so these sums reach 2^64 at depths a count without
// tables never reaches (a king against a king at depth 25: 6.6e19 nodes in 0.1 s); in 64 bits they
// wrapped silently. As the node-count tables' u128 sums (src/tt.h); an entry holds 64-bit
// counters, so a subtree with a counter of 2^64 or more is not stored (LevelStats::unstorable).
typedef unsigned __int128 u128;
struct WideStats {
    u128 c[STATS_WORDS];
};

inline void wide_zero(WideStats& s) {
    for (u128& x : s.c) x = 0;
}
inline void wide_add(WideStats& s, const StatCounts& o) {
    u64 w[STATS_WORDS];
    stats_words(o, w);
    for (int i = 0; i < STATS_WORDS; ++i) s.c[i] += w[i];
}
inline void wide_add(WideStats& s, const WideStats& o) {
    for (int i = 0; i < STATS_WORDS; ++i) s.c[i] += o.c[i];
}
// The counters in 64 bits; false (out unchanged) when one does not fit.
inline bool narrow(const WideStats& s, StatCounts& out) {
    u64 w[STATS_WORDS];
    for (int i = 0; i < STATS_WORDS; ++i) {
        if (s.c[i] >> 64) return false;
        w[i] = (u64)s.c[i];
    }
    pc_tt::stats_from_words(w, out);
    return true;
}

// One thread's view of a statistics search through the tables: the table, its keys, the root's
// castling geometry, its own level statistics.
struct StatsSearch {
    StatsTable& tt;
    const ZobristKeys& z;
    const CastleInfo& ci;
    std::vector<LevelStats> st;
    StatsSearch(StatsTable& t, const CastleInfo& c) : tt(t), z(t.keys()), ci(c), st(t.max_depth() + 1) {}
};

// Statistics of b (key k, Us to move) at remaining depth >= 1 through the tables, added to `out`.
// As tt_rec (src/tt.h): probed and stored at every depth with a level; below the lowest level the
// recursion without keys (stats_rec); a stopped count stores nothing where it may hold a partial sum.
template <int Us>
void stats_tt_rec(const Board& b, const Key128& k, int depth, StatsSearch& s, WideStats& out) {
    if (depth == 1) {
        StatCounts leaf;
        stats_zero(leaf);
        host_leaf_stats<Us>(b, s.ci, leaf);
        wide_add(out, leaf);
        return;
    }
    if (depth >= STOP_PLIES && stop_requested()) return;
    const bool use = s.tt.kind(depth) != pc_tt::LEVEL_NONE;
    StatCounts hit;
    if (use && s.tt.probe(depth, k, hit, s.st[depth])) {
        wide_add(out, hit);
        return;
    }
    WideStats here;
    wide_zero(here);
    if (depth - 1 < s.tt.lowest_level()) {  // no table below: count without keys (far below 2^64)
        StatCounts below;
        stats_zero(below);
        stats_rec<Us>(b, s.ci, depth, below);
        wide_add(here, below);
    } else {
        // Children and their keys first, each child's bucket prefetched; then the counts (in
        // batches of PC_MAX_MOVES, one batch but where a node has more moves: MoveList).
        MoveList list;
        list.generate<Us>(b, s.ci);
        Board child[PC_MAX_MOVES];
        Key128 key[PC_MAX_MOVES];
        for (int first = 0; first < list.n; first += PC_MAX_MOVES) {
            const int n = std::min(list.n - first, PC_MAX_MOVES);
            for (int i = 0; i < n; ++i) {
                child[i] = b;
                make_move<Us>(child[i], list[first + i], s.ci);
                key[i] = update_hash<Us>(k, b, list[first + i], s.ci, s.z);
                s.tt.prefetch(depth - 1, key[i]);
            }
            for (int i = 0; i < n; ++i) stats_tt_rec<Us ^ 1>(child[i], key[i], depth - 1, s, here);
        }
    }
    if (use && (depth < STOP_PLIES || !stop_requested())) {
        StatCounts entry;
        if (narrow(here, entry)) s.tt.store(depth, k, entry, b, Us, s.ci, s.st[depth]);
        else ++s.st[depth].unstorable;
    }
    wide_add(out, here);
}

// The statistics below each root move through the tables, on `threads` threads sharing them (the
// subtrees of split_divide, as divide_tt_counts in src/tt.h). `done`: which root moves were
// counted in full when the count was stopped.
std::vector<WideStats> divide_stats_tt(const Root& r, const std::vector<Move>& moves, int depth, int threads,
                                       StatsTable& tt, std::vector<bool>& done) {
    std::vector<WideStats> out(moves.size());
    for (auto& s : out) wide_zero(s);
    done.assign(moves.size(), true);
    if (depth <= 0) return out;
    if (depth > tt.max_depth()) throw std::invalid_argument("depth exceeds the table's max_depth");
    if (tt.record() && threads > 1) throw std::invalid_argument("a recording table needs threads=1");
    if (depth == 1) {  // the root moves are the leaf moves
        for (size_t i = 0; i < moves.size(); ++i) {
            StatCounts leaf;
            stats_zero(leaf);
            if (r.us == WHITE) move_stats<WHITE>(r.board, r.ci, moves[i], leaf);
            else move_stats<BLACK>(r.board, r.ci, moves[i], leaf);
            wide_add(out[i], leaf);
        }
        return out;
    }
    struct Item { Board b; Key128 k; int root, us, depth; };
    const ZobristKeys& z = tt.keys();
    std::vector<Item> items;
    split_divide(r, Item{r.board, pc_tt::root_key(r.board, r.us, r.ci, z), -1, r.us, depth}, moves, depth, threads,
                 items, [&](const Item& p, Move m, const Board& c, int root) {
                     return Item{c, pc_tt::play_key(p.b, p.us, m, p.k, r.ci, z), root, p.us ^ 1, 0};
                 });
    std::vector<int> left(moves.size(), 0);
    for (const Item& it : items) ++left[it.root];
    std::mutex lock;
    std::atomic<size_t> next{0};
    run_workers(threads, items.size(), [&]() {
        StatsSearch s(tt, r.ci);
        for (size_t k; !stop_requested() && (k = next.fetch_add(1)) < items.size();) {
            const Item& it = items[k];
            WideStats c;
            wide_zero(c);
            if (it.depth == 0) c.c[0] = 1;  // nodes
            else if (it.us == WHITE) stats_tt_rec<WHITE>(it.b, it.k, it.depth, s, c);
            else stats_tt_rec<BLACK>(it.b, it.k, it.depth, s, c);
            if (stop_requested()) break;  // c may be cut short: discard it
            std::lock_guard<std::mutex> hold(lock);
            wide_add(out[it.root], c);
            --left[it.root];
        }
        tt.add_stats(s.st);
    });
    for (size_t i = 0; i < moves.size(); ++i) done[i] = left[i] == 0;
    return out;
}

py::tuple as_tuple(const StatCounts& s) {
    return py::make_tuple(s.nodes, s.captures, s.en_passant, s.castles, s.promotions, s.checks[0], s.checks[1],
                          s.checks[2], s.checks[3], s.mates[0], s.mates[1], s.mates[2], s.mates[3]);
}

// The 13 counters as Python ints, exact past 2^64.
py::tuple as_tuple(const WideStats& s) {
    py::tuple t((size_t)STATS_WORDS);
    for (int i = 0; i < STATS_WORDS; ++i) {
        py::object hi = py::int_((u64)(s.c[i] >> 64)), lo = py::int_((u64)s.c[i]);
        t[i] = hi.attr("__lshift__")(64).attr("__or__")(lo);
    }
    return t;
}

py::tuple words_tuple(const u64* w) {
    StatCounts s;
    pc_tt::stats_from_words(w, s);
    return as_tuple(s);
}

// [(uci, 13-tuple)] of the root moves counted in full.
template <class Counts>
py::list done_list(const Root& r, const std::vector<Move>& moves, const std::vector<Counts>& parts,
                   const std::vector<bool>& done) {
    py::list out;
    for (size_t i = 0; i < moves.size(); ++i)
        if (done[i]) out.append(py::make_tuple(uci(r, moves[i]), as_tuple(parts[i])));
    return out;
}

std::vector<WideStats> tt_parts(const Root& r, const std::vector<Move>& moves, int depth, int threads, StatsTable& t,
                                std::vector<bool>& done) {
    py::gil_scoped_release nogil;
    return divide_stats_tt(r, moves, depth, threads, t, done);
}

}  // namespace

void register_stats(py::module_& m) {
    m.def("perft_stats", [](const py::tuple& args, int depth, int threads, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        if (depth == 0) return as_tuple(stats_any(r.board, r.ci, r.us, 0));
        const std::vector<Move> moves = legal_list(r);
        StopScope stop(depth, max_seconds);
        StatCounts total;
        stats_zero(total);
        {
            py::gil_scoped_release nogil;
            if (threads <= 1 || depth < 3) {
                total = stats_any(r.board, r.ci, r.us, depth);
            } else {
                std::vector<bool> done;
                for (const StatCounts& s : divide_stats(r, moves, depth, threads, done)) stats_add(total, s);
            }
        }
        stop.finish();
        return as_tuple(total);
    }, py::arg("args"), py::arg("depth"), py::arg("threads") = 1, py::arg("max_seconds") = 0.0,
       "Perft statistics of B at depth: a 13-tuple of ints in perft_core.stats.STATS_FIELDS order. "
       "max_seconds > 0: raise CountStopped after that many seconds; Ctrl-C raises KeyboardInterrupt.");

    m.def("divide_stats", [](const py::tuple& args, int depth, int threads, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        const std::vector<Move> moves = depth > 0 ? legal_list(r) : std::vector<Move>{};
        StopScope stop(depth, max_seconds);
        std::vector<StatCounts> parts;
        std::vector<bool> done;
        {
            py::gil_scoped_release nogil;
            parts = divide_stats(r, moves, depth, threads, done);
        }
        py::list out = done_list(r, moves, parts, done);
        stop.finish(out);
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads") = 1, py::arg("max_seconds") = 0.0,
       "[(uci, 13-tuple)] of statistics below each root move. max_seconds > 0: raise CountStopped(message, "
       "[(uci, 13-tuple)] of the moves counted in full) after that many seconds.");

    pc_tt::bind_tables<StatsTable>(m, "StatsTTable",
                                   "Statistics transposition tables, one per remaining depth (see src/tt_stats.h).")
        .def("entries", [](const StatsTable& t) {
            py::list out;
            t.for_each([&](int d, int kind, u64 bucket, const Key128& k, bool known, const u64* w, const pc_tt::Rec& rec) {
                out.append(py::make_tuple(d, pc_tt::kind_name(kind), bucket, k.lo, k.hi, known, words_tuple(w),
                                          rec.valid ? py::object(pc_tt::rec_args(rec)) : py::object(py::none())));
            });
            return out;
        }, "Every stored entry: (depth, kind, bucket, key_lo, key_hi, key_lo_is_full, 13-tuple, core args or None); "
           "key_hi is the key the entry answers for (check ^ mix of its counters).")
        .def("lookup", [](StatsTable& t, u64 lo, u64 hi, int depth) -> py::object {
            if (t.kind(depth) == pc_tt::LEVEL_NONE) return py::none();
            LevelStats scratch;
            StatCounts c;
            if (!t.probe(depth, Key128{lo, hi}, c, scratch)) return py::none();
            return as_tuple(c);
        }, py::arg("key_lo"), py::arg("key_hi"), py::arg("depth"), "The stored 13-tuple of a key at a depth, or None.")
        .def("poison", &StatsTable::poison, py::arg("counter"),
             "Tests only: counter `counter` (STATS_FIELDS index) one more in every entry, its check unchanged.");

    // Both stop as perft_stats and divide_stats do (stop.h); a count cut short stores nothing where it
    // may hold a partial sum, so the tables stay exact.
    m.def("perft_stats_tt", [](const py::tuple& args, int depth, int threads, StatsTable& table, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        if (depth == 0) return as_tuple(stats_any(r.board, r.ci, r.us, 0));
        const std::vector<Move> moves = legal_list(r);
        StopScope stop(depth, max_seconds);
        std::vector<bool> done;
        WideStats total;
        wide_zero(total);
        for (const WideStats& s : tt_parts(r, moves, depth, threads, table, done)) wide_add(total, s);
        stop.finish();
        return as_tuple(total);
    }, py::arg("args"), py::arg("depth"), py::arg("threads"), py::arg("table"), py::arg("max_seconds") = 0.0,
       "Perft statistics of B at depth through the statistics tables: a 13-tuple (STATS_FIELDS order). "
       "max_seconds > 0: raise CountStopped after that many seconds.");

    m.def("divide_stats_tt", [](const py::tuple& args, int depth, int threads, StatsTable& table, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        const std::vector<Move> moves = depth > 0 ? legal_list(r) : std::vector<Move>{};
        StopScope stop(depth, max_seconds);
        std::vector<bool> done;
        const std::vector<WideStats> parts = tt_parts(r, moves, depth, threads, table, done);
        py::list out = done_list(r, moves, parts, done);
        stop.finish(out);
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads"), py::arg("table"), py::arg("max_seconds") = 0.0,
       "[(uci, 13-tuple)] below each root move through the statistics tables. max_seconds > 0: raise "
       "CountStopped(message, [(uci, 13-tuple)] of the moves counted in full) after that many seconds.");
}
