// Perft statistics on the CPU: a recursion of its own over the leaf classification of kernels/pc_stats.h.
// The plain count (perft_rec in src/host.h) is a separate instantiation in another translation
// unit: asking for nodes alone compiles and runs exactly as before.
#include <mutex>

#include "host.h"
#include "modules.h"
#include "pc_stats.h"
#include "stop.h"

using namespace pc_host;

namespace {

template <int Us>
void stats_rec(const Board& b, const CastleInfo& ci, int depth, StatCounts& s) {
    if (depth == 1) {
        leaf_stats<Us>(b, ci, s);
        return;
    }
    if (depth >= STOP_PLIES && stop_requested()) return;
    if (depth == 2) {  // stream the children into their leaf classification (kernels/pc_stats.h)
        perft2_stats<Us>(b, ci, s);
        return;
    }
    Move list[PC_MAX_MOVES];
    const int n = generate_moves<Us>(b, ci, list);
    for (int i = 0; i < n; ++i) {
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

py::tuple as_tuple(const StatCounts& s) {
    return py::make_tuple(s.nodes, s.captures, s.en_passant, s.castles, s.promotions, s.checks[0], s.checks[1],
                          s.checks[2], s.checks[3], s.mates[0], s.mates[1], s.mates[2], s.mates[3]);
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
        py::list out;
        for (size_t i = 0; i < moves.size(); ++i)
            if (done[i]) out.append(py::make_tuple(uci(r, moves[i]), as_tuple(parts[i])));
        stop.finish(out);
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads") = 1, py::arg("max_seconds") = 0.0,
       "[(uci, 13-tuple)] of statistics below each root move. max_seconds > 0: raise CountStopped(message, "
       "[(uci, 13-tuple)] of the moves counted in full) after that many seconds.");
}
